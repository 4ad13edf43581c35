/**
 * `bs58` and `@solana/spl-token` ship CommonJS builds but ESM-only typings ("type": "module" with
 * `.d.ts`), which a CommonJS package compiled with `module: Node16` cannot `import`. Their types are
 * imported in ESM resolution mode and the CommonJS builds are loaded with `require`.
 */
import type * as Bs58 from 'bs58' with { 'resolution-mode': 'import' };
import type * as SplToken from '@solana/spl-token' with { 'resolution-mode': 'import' };

// eslint-disable-next-line @typescript-eslint/no-require-imports -- see the module comment
const bs58Module = require('bs58') as typeof Bs58;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- see the module comment
const splToken = require('@solana/spl-token') as typeof SplToken;

/** Base58 (Bitcoin alphabet) encode/decode from `bs58`. */
export const bs58 = bs58Module.default;

/** The SPL Token helpers this package uses (instruction builders, ATA derivation, constants). */
export const {
  MINT_SIZE,
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createInitializeMint2Instruction,
  createMintToInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} = splToken;
