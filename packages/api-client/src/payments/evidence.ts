// The check of a paid answer's signed receipt (README, "Receipts as evidence"), loaded with the payment
// engine: the receipt in the settlement headers, verified with the x402 offer-receipt extension against
// the service's published keys and the body received.
import {
  receiptOfSettlement,
  ReceiptVerificationError,
  verifyReceipt,
  type ReceiptKeySet,
} from '@repo/x402-core/receipt-check';
import type {
  PaidAnswerFacts,
  ReceiptClaims,
  ReceiptEvidence,
  ReceiptKey,
  ReceiptProblem,
} from '../receipts';

/** Keys fetched per origin, kept for 5 minutes (the service's own cache time). */
const KEYS_TTL_MS = 300_000;
/** Largest JWKS read: a handful of keys is a few hundred bytes; a server sending more is refused. */
const MAX_KEYS_BYTES = 64 * 1024;

/**
 * Verifies `receipt` against `keys` (and `body`, when given).
 * @returns the claims and the signing key's `kid`, or the problem and a message
 */
export async function checkReceipt(
  receipt: unknown,
  keys: { keys: ReceiptKey[] },
  body?: Uint8Array,
): Promise<{ claims: ReceiptClaims; kid: string } | { problem: ReceiptProblem; message: string }> {
  try {
    const verified = await verifyReceipt(receipt, {
      keys: keys as ReceiptKeySet,
      ...(body ? { body } : {}),
    });
    return { claims: verified.payload, kid: verified.key.kid };
  } catch (error) {
    if (error instanceof ReceiptVerificationError) return { problem: error.code, message: error.message };
    throw error;
  }
}

/**
 * Reads, fetches the keys of and checks a paid answer's receipt: in `PAYMENT-RESPONSE` (else
 * `X-PAYMENT-RESPONSE`), verified against `<origin>/.well-known/jwks.json` (fetched again once when
 * its `kid` is not there: the service may have rotated its key) and `body`, and stating this
 * payment's transaction, payer and amount. `undefined` when the answer carries no receipt.
 */
export function receiptChecker(
  fetchImpl: typeof fetch,
): (response: Response, body: Uint8Array, facts: PaidAnswerFacts) => Promise<ReceiptEvidence | undefined> {
  const cache = new Map<string, { at: number; keys: Promise<{ keys: ReceiptKey[] }> }>();
  const keysOf = (origin: string, fresh: boolean): Promise<{ keys: ReceiptKey[] }> => {
    const hit = cache.get(origin);
    if (hit && !fresh && Date.now() - hit.at < KEYS_TTL_MS) return hit.keys;
    const keys = fetchImpl(`${origin}/.well-known/jwks.json`, {
      headers: { accept: 'application/json' },
    }).then(async (res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const text = await res.text();
      if (text.length > MAX_KEYS_BYTES) throw new Error('the JWKS is too large');
      const set = JSON.parse(text) as { keys?: unknown };
      if (!Array.isArray(set.keys)) throw new Error('not a JWKS');
      return set as { keys: ReceiptKey[] };
    });
    keys.catch(() => cache.delete(origin));
    cache.set(origin, { at: Date.now(), keys });
    return keys;
  };
  return async (response, body, facts) => {
    const receipt = receiptIn(response);
    if (!receipt) return undefined;
    const sent = receipt as ReceiptEvidence['receipt'];
    const origin = new URL(facts.url).origin;
    let keys: { keys: ReceiptKey[] };
    try {
      keys = await keysOf(origin, false);
    } catch {
      return { status: 'invalid', problem: 'keys_unavailable', receipt: sent };
    }
    let checked = await checkReceipt(receipt, keys, body);
    if ('problem' in checked && checked.problem === 'unknown_key') {
      try {
        keys = await keysOf(origin, true);
        checked = await checkReceipt(receipt, keys, body);
      } catch {
        // The keys read first stand.
      }
    }
    if ('problem' in checked) return { status: 'invalid', problem: checked.problem, receipt: sent, keys };
    const { claims } = checked;
    const agrees =
      claims.transaction === facts.signature &&
      claims.payer === facts.payer &&
      claims.amount === facts.amountAtomic;
    return agrees
      ? { status: 'verified', receipt: sent, claims, keys }
      : { status: 'invalid', problem: 'mismatch', receipt: sent, claims, keys };
  };
}

function receiptIn(response: Response): unknown {
  for (const name of ['payment-response', 'x-payment-response']) {
    const header = response.headers.get(name);
    if (!header) continue;
    try {
      const receipt = receiptOfSettlement(JSON.parse(Buffer.from(header, 'base64').toString('utf8')));
      if (receipt !== undefined) return receipt;
    } catch {
      // A settlement header that is not base64 JSON carries no receipt.
    }
  }
  return undefined;
}
