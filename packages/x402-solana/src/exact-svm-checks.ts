import { bs58 } from './deps';
import { TOKEN_2022_PROGRAM_ADDRESS, TOKEN_PROGRAM_ADDRESS, TRANSFER_CHECKED } from './transfers';
import type { WireTransaction } from './wire-transaction';

/**
 * The official exact SVM scheme's verification rules, checked on a wire transaction read once
 * ({@link WireTransaction}) instead of decoding it again with `@solana/kit`'s codecs (docs/payments.md,
 * "Paying with an official x402 client": the checks). The reason codes are the official
 * facilitator's (`@x402/svm`), so that a payer's client reads them as it would from it.
 */

/** The compute budget program; its `SetComputeUnitLimit` (2) and `SetComputeUnitPrice` (3). */
const COMPUTE_BUDGET = bytesOf('ComputeBudget111111111111111111111111111111');
const SET_COMPUTE_UNIT_LIMIT = 2;
const SET_COMPUTE_UNIT_PRICE = 3;
const TOKEN = bytesOf(TOKEN_PROGRAM_ADDRESS);
const TOKEN_2022 = bytesOf(TOKEN_2022_PROGRAM_ADDRESS);
/** Most Memo or Lighthouse instructions after the transfer (`@x402/svm` 2.27's facilitator: 4). */
const MAX_OPTIONAL_INSTRUCTIONS = 4;

/** SPL Memo, and Lighthouse (the assertions Phantom and Solflare add): the optional instructions. */
const MEMO = bytesOf('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const LIGHTHOUSE = bytesOf('L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95');

function bytesOf(address: string): Buffer {
  return Buffer.from(bs58.decode(address));
}

/** The official facilitator's reason codes of the checks below. */
const REASON = {
  excessiveSigners: 'invalid_exact_svm_payload_excessive_signers',
  feePayerMismatch: 'invalid_exact_svm_fee_payer_mismatch',
  lookupTables: 'invalid_exact_svm_smart_wallet_alt_resolution_not_available',
  couldNotBeDecoded: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
  instructionsLength: 'invalid_exact_svm_payload_transaction_instructions_length',
  computeLimit: 'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
  computeLimitTooHigh:
    'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high',
  computePrice: 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
  computePriceTooHigh:
    'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
  noTransfer: 'invalid_exact_svm_payload_no_transfer_instruction',
  feePayerTransferring: 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
  mintMismatch: 'invalid_exact_svm_payload_mint_mismatch',
  recipientMismatch: 'invalid_exact_svm_payload_recipient_mismatch',
  amountMismatch: 'invalid_exact_svm_payload_amount_mismatch',
  unknownOptional: [
    'invalid_exact_svm_payload_unknown_fourth_instruction',
    'invalid_exact_svm_payload_unknown_fifth_instruction',
    'invalid_exact_svm_payload_unknown_sixth_instruction',
  ],
  memoCount: 'invalid_exact_svm_payload_memo_count',
  memoMismatch: 'invalid_exact_svm_payload_memo_mismatch',
} as const;

/** What an official-scheme transaction must pay, and the limits it must keep. */
export interface ExactSvmExpectation {
  /** The fee payer's 32-byte address: the first signer, and in no instruction's accounts. */
  feePayer: Uint8Array;
  /** The mint (`asset`), 32 bytes. */
  mint: Uint8Array;
  /**
   * The associated token account of `payTo` for `mint` under each token program (32 bytes each): the
   * one destination the transfer may have, per the program it runs under.
   */
  destinations: { token: Uint8Array; token2022: Uint8Array };
  /** The exact amount, in atomic units of the mint. */
  amount: bigint;
  /** `extra.memo`: when set, exactly one Memo instruction whose data is its UTF-8 bytes. */
  memo?: string;
  /** Most compute units the transaction may ask for (`SetComputeUnitLimit`). */
  maxComputeUnits: number;
  /** Highest compute unit price, in micro-lamports per compute unit (`SetComputeUnitPrice`). */
  maxPriorityFeeMicroLamports: bigint;
  /** Most signatures the transaction may require, the fee payer's included. */
  maxRequiredSignatures: number;
}

/**
 * A transaction that passed {@link checkExactSvmTransaction} (`payer`: the transfer's authority,
 * base58), or its refusal with the official facilitator's reason (`payer` when the transfer was read).
 */
export type ExactSvmCheck = { ok: true; payer: string } | { ok: false; reason: string; payer?: string };

/**
 * Checks an official exact SVM scheme transaction against the scheme's verification rules (the
 * specification's "Facilitator Verification Rules", and the official facilitator's own limits):
 * - at most `maxRequiredSignatures` signers, the fee payer first (the other signers' signatures are
 *   checked before, by `ExactSvmSettler.signatureOf`); with address table lookups, every check below
 *   reads the accounts they load (`loaded`, from `resolveLookupTables`) as the runtime does, after the
 *   static ones, and every program id must be static (the runtime's rule);
 * - 3 to 7 instructions (the installed official facilitator's bound; the specification says 6, and
 *   wallets such as Phantom and Solflare add Lighthouse assertions beside the client's memo, so a
 *   payment the facilitator accepted is still accepted): `SetComputeUnitLimit` (at most `maxComputeUnits`), `SetComputeUnitPrice`
 *   (at most `maxPriorityFeeMicroLamports`), a `transferChecked` of SPL Token or Token-2022, then
 *   only Memo or Lighthouse instructions, and with `memo` exactly one Memo carrying it;
 * - the transfer: its authority not the fee payer, its mint `mint`, its destination the associated
 *   token account of `payTo` under that token program, its amount exactly `amount`;
 * - the fee payer in no instruction's accounts (so neither the transfer's source nor its authority),
 *   and not among the loaded accounts at all.
 * What is left to the node is the transaction's effect: that its accounts exist and it succeeds
 * (the preflight simulation of its send).
 * @param wire the transaction, read by `parseWireTransaction`
 * @param expected what it must pay and the limits
 * @param loaded the accounts its address table lookups load, writable then read-only (32 bytes
 *   each, from `resolveLookupTables`); required when it has lookups, ignored otherwise
 * @returns the payer, or the reason of the first rule it breaks (with lookups but no `loaded`:
 *   `invalid_exact_svm_smart_wallet_alt_resolution_not_available`)
 */
export function checkExactSvmTransaction(
  wire: WireTransaction,
  expected: ExactSvmExpectation,
  loaded?: readonly Uint8Array[],
): ExactSvmCheck {
  if (wire.signatures.length > expected.maxRequiredSignatures)
    return { ok: false, reason: REASON.excessiveSigners };
  const feePayer = Buffer.from(expected.feePayer);
  const first = wire.staticAccounts[0];
  if (!first || !feePayer.equals(first)) return { ok: false, reason: REASON.feePayerMismatch };
  // Without lookups the static accounts are all there is: no copy of them.
  let accounts = wire.staticAccounts;
  if (wire.addressTableLookups.length > 0) {
    if (!loaded) return { ok: false, reason: REASON.lookupTables };
    // A loaded account is not a signer: the fee payer among them is there for no good reason.
    if (loaded.some((key) => feePayer.equals(key))) return { ok: false, reason: REASON.feePayerTransferring };
    accounts = [...accounts, ...loaded];
  }
  // Every index must name an account, and every program a static one (the runtime's rule): any
  // other is malformed.
  const instructions = [];
  for (const instruction of wire.instructions) {
    const program = wire.staticAccounts[instruction.programIdIndex];
    const keys: Uint8Array[] = [];
    for (const index of instruction.accountIndexes) {
      const key = accounts[index];
      if (!key) return { ok: false, reason: REASON.couldNotBeDecoded };
      keys.push(key);
    }
    if (!program) return { ok: false, reason: REASON.couldNotBeDecoded };
    instructions.push({ program: viewOf(program), keys, data: viewOf(instruction.data) });
  }
  const [limit, price, transfer, ...optional] = instructions;
  if (!limit || !price || !transfer || optional.length > MAX_OPTIONAL_INSTRUCTIONS)
    return { ok: false, reason: REASON.instructionsLength };

  // ComputeBudget data: SetComputeUnitLimit (2) and the units (u32), SetComputeUnitPrice (3) and the
  // micro-lamports per unit (u64).
  if (!isComputeBudget(limit, SET_COMPUTE_UNIT_LIMIT, 5)) return { ok: false, reason: REASON.computeLimit };
  if (limit.data.readUInt32LE(1) > expected.maxComputeUnits)
    return { ok: false, reason: REASON.computeLimitTooHigh };
  if (!isComputeBudget(price, SET_COMPUTE_UNIT_PRICE, 9)) return { ok: false, reason: REASON.computePrice };
  if (price.data.readBigUInt64LE(1) > expected.maxPriorityFeeMicroLamports)
    return { ok: false, reason: REASON.computePriceTooHigh };

  // transferChecked: [source, mint, destination, authority, ...multisig signers]; data: 12, amount
  // (u64), decimals (u8).
  const isToken = transfer.program.equals(TOKEN);
  const [, mint, destination, authority] = transfer.keys;
  if (
    (!isToken && !transfer.program.equals(TOKEN_2022)) ||
    transfer.data[0] !== TRANSFER_CHECKED ||
    transfer.data.length !== 10 ||
    !mint ||
    !destination ||
    !authority
  )
    return { ok: false, reason: REASON.noTransfer };
  const payer = bs58.encode(authority);
  const refuse = (reason: string): ExactSvmCheck => ({ ok: false, reason, payer });
  if (feePayer.equals(authority)) return refuse(REASON.feePayerTransferring);
  // The specification: the fee payer in no instruction's accounts at all (so not the transfer's
  // source either); the official facilitator checks only the authority.
  if (instructions.some(({ keys }) => keys.some((key) => feePayer.equals(key))))
    return refuse(REASON.feePayerTransferring);
  if (!Buffer.from(expected.mint).equals(mint)) return refuse(REASON.mintMismatch);
  const ata = isToken ? expected.destinations.token : expected.destinations.token2022;
  if (!Buffer.from(ata).equals(destination)) return refuse(REASON.recipientMismatch);
  if (transfer.data.readBigUInt64LE(1) !== expected.amount) return refuse(REASON.amountMismatch);

  const memos: Buffer[] = [];
  for (const [i, instruction] of optional.entries()) {
    if (instruction.program.equals(MEMO)) memos.push(instruction.data);
    else if (!instruction.program.equals(LIGHTHOUSE))
      return refuse(REASON.unknownOptional[i] ?? REASON.instructionsLength);
  }
  if (expected.memo) {
    if (memos.length !== 1) return refuse(REASON.memoCount);
    if (!Buffer.from(expected.memo, 'utf8').equals(memos[0] ?? Buffer.alloc(0)))
      return refuse(REASON.memoMismatch);
  }
  return { ok: true, payer };
}

/** Whether `instruction` is the ComputeBudget instruction `discriminator` with `length` bytes of data. */
function isComputeBudget(
  instruction: { program: Buffer; data: Buffer },
  discriminator: number,
  length: number,
) {
  return (
    instruction.program.equals(COMPUTE_BUDGET) &&
    instruction.data[0] === discriminator &&
    instruction.data.length === length
  );
}

/** A Buffer over the same bytes (no copy), for its comparisons and integer reads. */
function viewOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

const TOKEN_PROGRAMS = [TOKEN, TOKEN_2022];

/**
 * The source account of the first SPL Token or Token-2022 `transferChecked` of a transaction, if
 * static (the settlement limits' in-flight slot is per payer and source).
 * @param wire the transaction, read by `parseWireTransaction`
 * @returns its 32 bytes, or `undefined` when there is no such instruction or its source is looked up
 */
export function transferSourceOf(wire: WireTransaction): Uint8Array | undefined {
  for (const instruction of wire.instructions) {
    const program = wire.staticAccounts[instruction.programIdIndex];
    if (!program || !TOKEN_PROGRAMS.some((id) => id.equals(program))) continue;
    if (instruction.data[0] !== TRANSFER_CHECKED) continue;
    const index = instruction.accountIndexes[0];
    return index === undefined ? undefined : wire.staticAccounts[index];
  }
  return undefined;
}
