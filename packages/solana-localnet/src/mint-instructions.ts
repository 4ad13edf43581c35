import { SystemProgram, type PublicKey, type TransactionInstruction } from '@solana/web3.js';
import { MINT_SIZE, TOKEN_PROGRAM_ID, createInitializeMint2Instruction } from './deps';

/**
 * The two instructions that create an SPL Token mint: a new account of `MINT_SIZE` bytes owned
 * by the token program, funded with `rentLamports` by `payer`, then `InitializeMint2` with `decimals`,
 * `mintAuthority` and no freeze authority. The transaction must be signed by `payer` and by the mint's
 * keypair. The ledger makes its test USDC this way and `createTestMint` a mint of its own.
 */
export function createMintInstructions(args: {
  payer: PublicKey;
  mint: PublicKey;
  decimals: number;
  mintAuthority: PublicKey;
  /** Rent-exempt minimum of `MINT_SIZE` bytes, in lamports. */
  rentLamports: number;
}): TransactionInstruction[] {
  return [
    SystemProgram.createAccount({
      fromPubkey: args.payer,
      newAccountPubkey: args.mint,
      lamports: args.rentLamports,
      space: MINT_SIZE,
      programId: TOKEN_PROGRAM_ID,
    }),
    createInitializeMint2Instruction(args.mint, args.decimals, args.mintAuthority, null),
  ];
}
