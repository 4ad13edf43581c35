import { VersionedTransaction } from '@solana/web3.js';
import { bs58 } from './deps';
import { addressTableLookupsJson, parsedTransaction } from './parsed';
import type { TxRecord } from './tx-record';

/** Transaction encodings getTransaction accepts. */
export type TransactionEncoding = 'json' | 'jsonParsed' | 'base64' | 'base58';

/**
 * A JSON text to splice into a response as is, in place of a value `JSON.stringify` would write.
 * Handlers return it for answers that are cached already serialised.
 */
export class RawJson {
  /** @param json a complete JSON value */
  constructor(readonly json: string) {}
}

// Per record and encoding: the getTransaction result serialised up to (not including) the optional
// `version` field and the closing brace, so both the versioned and the legacy-client answer are one
// concatenation. Records are immutable once landed and live as long as the ledger, so this never
// goes stale; only encodings somebody asked for (plus `json`, built at execution) take memory.
const bodies = new WeakMap<TxRecord, Map<TransactionEncoding, string>>();

/** The `json` encoding of a transaction, in the field order Solana RPC (and this ledger before) writes. */
function messageJson(tx: VersionedTransaction): unknown {
  const message = tx.message;
  return {
    signatures: tx.signatures.map((s) => bs58.encode(s)),
    message: {
      accountKeys: message.staticAccountKeys.map((k) => k.toBase58()),
      header: message.header,
      recentBlockhash: message.recentBlockhash,
      instructions: message.compiledInstructions.map((ix) => ({
        programIdIndex: ix.programIdIndex,
        accounts: ix.accountKeyIndexes,
        data: bs58.encode(ix.data),
        stackHeight: null,
      })),
      ...addressTableLookupsJson(message),
    },
  };
}

function buildBody(record: TxRecord, encoding: TransactionEncoding, decoded?: VersionedTransaction): string {
  let transaction: unknown;
  let meta: unknown = record.meta;
  switch (encoding) {
    case 'json':
      transaction = messageJson(
        decoded ?? VersionedTransaction.deserialize(Buffer.from(record.raw, 'base64')),
      );
      break;
    case 'base64':
      transaction = [record.raw, 'base64'];
      break;
    case 'base58':
      transaction = [bs58.encode(Buffer.from(record.raw, 'base64')), 'base58'];
      break;
    case 'jsonParsed': {
      const parsed = parsedTransaction(record);
      transaction = parsed.transaction;
      meta = parsed.meta;
      break;
    }
  }
  const json = JSON.stringify({ slot: record.slot, blockTime: record.blockTime, transaction, meta });
  return json.slice(0, -1);
}

function cachedBody(record: TxRecord, encoding: TransactionEncoding, decoded?: VersionedTransaction): string {
  let perEncoding = bodies.get(record);
  if (perEncoding === undefined) {
    perEncoding = new Map();
    bodies.set(record, perEncoding);
  }
  let body = perEncoding.get(encoding);
  if (body === undefined) {
    body = buildBody(record, encoding, decoded);
    perEncoding.set(encoding, body);
  }
  return body;
}

/**
 * Serialises the `json` getTransaction answer of a record that just landed, from the transaction
 * already decoded for execution, so the first getTransaction (a payment verifier's only one) is a
 * lookup and a concatenation.
 */
export function primeTransactionJson(record: TxRecord, decoded: VersionedTransaction): void {
  cachedBody(record, 'json', decoded);
}

/**
 * The getTransaction result for `record` in `encoding`, serialised (built once per record and
 * encoding, then cached). `versioned` is whether the client sent `maxSupportedTransactionVersion: 0`,
 * which adds the `version` field.
 */
export function transactionResultJson(
  record: TxRecord,
  encoding: TransactionEncoding,
  versioned: boolean,
): RawJson {
  const body = cachedBody(record, encoding);
  return new RawJson(versioned ? `${body},"version":${JSON.stringify(record.version)}}` : `${body}}`);
}
