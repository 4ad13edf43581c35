// The publishable build (README, "Publishing"): CommonJS with bundled declarations, which
// scripts/esm-wrappers.mjs re-exports as ESM. The internal @repo/* packages it uses are bundled from
// their TypeScript sources (through the @repo/source condition), so the packed manifest depends on
// registry packages only.
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts' },
  format: ['cjs'],
  platform: 'node',
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
  dts: { resolve: [/^@repo\//] },
  noExternal: [/^@repo\//],
  sourcemap: true,
  clean: true,
  esbuildOptions(options) {
    options.conditions = ['@repo/source'];
  },
});
