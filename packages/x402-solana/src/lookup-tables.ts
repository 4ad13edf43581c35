import { bs58 } from './deps';
import type { SolanaRpcClient } from './rpc-client';
import type { AddressTableLookup, WireTransaction } from './wire-transaction';

/**
 * Address lookup tables of an official-scheme transaction, resolved for its checks (docs/payments.md,
 * "Paying with an official x402 client": address lookup tables): every table in one
 * `getMultipleAccounts` call, each owned by the Address Lookup Table program and decoded from its
 * account data, the loaded accounts in the order the runtime loads them.
 */

/** The Address Lookup Table program, the one owner a table may have. */
export const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';

/**
 * Most address lookup tables an official-scheme transaction may use: each is an account to fetch,
 * and a payment's transfer, mint and destination fit in one.
 */
export const MAX_LOOKUP_TABLES = 4;

/**
 * A table account's fixed part (the ALT program's `LookupTableMeta` in its `ProgramState::LookupTable`):
 * the state's u32 discriminant, `deactivation_slot` u64, `last_extended_slot` u64,
 * `last_extended_slot_start_index` u8, the authority (`Option<Pubkey>`: a tag byte and 32 bytes) and
 * two bytes of padding; the 32-byte addresses follow.
 */
const LOOKUP_TABLE_META_SIZE = 56;
/** `ProgramState::LookupTable`; 0 is an uninitialized account. */
const LOOKUP_TABLE_STATE = 1;
/** The most accounts a message may name, static and loaded together (account indexes are one byte). */
const MAX_ACCOUNTS = 256;

/** The official facilitator's (`@x402/svm`) reason for a table it could not resolve. */
export const ALT_RESOLUTION_FAILED = 'invalid_exact_svm_smart_wallet_alt_resolution_failed';

/**
 * The accounts a transaction's lookups load (writable ones, then read-only ones, 32 bytes each), or why
 * they could not be resolved (`reason` is always {@link ALT_RESOLUTION_FAILED}; `message` says which
 * table and what was wrong).
 */
export type LookupResolution =
  { ok: true; loaded: Uint8Array[] } | { ok: false; reason: typeof ALT_RESOLUTION_FAILED; message: string };

/**
 * The addresses stored in an address lookup table account, checked against the ALT program's layout
 * (at least the 56-byte meta, an initialized table, then whole 32-byte addresses).
 * @param data the account's data
 * @returns views of its addresses (no copy), or `undefined` when the data is no initialized table
 */
export function lookupTableAddresses(data: Uint8Array): Uint8Array[] | undefined {
  if (data.length < LOOKUP_TABLE_META_SIZE || (data.length - LOOKUP_TABLE_META_SIZE) % 32 !== 0)
    return undefined;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (view.readUInt32LE(0) !== LOOKUP_TABLE_STATE) return undefined;
  const addresses: Uint8Array[] = [];
  for (let offset = LOOKUP_TABLE_META_SIZE; offset < data.length; offset += 32)
    addresses.push(data.subarray(offset, offset + 32));
  return addresses;
}

/**
 * Resolves the address table lookups of `wire`: refuses more than {@link MAX_LOOKUP_TABLES} tables and
 * more than 256 accounts in all before any network call, then fetches every table in one
 * `getMultipleAccounts` call (base64, `confirmed`) and loads the indexed addresses in the runtime's
 * order: every lookup's writable indexes in message order, then every lookup's read-only indexes. A
 * missing table, an account not owned by the Address Lookup Table program or not laid out as a table,
 * an index past a table's end, or a failed RPC call is refused with the official facilitator's
 * `invalid_exact_svm_smart_wallet_alt_resolution_failed`. Whether a table is still active (not
 * deactivated) is left to the node: the send's preflight refuses a transaction whose table it cannot use.
 * @param wire the transaction, read by `parseWireTransaction`, with at least one lookup
 * @param rpc the client of the settlement's RPC endpoint (its timeouts)
 * @returns the loaded accounts, or the refusal; never throws
 */
export async function resolveLookupTables(
  wire: WireTransaction,
  rpc: Pick<SolanaRpcClient, 'getMultipleAccounts'>,
): Promise<LookupResolution> {
  const lookups = wire.addressTableLookups;
  const refuse = (message: string): LookupResolution => ({
    ok: false,
    reason: ALT_RESOLUTION_FAILED,
    message,
  });
  if (lookups.length > MAX_LOOKUP_TABLES)
    return refuse(
      `the transaction uses ${lookups.length} address lookup tables; at most ${MAX_LOOKUP_TABLES} are accepted`,
    );
  let count = wire.staticAccounts.length;
  for (const { writableIndexes, readonlyIndexes } of lookups)
    count += writableIndexes.length + readonlyIndexes.length;
  if (count > MAX_ACCOUNTS)
    return refuse(`the transaction names ${count} accounts; at most ${MAX_ACCOUNTS} fit`);

  const addresses = lookups.map(({ tableAddress }) => bs58.encode(tableAddress));
  let accounts: Awaited<ReturnType<SolanaRpcClient['getMultipleAccounts']>>;
  try {
    accounts = await rpc.getMultipleAccounts(addresses);
  } catch (error) {
    return refuse(
      `the address lookup tables could not be fetched: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const tables: Uint8Array[][] = [];
  for (const [i, address] of addresses.entries()) {
    const account = accounts[i];
    if (!account) return refuse(`address lookup table ${address} does not exist`);
    if (account.owner !== ADDRESS_LOOKUP_TABLE_PROGRAM)
      return refuse(`account ${address} is owned by ${account.owner}, not the Address Lookup Table program`);
    const table = lookupTableAddresses(account.data);
    if (!table) return refuse(`account ${address} is not an address lookup table`);
    tables.push(table);
  }
  const loaded: Uint8Array[] = [];
  for (const pick of ['writableIndexes', 'readonlyIndexes'] as const) {
    for (const [i, lookup] of lookups.entries()) {
      const failed = load(lookup[pick], tables[i] ?? [], loaded);
      if (failed !== undefined)
        return refuse(
          `index ${failed} is past the end of address lookup table ${addresses[i]} (${tables[i]?.length ?? 0} addresses)`,
        );
    }
  }
  return { ok: true, loaded };
}

/** Appends `table[index]` for each index to `into`; returns the first index out of range, if any. */
function load(
  indexes: AddressTableLookup['writableIndexes'],
  table: Uint8Array[],
  into: Uint8Array[],
): number | undefined {
  for (const index of indexes) {
    const address = table[index];
    if (!address) return index;
    into.push(address);
  }
  return undefined;
}
