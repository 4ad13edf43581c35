import type { AccountInfo, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, unpackMint } from './deps';

/** What a `transferChecked` of a mint out of a wallet's associated token account names. */
export interface TokenSource {
  /** The token program of the mint: Token-2022 when the mint account is owned by it, else SPL Token. */
  programId: PublicKey;
  /** The mint's decimals. */
  decimals: number;
  /** The wallet's associated token account for the mint, under that program. */
  source: PublicKey;
}

/**
 * The token program and decimals of `mint`, read from its account, and `owner`'s associated token
 * account for it: what the paying client pays from and the refund wallet refunds from. A mint whose
 * account is missing (`null`) counts as an SPL Token mint of 6 decimals (USDC's).
 * @throws Error when `mintAccount` is not a mint account of its program
 */
export function tokenSourceOf(
  mint: PublicKey,
  mintAccount: AccountInfo<Buffer> | null,
  owner: PublicKey,
): TokenSource {
  const programId = mintAccount?.owner.equals(TOKEN_2022_PROGRAM_ID)
    ? TOKEN_2022_PROGRAM_ID
    : TOKEN_PROGRAM_ID;
  const decimals = mintAccount ? unpackMint(mint, mintAccount, programId).decimals : 6;
  return { programId, decimals, source: getAssociatedTokenAddressSync(mint, owner, true, programId) };
}
