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
  type JWSSignedOffer,
  type JWSSignedReceipt,
  type JWSSigner,
} from '@x402/extensions/offer-receipt';
import { didWebOf, RECEIPT_JWS_ALG, type ReceiptKeySet, type ReceiptPayload } from './receipt-check';

export {
  didWebOf,
  OFFER_RECEIPT,
  RECEIPT_JWS_ALG,
  ReceiptPayload,
  ReceiptVerificationError,
  receiptOfSettlement,
  verifyReceipt,
} from './receipt-check';
export type {
  PublishedKey,
  ReceiptKeySet,
  ReceiptRefusal,
  VerifiedReceipt,
  VerifyReceiptOptions,
} from './receipt-check';
export type { JWSSignedOffer, JWSSignedReceipt };

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
