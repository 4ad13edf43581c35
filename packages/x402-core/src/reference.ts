import { createHash, createHmac } from 'node:crypto';
import { bs58 } from './deps';

/** The parts of an HTTP request a payment is bound to. */
export interface CanonicalRequest {
  /** HTTP method, e.g. `"GET"` (upper-cased here). */
  method: string;
  /** Path without the query, e.g. `"/api/v1/scout/gaps"`. */
  path: string;
  /** Query parameters in request order; sorted here by name, then value. */
  query: Iterable<[string, string]>;
  /** Hex SHA-256 of the request body (of the empty string when there is none). */
  bodySha256: string;
}

/**
 * The canonical text of a request (docs/payments.md, "Request-bound payments"): the upper-cased method, the
 * path, the query sorted by name then value (each part URI-encoded) and the body hash, one per line.
 * Two requests have the same text exactly when they ask for the same thing, whatever the order of
 * their query parameters. {@link requestReference} and {@link requestHash} are both made from it.
 */
export function canonicalRequestText(request: CanonicalRequest): string {
  const query = [...request.query]
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
    .join('&');
  return `${request.method.toUpperCase()}\n${request.path}\n${query}\n${request.bodySha256}`;
}

/**
 * The Solana Pay reference of a request (docs/payments.md, "Request-bound payments"): the 32 bytes of
 * HMAC-SHA256(`secret`, {@link canonicalRequestText}) as a base58 address. Stateless: a retry
 * of the same request gets the same reference, any other request another one, and nobody without
 * the secret can compute it. A push-mode payer adds it to the `transferChecked` instruction as a
 * read-only, non-signer account; the verifier then refuses the payment on any other request.
 *
 * @param secret the HMAC key (at least 32 bytes in production)
 * @param request the request's canonical parts, or their {@link canonicalRequestText}
 * @returns a base58 string of 32 bytes
 */
export function requestReference(secret: string | Uint8Array, request: CanonicalRequest | string): string {
  const canonical = typeof request === 'string' ? request : canonicalRequestText(request);
  return bs58.encode(createHmac('sha256', secret).update(canonical).digest());
}

/**
 * The hash a payment ledger binds a payment to (docs/payments.md, "Request-bound payments": a replay is served
 * only to the request that was paid for): hex SHA-256 of {@link canonicalRequestText}. Unkeyed, as it
 * is only compared, never shown.
 *
 * @param request the request's canonical parts, or their {@link canonicalRequestText}
 * @returns 64 lower-case hex characters
 */
export function requestHash(request: CanonicalRequest | string): string {
  return sha256Hex(typeof request === 'string' ? request : canonicalRequestText(request));
}

/** Hex SHA-256 of a request body (`''` when there is none). */
export function sha256Hex(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}
