// @repo/x402-core/receipts — signed offers and receipts of the x402 `offer-receipt` extension (JWS,
// Ed25519), the service's published keys (JWKS and did:web), and the offline check of a receipt
// (docs/payments.md, "Signed offers and receipts"). A subpath of its own: it loads
// `@x402/extensions/offer-receipt`, which the rest of the protocol package does not need.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from 'node:crypto';
import {
  canonicalize,
  createJWS,
  extractJWSHeader,
  OFFER_RECEIPT,
  verifyReceiptSignatureJWS,
  type JWSSignedOffer,
  type JWSSignedReceipt,
  type JWSSigner,
} from '@x402/extensions/offer-receipt';
import { z } from 'zod';

export { OFFER_RECEIPT };
export type { JWSSignedOffer, JWSSignedReceipt };

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

/** The fields of an offer (x402 offer-receipt, §4.2), without `validUntil` (see {@link ReceiptIssuer.offer}). */
export interface OfferTerms {
  /** The paid resource: the route's URL without its query. */
  resourceUrl: string;
  scheme: string;
  /** CAIP-2 network. */
  network: string;
  asset: string;
  payTo: string;
  /** Atomic units, decimal string. */
  amount: string;
}

const PEM = /-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g;

/**
 * Reads an Ed25519 key given as a PEM block (PKCS#8 private or SPKI public key, as
 * `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout` write them) or as a JWK (JSON, `OKP`
 * / `Ed25519`, with `d` for a private key).
 * @throws Error naming what is wrong: not PEM nor JSON, not Ed25519, or `needPrivate` and no private part
 */
function readKey(text: string, needPrivate: boolean): KeyObject {
  const trimmed = text.trim();
  let key: KeyObject;
  try {
    if (trimmed.startsWith('{')) {
      const jwk = JSON.parse(trimmed) as Record<string, unknown>;
      key =
        typeof jwk.d === 'string'
          ? createPrivateKey({ key: jwk, format: 'jwk' })
          : createPublicKey({ key: jwk, format: 'jwk' });
    } else if (/PRIVATE KEY-----/.test(trimmed)) key = createPrivateKey(trimmed);
    else key = createPublicKey(trimmed);
  } catch (error) {
    throw new Error(
      `is not an Ed25519 key as PEM (PKCS#8 or SPKI) or JWK: ${(error as Error).message.slice(0, 120)}`,
      { cause: error },
    );
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`must be an Ed25519 key, not ${key.asymmetricKeyType ?? key.type}`);
  if (needPrivate && key.type !== 'private') throw new Error('must be a private key');
  return key;
}

/** base64url of the public key of `key` (its JWK `x`). */
function publicX(key: KeyObject): string {
  const jwk = (key.type === 'private' ? createPublicKey(key) : key).export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('the key has no public part');
  return jwk.x;
}

/** RFC 7638 thumbprint of an Ed25519 public key: base64url SHA-256 of its required members, sorted. */
function thumbprint(x: string): string {
  return createHash('sha256')
    .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
    .digest('base64url');
}

/**
 * The `did:web` identifier of an origin (W3C did:web: the host, its port percent-encoded), e.g.
 * `did:web:api.example.com` or `did:web:127.0.0.1%3A3001`; its document is at
 * `<origin>/.well-known/did.json`.
 * @throws TypeError when `origin` is not a URL
 */
export function didWebOf(origin: string): string {
  return `did:web:${encodeURIComponent(new URL(origin).host)}`;
}

/** Options of {@link ReceiptIssuer}. */
export interface ReceiptIssuerOptions {
  /** The signing key: Ed25519, PKCS#8 PEM or private JWK. */
  signingKey: string;
  /**
   * Public keys published beside it (previous keys, whose receipts must still verify, and during a
   * rotation the next one): PEM blocks (public or private; only the public part is kept), or JSON of
   * a JWK, an array of JWKs or a JWKS `{ keys }`.
   */
  publishedKeys?: string;
}

/**
 * Signs a service's offers and receipts with one Ed25519 key, in the JWS format of the x402
 * `offer-receipt` extension, and publishes its keys (docs/payments.md, "Signed offers and receipts").
 * The key id of each signature is `did:web:<host of origin>#<thumbprint>`, so `origin` (the public
 * origin the resource URLs use) names whose key it is.
 */
export class ReceiptIssuer {
  private readonly key: KeyObject;
  private readonly fragment: string;
  /** `x` of the signing key, then of each published key, without duplicates. */
  private readonly published: string[];

  /** @throws Error when a key cannot be read (the message names which one and why) */
  constructor(options: ReceiptIssuerOptions) {
    try {
      this.key = readKey(options.signingKey, true);
    } catch (error) {
      throw new Error(`signing key ${(error as Error).message}`, { cause: error });
    }
    const current = publicX(this.key);
    this.fragment = thumbprint(current);
    this.published = [current];
    for (const x of publishedKeysOf(options.publishedKeys ?? ''))
      if (!this.published.includes(x)) this.published.push(x);
  }

  /** A new random Ed25519 signing key, as PKCS#8 PEM (development, and tests). */
  static generateKey(): string {
    return generateEd25519Pem();
  }

  /** The JWS `kid` of this issuer's signatures for `origin`. */
  kidFor(origin: string): string {
    return `${didWebOf(origin)}#${this.fragment}`;
  }

  /** The extension's JWS signer (`createJWS`) of this key for `origin`. */
  signerFor(origin: string): JWSSigner {
    return {
      kid: this.kidFor(origin),
      format: 'jws',
      algorithm: RECEIPT_JWS_ALG,
      sign: (input) => Promise.resolve(sign(null, input, this.key).toString('base64url')),
    };
  }

  /**
   * A signed offer of `terms` for `origin` (x402 offer-receipt, §4): the JWS `createJWS` of
   * `@x402/extensions` makes for the payload `{ version: 1, ...terms }`, built synchronously
   * (Ed25519 signatures are deterministic) so that a 402 is assembled without waiting. It carries no
   * `validUntil` (optional, §4.2): an offer is signed once per route, network and origin and is
   * byte-identical in every 402 of that route, whatever the request's query or time, which is what
   * lets the hot path answer 402s from templates; the price of a route changes only with a release.
   * `acceptIndex` is 0: the one requirement of `PAYMENT-REQUIRED`.
   */
  offer(origin: string, terms: OfferTerms): JWSSignedOffer {
    const payload = {
      version: 1,
      resourceUrl: terms.resourceUrl,
      scheme: terms.scheme,
      network: terms.network,
      asset: terms.asset,
      payTo: terms.payTo,
      amount: terms.amount,
    };
    const header = Buffer.from(JSON.stringify({ alg: RECEIPT_JWS_ALG, kid: this.kidFor(origin) })).toString(
      'base64url',
    );
    const input = `${header}.${Buffer.from(canonicalize(payload)).toString('base64url')}`;
    return {
      format: 'jws',
      acceptIndex: 0,
      signature: `${input}.${sign(null, Buffer.from(input), this.key).toString('base64url')}`,
    };
  }

  /**
   * A signed receipt (x402 offer-receipt, §5, JWS) of `payload` for `origin`, with the extension's
   * `createJWS`.
   */
  async receipt(origin: string, payload: ReceiptPayload): Promise<JWSSignedReceipt> {
    return { format: 'jws', signature: await createJWS(payload, this.signerFor(origin)) };
  }

  /** The published keys for `origin` (the signing key first), as served at `/.well-known/jwks.json`. */
  keySet(origin: string): ReceiptKeySet {
    const did = didWebOf(origin);
    return {
      keys: this.published.map((x) => ({
        kty: 'OKP',
        crv: 'Ed25519',
        x,
        kid: `${did}#${thumbprint(x)}`,
        alg: RECEIPT_JWS_ALG,
        use: 'sig',
      })),
    };
  }

  /**
   * The did:web DID document of `origin` (`/.well-known/did.json`): every published key as a
   * `JsonWebKey2020` verification method, each an assertion method, which `@x402/extensions`
   * resolves a `kid` with (`verifyReceiptSignatureJWS` without a key).
   */
  didDocument(origin: string): Record<string, unknown> {
    const did = didWebOf(origin);
    const keys = this.keySet(origin).keys;
    return {
      '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/suites/jws-2020/v1'],
      id: did,
      verificationMethod: keys.map(({ kid, ...publicKeyJwk }) => ({
        id: kid,
        type: 'JsonWebKey2020',
        controller: did,
        publicKeyJwk: { ...publicKeyJwk, kid },
      })),
      assertionMethod: keys.map((k) => k.kid),
    };
  }
}

function generateEd25519Pem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

/**
 * The `x` of each key in `text` (see {@link ReceiptIssuerOptions.publishedKeys}).
 * @throws Error naming the key that cannot be read
 */
function publishedKeysOf(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  let items: string[];
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new Error('published keys: not valid JSON');
    }
    const list = Array.isArray(parsed)
      ? parsed
      : Array.isArray((parsed as { keys?: unknown }).keys)
        ? (parsed as { keys: unknown[] }).keys
        : [parsed];
    items = list.map((jwk) => JSON.stringify(jwk));
  } else items = trimmed.match(PEM) ?? [trimmed];
  return items.map((item, i) => {
    try {
      return publicX(readKey(item, false));
    } catch (error) {
      throw new Error(`published key ${i + 1} ${(error as Error).message}`, { cause: error });
    }
  });
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
 * one service does not vouch for another's resource), whose Ed25519 signature verifies with the
 * extension's `verifyReceiptSignatureJWS`, whose payload is this service's receipt
 * ({@link ReceiptPayload}), and, when given, whose `responseSha256` is the SHA-256 of `body` and whose
 * `requestHash` is `requestHash`. Works offline: nothing is fetched.
 * @throws ReceiptVerificationError with `code` `invalid_receipt`, `unknown_key`,
 *   `key_not_for_resource`, `bad_signature`, `body_mismatch` or `request_mismatch`
 */
export async function verifyReceipt(
  receipt: unknown,
  options: VerifyReceiptOptions,
): Promise<VerifiedReceipt> {
  const r = receipt as Partial<JWSSignedReceipt> | null;
  if (typeof r !== 'object' || r === null || r.format !== 'jws' || typeof r.signature !== 'string')
    throw new ReceiptVerificationError('invalid_receipt', 'Not a JWS offer-receipt receipt');
  let kid: string | undefined;
  let alg: string;
  try {
    ({ kid, alg } = extractJWSHeader(r.signature));
  } catch {
    throw new ReceiptVerificationError('invalid_receipt', 'The receipt is not a JWS compact serialization');
  }
  if (alg !== RECEIPT_JWS_ALG)
    throw new ReceiptVerificationError('invalid_receipt', `Unexpected JWS algorithm ${String(alg)}`);
  const keys: readonly PublishedKey[] = Array.isArray(options.keys)
    ? options.keys
    : (options.keys as ReceiptKeySet).keys;
  const key = keys.find((k) => k.kid === kid);
  if (!key) throw new ReceiptVerificationError('unknown_key', `No published key has kid ${String(kid)}`);
  let verified: unknown;
  try {
    verified = await verifyReceiptSignatureJWS({ format: 'jws', signature: r.signature }, { ...key });
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
