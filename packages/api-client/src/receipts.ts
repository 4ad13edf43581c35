// Receipts as evidence (README, "Receipts as evidence"): what a payer keeps of a signed receipt, where
// it keeps it, and the offline check of a kept one. Light: the verification (the x402 offer-receipt
// extension, jose) loads with the first check, like the payment engine.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PaidRequest } from './payments/payer';

/** A published Ed25519 key of the service (an OKP JWK with its `kid`). */
export interface ReceiptKey {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

/**
 * The payload of a market-intel receipt: the x402 offer-receipt fields (CAIP-2 `network`,
 * `resourceUrl`, `payer`, `issuedAt` in Unix seconds, `transaction`) and `amount` (atomic USDC units),
 * `asset`, `requestHash` and `responseSha256` (hex SHA-256 of the canonical request and of the body).
 */
export interface ReceiptClaims {
  version: 1;
  network: string;
  resourceUrl: string;
  payer: string;
  issuedAt: number;
  transaction: string;
  amount: string;
  asset: string;
  requestHash: string;
  responseSha256: string;
}

/** Why a receipt is not evidence: the verifier's codes, `keys_unavailable`, or `mismatch` with the payment. */
export type ReceiptProblem =
  | 'invalid_receipt'
  | 'unknown_key'
  | 'key_not_for_resource'
  | 'bad_signature'
  | 'body_mismatch'
  | 'request_mismatch'
  | 'keys_unavailable'
  | 'mismatch';

/**
 * A paid answer's signed receipt as the payer checked it: `status` `verified` (signature, key, body
 * and payment all agree; `claims` is what it proves) or `invalid` (`problem` says why: keep it
 * anyway, it is what the server sent). `keys` is the service's JWKS it was checked against, kept so
 * that the receipt can be checked again offline.
 */
export interface ReceiptEvidence {
  status: 'verified' | 'invalid';
  problem?: ReceiptProblem;
  /** The receipt as sent: `{ format: "jws", signature }` (x402 offer-receipt). */
  receipt: { format: 'jws'; signature: string };
  claims?: ReceiptClaims;
  keys?: { keys: ReceiptKey[] };
  /** With a `receiptStore`: whether it kept the receipt. */
  stored?: boolean;
}

/** What a {@link ReceiptStore} keeps per paid answer. */
export interface StoredReceipt extends ReceiptEvidence {
  /** The paid request. */
  request: PaidRequest;
  /** The paying transaction's signature. */
  signature: string;
  /** The answer's body as received (what `responseSha256` covers). */
  body: Uint8Array;
}

/** Where a payer keeps receipts (`receiptStore` of its options). */
export interface ReceiptStore {
  /** Keeps one; a failure leaves the paid answer as it is, with `evidence.stored` false. */
  save(receipt: StoredReceipt): void | Promise<void>;
}

/** The record file {@link directoryReceiptStore} writes for a receipt. */
export interface ReceiptFile extends Omit<StoredReceipt, 'body'> {
  kind: 'x402-offer-receipt';
  /** The body's file, beside the record (`<signature>.body`). */
  bodyFile: string;
  savedAt: string;
}

/**
 * A {@link ReceiptStore} writing each receipt to `dir` (created if missing) as `<signature>.json`
 * ({@link ReceiptFile}) and the answer's body as `<signature>.body`, both readable by the owner only;
 * `agent-pay verify-receipt <signature>.json <signature>.body` checks them again offline.
 */
export function directoryReceiptStore(dir: string): ReceiptStore {
  return {
    async save(receipt) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      // A base58 signature names the files; anything else a server could send is refused.
      if (!/^[1-9A-HJ-NP-Za-km-z]{32,100}$/.test(receipt.signature))
        throw new Error('the receipt names no transaction signature to file it under');
      const { body, ...rest } = receipt;
      const bodyFile = `${receipt.signature}.body`;
      await writeFile(path.join(dir, bodyFile), body, { mode: 0o600 });
      const record: ReceiptFile = {
        kind: 'x402-offer-receipt',
        ...rest,
        bodyFile,
        savedAt: new Date().toISOString(),
      };
      await writeFile(path.join(dir, `${receipt.signature}.json`), `${JSON.stringify(record, null, 2)}\n`, {
        mode: 0o600,
      });
    },
  };
}

/** A paid answer's facts its receipt must state (see {@link verifyPaidAnswer}). */
export interface PaidAnswerFacts {
  /** The request URL: the keys are read from its origin's `/.well-known/jwks.json`. */
  url: string;
  /** The paying transaction's signature. */
  signature: string;
  /** The paying wallet. */
  payer: string;
  /** The amount paid, atomic USDC units as a decimal string. */
  amountAtomic: string;
}

/**
 * Checks the signed receipt of a paid answer received by other means than a payer of `createPayer` (as
 * `agent-pay` does): `response`'s settlement headers, `body` its bytes as received, `facts` the
 * payment made. The same check as the payer's `evidence` (README, "Receipts as evidence").
 * @returns the evidence, or `undefined` when the answer carries no receipt
 */
export async function verifyPaidAnswer(
  response: Response,
  body: Uint8Array,
  facts: PaidAnswerFacts,
  options: { fetch?: typeof fetch } = {},
): Promise<ReceiptEvidence | undefined> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy, as the payment engine
  const { receiptChecker } = require('./payments/evidence') as typeof import('./payments/evidence');
  return receiptChecker(options.fetch ?? fetch)(response, body, facts);
}

/** What {@link verifyReceiptFile} found. */
export interface ReceiptFileCheck {
  claims: ReceiptClaims;
  /** The `kid` of the key that signed it. */
  kid: string;
  /** Whether a body was checked against `responseSha256`. */
  bodyChecked: boolean;
}

/**
 * Checks a kept receipt offline (README, "Receipts as evidence"): `file` is a {@link ReceiptFile} (or
 * any JSON with `receipt` and `keys`), checked against the keys it holds (or `keys`, e.g. the
 * service's JWKS fetched or archived apart); with `body`, the body's SHA-256 must be the receipt's.
 * @throws ReceiptCheckError with `code` (a {@link ReceiptProblem}, or `unreadable` for a file that is
 *   not such JSON)
 */
export async function verifyReceiptFile(
  file: string,
  options: { body?: Uint8Array; keys?: { keys: ReceiptKey[] } } = {},
): Promise<ReceiptFileCheck> {
  let record: Partial<ReceiptFile>;
  try {
    record = JSON.parse(await readFile(file, 'utf8')) as Partial<ReceiptFile>;
  } catch (error) {
    throw new ReceiptCheckError('unreadable', `cannot read ${file} as JSON`, { cause: error });
  }
  const keys = options.keys ?? record.keys;
  if (typeof record !== 'object' || record === null || !record.receipt || !keys)
    throw new ReceiptCheckError('unreadable', `${file} holds no receipt with the keys to check it`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy, as the payment engine
  const { checkReceipt } = require('./payments/evidence') as typeof import('./payments/evidence');
  const checked = await checkReceipt(record.receipt, keys, options.body);
  if ('problem' in checked) throw new ReceiptCheckError(checked.problem, checked.message);
  return { claims: checked.claims, kid: checked.kid, bodyChecked: options.body !== undefined };
}

/** A kept receipt that does not check; `code` says why. */
export class ReceiptCheckError extends Error {
  constructor(
    readonly code: ReceiptProblem | 'unreadable',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ReceiptCheckError';
  }
}
