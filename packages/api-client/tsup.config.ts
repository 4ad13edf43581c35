// The publishable build (README, "Publishing"): ESM and CommonJS with bundled declarations. The
// internal @repo/* packages it uses are bundled from their TypeScript sources (through the
// @repo/source condition), so the packed manifest depends on registry packages only.
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' },
  format: ['esm', 'cjs'],
  platform: 'node',
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
  dts: { resolve: [/^@repo\//] },
  noExternal: [/^@repo\//],
  // __dirname in the ESM build of ./testing; `require` for the CommonJS-only code bundled in ESM.
  shims: true,
  sourcemap: true,
  clean: true,
  // The bundled CommonJS-only requires (bs58, @solana/spl-token) need a real `require` in ESM.
  banner: ({ format }) =>
    format === 'esm'
      ? {
          js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
        }
      : {},
  esbuildOptions(options) {
    options.conditions = ['@repo/source'];
  },
});
