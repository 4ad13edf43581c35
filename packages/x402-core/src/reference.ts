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
 * The Solana Pay reference of a request (README, "Request-bound payments"): the 32 bytes of
 * HMAC-SHA256(`secret`, method, path, sorted query, body hash) as a base58 address. Stateless: a retry
 * of the same request gets the same reference, any other request another one, and nobody without
 * the secret can compute it. A push-mode payer adds it to the `transferChecked` instruction as a
 * read-only, non-signer account; the verifier then refuses the payment on any other request.
 *
 * @param secret the HMAC key (at least 32 bytes in production)
 * @param request the request's canonical parts
 * @returns a base58 string of 32 bytes
 */
export function requestReference(secret: string | Uint8Array, request: CanonicalRequest): string {
  const query = [...request.query]
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
    .join('&');
  const canonical = `${request.method.toUpperCase()}\n${request.path}\n${query}\n${request.bodySha256}`;
  return bs58.encode(createHmac('sha256', secret).update(canonical).digest());
}

/** Hex SHA-256 of a request body (`''` when there is none). */
export function sha256Hex(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}
