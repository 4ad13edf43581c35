// After tsup (README, "Publishing"): the ESM entry points re-export the CommonJS build, so that one
// copy of the package runs whichever way it is loaded (receipts and `instanceof` hold across both),
// and the payment engine stays lazy (a static ESM import of the Solana libraries could not be).
// Node maps the CommonJS build's named exports from esbuild's export annotation.
import { copyFileSync, writeFileSync } from 'node:fs';

for (const entry of ['index', 'testing/index']) {
  const base = new URL(`../dist/${entry}`, import.meta.url).pathname;
  const file = entry.split('/').pop();
  writeFileSync(`${base}.mjs`, `export * from './${file}.js';\n`);
  copyFileSync(`${base}.d.ts`, `${base}.d.mts`);
}
