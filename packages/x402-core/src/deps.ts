/**
 * `bs58` ships a CommonJS build with ESM-only typings ("type": "module" with `.d.ts`), which a CommonJS
 * package compiled with `module: Node16` cannot `import` (TS1479): its types are imported in ESM
 * resolution mode and the CommonJS build is loaded with `require`.
 */
import type * as Bs58 from 'bs58' with { 'resolution-mode': 'import' };

// eslint-disable-next-line @typescript-eslint/no-require-imports -- see the module comment
const bs58Module = require('bs58') as typeof Bs58;

/** Base58 (Bitcoin alphabet) from `bs58`. */
export const bs58 = bs58Module.default;
