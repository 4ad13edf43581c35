import { PublicKey, TransactionInstruction } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ADDRESS, TOKEN_PROGRAM_ADDRESS } from '../transfers';

/** The SPL Token program. */
export const TOKEN_PROGRAM_ID = new PublicKey(TOKEN_PROGRAM_ADDRESS);
/** The SPL Token-2022 program. */
export const TOKEN_2022_PROGRAM_ID = new PublicKey(TOKEN_2022_PROGRAM_ADDRESS);
/** The Associated Token Account program. */
export const ASSOCIATED_TOKEN_PROGRAM_ID = new PublicKey('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');

/**
 * The associated token account of `owner` for `mint` (same derivation as spl-token's
 * `getAssociatedTokenAddressSync`: seeds owner, token program, mint).
 */
export function associatedTokenAddress(mint: PublicKey, owner: PublicKey, programId: PublicKey = TOKEN_PROGRAM_ID): PublicKey {
  const [address] = PublicKey.findProgramAddressSync([owner.toBuffer(), programId.toBuffer(), mint.toBuffer()], ASSOCIATED_TOKEN_PROGRAM_ID);
  return address;
}

/**
 * A token `transferChecked` instruction: data `[12, u64 LE amount, u8 decimals]`, accounts
 * `[source (w), mint, destination (w), owner (signer)]`.
 *
 * @param amountAtomic amount in atomic units
 */
export function transferCheckedInstruction(
  source: PublicKey,
  mint: PublicKey,
  destination: PublicKey,
  owner: PublicKey,
  amountAtomic: bigint,
  decimals: number,
  programId: PublicKey = TOKEN_PROGRAM_ID,
): TransactionInstruction {
  const data = Buffer.alloc(10);
  data.writeUInt8(12, 0);
  data.writeBigUInt64LE(amountAtomic, 1);
  data.writeUInt8(decimals, 9);
  return new TransactionInstruction({
    programId,
    keys: [
      { pubkey: source, isSigner: false, isWritable: true },
      { pubkey: mint, isSigner: false, isWritable: false },
      { pubkey: destination, isSigner: false, isWritable: true },
      { pubkey: owner, isSigner: true, isWritable: false },
    ],
    data,
  });
}

/** Token-account layout: mint (32) owner (32) amount (u64 LE at 64)… */
export function tokenAccountAmount(data: Uint8Array): bigint {
  if (data.length < 72) throw new Error('not a token account');
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readBigUInt64LE(64);
}

/** Mint layout: decimals (u8) at offset 44; `undefined` when the data is too short. */
export function mintDecimals(data: Uint8Array): number | undefined {
  return data.length >= 45 ? data[44] : undefined;
}
