import { bs58 } from './deps';

/** Program id of the SPL Token program. */
export const TOKEN_PROGRAM_ADDRESS = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
/** Program id of the SPL Token-2022 program. */
export const TOKEN_2022_PROGRAM_ADDRESS = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';

/**
 * Whether `programId` (base58) is the SPL Token or the Token-2022 program: the programs whose
 * `transferChecked` instructions move the tokens x402 is paid in.
 */
export function isTokenProgram(programId: string | undefined): programId is string {
  return programId === TOKEN_PROGRAM_ADDRESS || programId === TOKEN_2022_PROGRAM_ADDRESS;
}

/** Instruction discriminator of `TransferChecked` in both token programs. */
export const TRANSFER_CHECKED = 12;

/** A decoded SPL Token / Token-2022 `transferChecked` instruction. */
export interface TransferChecked {
  /** The token program that executed it (base58). */
  programId: string;
  /** Source token account (base58). */
  source: string;
  /** Mint (base58). */
  mint: string;
  /** Destination token account (base58). */
  destination: string;
  /** The transfer authority: the owner or delegate of the source (base58). */
  authority: string;
  /** Amount in atomic units. */
  amountAtomic: bigint;
  /** Decimals asserted by the instruction. */
  decimals: number;
  /** Where it was found: top level or as an inner (CPI) instruction. */
  location: 'top-level' | 'inner';
  /**
   * The instruction's accounts after the four it needs (base58): a multisig authority's signers, or
   * Solana Pay references (read-only, non-signer).
   */
  extraAccounts: string[];
}

/** A compiled instruction with its account indexes and raw data, independent of RPC encodings. */
export interface RawInstruction {
  /** Index of the program in the resolved account keys. */
  programIdIndex: number;
  /** Indexes of the instruction's accounts in the resolved account keys. */
  accountIndexes: readonly number[];
  /** Instruction data bytes. */
  data: Uint8Array;
}

/**
 * Decodes one compiled instruction as a token `transferChecked`: program SPL Token or Token-2022,
 * data = `[12, u64 little-endian amount, u8 decimals]`, accounts = `[source, mint, destination,
 * authority, ...multisig signers]`.
 *
 * @param instruction the compiled instruction
 * @param accountKeys the transaction's resolved account keys (static keys, then loaded writable, then
 *   loaded readonly addresses)
 * @param location where the instruction was found
 * @returns the decoded transfer, or `undefined` when the instruction is anything else
 */
export function decodeTransferChecked(
  instruction: RawInstruction,
  accountKeys: readonly string[],
  location: TransferChecked['location'],
): TransferChecked | undefined {
  const programId = accountKeys[instruction.programIdIndex];
  if (!isTokenProgram(programId)) return undefined;
  const { data } = instruction;
  if (data.length !== 10 || data[0] !== TRANSFER_CHECKED) return undefined;
  const [sourceIndex, mintIndex, destinationIndex, authorityIndex] = instruction.accountIndexes;
  if (
    sourceIndex === undefined ||
    mintIndex === undefined ||
    destinationIndex === undefined ||
    authorityIndex === undefined
  ) {
    return undefined;
  }
  const source = accountKeys[sourceIndex];
  const mint = accountKeys[mintIndex];
  const destination = accountKeys[destinationIndex];
  const authority = accountKeys[authorityIndex];
  if (!source || !mint || !destination || !authority) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return {
    programId,
    source,
    mint,
    destination,
    authority,
    amountAtomic: view.getBigUint64(1, true),
    decimals: view.getUint8(9),
    location,
    extraAccounts: instruction.accountIndexes
      .slice(4)
      .map((i) => accountKeys[i])
      .filter((key): key is string => key !== undefined),
  };
}

/**
 * Decodes base58 instruction data as a JSON `getTransaction` writes it (top-level and inner instructions).
 *
 * @throws Error when the string is not base58
 */
export function decodeBase58Data(data: string): Uint8Array {
  return bs58.decode(data);
}
