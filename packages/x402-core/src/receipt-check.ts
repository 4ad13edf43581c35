// @repo/x402-core/receipt-check — the offline check of a receipt of the x402 `offer-receipt`
// extension as this project signs them (JWS, Ed25519) and the shapes it shares with the signer
// (docs/payments.md, "Signed offers and receipts"). node:crypto only: what a paying client loads.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { z } from 'zod';

/** The extension's key in `extensions` (`offer-receipt`, `OFFER_RECEIPT` of `@x402/extensions`). */
export const OFFER_RECEIPT = 'offer-receipt';

/** The JWS algorithm of every offer and receipt: Ed25519 (RFC 8037), the key type Solana uses. */
export const RECEIPT_JWS_ALG = 'EdDSA';

/** A public Ed25519 key as published: an OKP JWK with its `kid` (a DID URL), `alg` and `use`. */
export interface PublishedKey {
  kty: 'OKP';
  crv: 'Ed25519';
  /** base64url of the 32-byte public key. */
  x: string;
  /** `did:web:<host>#<RFC 7638 thumbprint>`, the JWS header's `kid`. */
  kid: string;
  alg: typeof RECEIPT_JWS_ALG;
  use: 'sig';
}

/** The keys of a JWKS document (`/.well-known/jwks.json`). */
export interface ReceiptKeySet {
  keys: PublishedKey[];
}

/**
 * The payload of a receipt this service signs: the extension's receipt fields (x402 offer-receipt,
 * §5.2: `version`, CAIP-2 `network`, `resourceUrl`, `payer`, `issuedAt` in Unix seconds, and the
 * optional `transaction`, always present here) and the evidence this service adds: `amount` paid
 * (atomic USDC units, decimal string), `asset` (the mint), `requestHash` (hex SHA-256 of the canonical
 * request the payment is bound to: docs/payments.md, "Request-bound payments") and `responseSha256`
 * (hex SHA-256 of the response body as sent).
 */
export const ReceiptPayload = z.object({
  version: z.literal(1),
  network: z.string().min(1),
  resourceUrl: z.string().min(1),
  payer: z.string().min(1),
  issuedAt: z.number().int().nonnegative(),
  transaction: z.string().min(1),
  amount: z.string().regex(/^\d+$/),
  asset: z.string().min(1),
  requestHash: z.string().regex(/^[0-9a-f]{64}$/),
  responseSha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type ReceiptPayload = z.infer<typeof ReceiptPayload>;

/**
 * The `did:web` identifier of an origin (W3C did:web: the host, its port percent-encoded), e.g.
 * `did:web:api.example.com` or `did:web:127.0.0.1%3A3001`; its document is at
 * `<origin>/.well-known/did.json`.
 * @throws TypeError when `origin` is not a URL
 */
export function didWebOf(origin: string): string {
  return `did:web:${encodeURIComponent(new URL(origin).host)}`;
}

/** Why {@link verifyReceipt} refused a receipt. */
export type ReceiptRefusal =
  | 'invalid_receipt'
  | 'unknown_key'
  | 'key_not_for_resource'
  | 'bad_signature'
  | 'body_mismatch'
  | 'request_mismatch';

/** A receipt {@link verifyReceipt} refused; `code` says why. */
export class ReceiptVerificationError extends Error {
  constructor(
    readonly code: ReceiptRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'ReceiptVerificationError';
  }
}

/** What {@link verifyReceipt} checks a receipt against. */
export interface VerifyReceiptOptions {
  /** The service's published keys (its `/.well-known/jwks.json`, or a copy kept with the receipt). */
  keys: ReceiptKeySet | readonly PublishedKey[];
  /** The response body as received: its SHA-256 must be the receipt's `responseSha256`. */
  body?: Uint8Array | string;
  /** The request hash the payer computed: must be the receipt's `requestHash`. */
  requestHash?: string;
}

/** A receipt that verified: its payload and the key that signed it. */
export interface VerifiedReceipt {
  payload: ReceiptPayload;
  key: PublishedKey;
}

/**
 * Checks a receipt (docs/payments.md, "Signed offers and receipts"): a JWS `offer-receipt` receipt
 * whose `kid` is one of `keys`, whose key's `did:web` host is the host of its `resourceUrl` (a key of
 * one service does not vouch for another's resource), whose Ed25519 signature (JWS `EdDSA`, RFC 8037) verifies, whose payload is this service's receipt
 * ({@link ReceiptPayload}), and, when given, whose `responseSha256` is the SHA-256 of `body` and whose
 * `requestHash` is `requestHash`. Works offline: nothing is fetched.
 * @throws ReceiptVerificationError with `code` `invalid_receipt`, `unknown_key`,
 *   `key_not_for_resource`, `bad_signature`, `body_mismatch` or `request_mismatch`
 */
export async function verifyReceipt(
  receipt: unknown,
  options: VerifyReceiptOptions,
): Promise<VerifiedReceipt> {
  const r = receipt as Partial<{ format: string; signature: string }> | null;
  if (typeof r !== 'object' || r === null || r.format !== 'jws' || typeof r.signature !== 'string')
    throw new ReceiptVerificationError('invalid_receipt', 'Not a JWS offer-receipt receipt');
  const parts = r.signature.split('.');
  let header: { alg?: unknown; kid?: unknown };
  try {
    if (parts.length !== 3) throw new Error('not three parts');
    header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as typeof header;
  } catch {
    throw new ReceiptVerificationError('invalid_receipt', 'The receipt is not a JWS compact serialization');
  }
  const { alg, kid } = header;
  if (alg !== RECEIPT_JWS_ALG)
    throw new ReceiptVerificationError('invalid_receipt', `Unexpected JWS algorithm ${String(alg)}`);
  const keys: readonly PublishedKey[] = Array.isArray(options.keys)
    ? options.keys
    : (options.keys as ReceiptKeySet).keys;
  const key = keys.find((k) => k.kid === kid);
  if (!key) throw new ReceiptVerificationError('unknown_key', `No published key has kid ${String(kid)}`);
  let verified: unknown;
  try {
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.x }, format: 'jwk' });
    const input = Buffer.from(`${parts[0]}.${parts[1]}`);
    if (!verify(null, input, publicKey, Buffer.from(parts[2]!, 'base64url'))) throw new Error('bad');
    verified = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    throw new ReceiptVerificationError('bad_signature', 'The receipt signature does not verify');
  }
  const parsed = ReceiptPayload.safeParse(verified);
  if (!parsed.success)
    throw new ReceiptVerificationError('invalid_receipt', 'The signed payload is not a receipt of this kind');
  const payload = parsed.data;
  let resourceHost: string;
  try {
    resourceHost = new URL(payload.resourceUrl).host;
  } catch {
    throw new ReceiptVerificationError('invalid_receipt', 'The receipt resourceUrl is not a URL');
  }
  if (key.kid.split('#')[0] !== `did:web:${encodeURIComponent(resourceHost)}`)
    throw new ReceiptVerificationError(
      'key_not_for_resource',
      `Key ${key.kid} does not belong to ${resourceHost}, the host of the paid resource`,
    );
  if (options.body !== undefined) {
    const digest = createHash('sha256').update(options.body).digest('hex');
    if (digest !== payload.responseSha256)
      throw new ReceiptVerificationError(
        'body_mismatch',
        'The body is not the one the receipt was signed for',
      );
  }
  if (options.requestHash !== undefined && options.requestHash !== payload.requestHash)
    throw new ReceiptVerificationError('request_mismatch', 'The receipt is for another request');
  return { payload, key };
}

/**
 * The receipt in a settlement response (`PAYMENT-RESPONSE` or `X-PAYMENT-RESPONSE`, decoded):
 * `extensions["offer-receipt"].info.receipt`, or `undefined`.
 */
export function receiptOfSettlement(settlement: unknown): unknown {
  const extensions = (settlement as { extensions?: Record<string, { info?: { receipt?: unknown } }> } | null)
    ?.extensions;
  return extensions?.[OFFER_RECEIPT]?.info?.receipt;
}
