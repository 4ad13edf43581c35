import type { RpcInstruction, RpcTokenBalance, RpcTransaction } from './rpc-client';
import { decodeBase58Data, decodeTransferChecked, isTokenProgram, type TransferChecked } from './transfers';

// What a fetched transaction did, read from its `getTransaction` answer: the effect the verifier
// checks (README, "Verification order").

/**
 * The account keys of a transaction in index order: `transaction.message.accountKeys` (the static
 * keys), then `meta.loadedAddresses.writable` and `.readonly` (the addresses loaded from address lookup
 * tables of a v0 transaction). Instruction account indexes and token balance `accountIndex`es point
 * into this list.
 *
 * @param tx a `getTransaction` answer (`encoding: "json"`)
 * @returns base58 addresses
 */
export function resolveAccountKeys(tx: RpcTransaction): string[] {
  const keys = tx.transaction.message.accountKeys.slice();
  const loaded = tx.meta?.loadedAddresses;
  if (loaded) {
    for (const key of loaded.writable) keys.push(key);
    for (const key of loaded.readonly) keys.push(key);
  }
  return keys;
}

/**
 * Every SPL Token / Token-2022 `transferChecked` of a transaction: top-level instructions, then inner
 * (CPI) instructions of `meta.innerInstructions`. Instructions of other programs, other token
 * instructions and instructions whose data is not base58 are skipped.
 *
 * @param tx a `getTransaction` answer (`encoding: "json"`)
 * @param accountKeys from {@link resolveAccountKeys}
 * @returns the transfers in that order, amounts in atomic units
 */
export function findTransfersChecked(tx: RpcTransaction, accountKeys: readonly string[]): TransferChecked[] {
  const found: TransferChecked[] = [];
  for (const ix of tx.transaction.message.instructions) {
    const transfer = decodeJsonInstruction(ix, accountKeys, 'top-level');
    if (transfer) found.push(transfer);
  }
  for (const group of tx.meta?.innerInstructions ?? []) {
    for (const ix of group.instructions) {
      const transfer = decodeJsonInstruction(ix, accountKeys, 'inner');
      if (transfer) found.push(transfer);
    }
  }
  return found;
}

/** Decodes a JSON-encoded instruction as a `transferChecked`; only token-program data is decoded. */
function decodeJsonInstruction(
  ix: RpcInstruction,
  accountKeys: readonly string[],
  location: TransferChecked['location'],
): TransferChecked | undefined {
  if (!isTokenProgram(accountKeys[ix.programIdIndex])) return undefined;
  let data: Uint8Array;
  try {
    data = decodeBase58Data(ix.data);
  } catch {
    return undefined;
  }
  return decodeTransferChecked(
    { programIdIndex: ix.programIdIndex, accountIndexes: ix.accounts, data },
    accountKeys,
    location,
  );
}

/**
 * `post - pre` token balance of `account` for `mint`, in atomic units, from `meta.postTokenBalances`
 * and `meta.preTokenBalances` (a missing entry counts as 0: e.g. an account created by the
 * transaction).
 *
 * @param tx a `getTransaction` answer (`encoding: "json"`)
 * @param accountKeys from {@link resolveAccountKeys}
 * @param account the token account (base58)
 * @param mint the mint (base58)
 */
export function balanceDelta(
  tx: RpcTransaction,
  accountKeys: readonly string[],
  account: string,
  mint: string,
): bigint {
  const indexes = new Set<number>();
  accountKeys.forEach((key, index) => {
    if (key === account) indexes.add(index);
  });
  const sum = (balances: readonly RpcTokenBalance[] | null | undefined): bigint => {
    let total = 0n;
    for (const balance of balances ?? []) {
      if (indexes.has(balance.accountIndex) && balance.mint === mint)
        total += BigInt(balance.uiTokenAmount.amount);
    }
    return total;
  };
  return sum(tx.meta?.postTokenBalances) - sum(tx.meta?.preTokenBalances);
}

/**
 * The Solana Pay references a transfer carries: its accounts after the four of `transferChecked` that
 * are not signers of the transaction (README, "Verification order", step 5.4).
 *
 * @param tx a `getTransaction` answer (`encoding: "json"`)
 * @param transfer one of {@link findTransfersChecked}
 * @returns base58 addresses, in instruction order
 */
export function referencesOf(tx: RpcTransaction, transfer: TransferChecked): string[] {
  const signers = new Set(
    tx.transaction.message.accountKeys.slice(0, tx.transaction.message.header?.numRequiredSignatures ?? 1),
  );
  return transfer.extraAccounts.filter((account) => !signers.has(account));
}
