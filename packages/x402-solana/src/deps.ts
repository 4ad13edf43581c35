/**
 * `bs58` and `@solana/spl-token` ship CommonJS builds with ESM-only typings ("type": "module" with
 * `.d.ts`), which a CommonJS package compiled with `module: Node16` cannot `import` (TS1479). Their
 * types are imported in ESM resolution mode and the CommonJS builds are loaded with `require`.
 */
import type * as Bs58 from 'bs58' with { 'resolution-mode': 'import' };
import type * as SplToken from '@solana/spl-token' with { 'resolution-mode': 'import' };

// eslint-disable-next-line @typescript-eslint/no-require-imports -- see the module comment
const bs58Module = require('bs58') as typeof Bs58;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- see the module comment
const splToken = require('@solana/spl-token') as typeof SplToken;

/** Base58 (Bitcoin alphabet) from `bs58`. */
export const bs58 = bs58Module.default;

/** The SPL Token helpers the paying client uses. */
export const {
  TOKEN_PROGRAM_ID,
  TOKEN_2022_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  unpackAccount,
  unpackMint,
} = splToken;
