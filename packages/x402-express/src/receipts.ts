import type { ServerResponse } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '@repo/errors';
import type { X402Network } from '@repo/schemas';
import {
  CAIP2_NETWORKS,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
  encodeBase64Json,
  sha256Hex,
  type PaymentRequirementsV2,
  type VerifiedPayment,
} from '@repo/x402-core';
import { OFFER_RECEIPT, type ReceiptIssuer } from '@repo/x402-core/receipts';
import { publicBaseOf } from './request';

/** Most signed offers kept per route's extensions and requirements (one per origin, 402's path). */
const MAX_OFFERS = 256;

// Per issuer, route extensions object and offered requirements: the extensions with the signed offer,
// per offer resource URL. Identity matters: the `PAYMENT-REQUIRED` templates are found by it.
type OffersByUrl = Map<string, Record<string, unknown>>;
const signedExtensions = new WeakMap<
  ReceiptIssuer,
  WeakMap<object, WeakMap<PaymentRequirementsV2, OffersByUrl>>
>();

/**
 * `extensions` of a `PAYMENT-REQUIRED` with the `offer-receipt` extension's signed offer of its one
 * requirement (docs/payments.md, "Signed offers and receipts"): `info.offers` holds the offer of
 * `requirements` for the route's URL without its query (`base` + `path`), signed by `issuer` with the
 * key id of `base`'s origin. Built once per route, requirements and URL, then the same object, so
 * that every 402 of the route is byte-identical whatever its query (the hot path's templates rely on it).
 */
export function extensionsWithOffer(
  issuer: ReceiptIssuer,
  extensions: Record<string, unknown>,
  requirements: PaymentRequirementsV2,
  base: string,
  path: string,
): Record<string, unknown> {
  let byExtensions = signedExtensions.get(issuer);
  if (!byExtensions) signedExtensions.set(issuer, (byExtensions = new WeakMap()));
  let byRequirements = byExtensions.get(extensions);
  if (!byRequirements) byExtensions.set(extensions, (byRequirements = new WeakMap()));
  let byUrl = byRequirements.get(requirements);
  if (!byUrl) byRequirements.set(requirements, (byUrl = new Map()));
  const resourceUrl = `${base}${path}`;
  const cached = byUrl.get(resourceUrl);
  if (cached) return cached;
  let offer: ReturnType<ReceiptIssuer['offer']>;
  try {
    offer = issuer.offer(base, {
      resourceUrl,
      scheme: requirements.scheme,
      network: requirements.network,
      asset: requirements.asset,
      payTo: requirements.payTo,
      amount: requirements.amount,
    });
  } catch {
    // A Host header that makes no origin (no public base URL configured) names no key: no offer.
    return extensions;
  }
  const signed = Object.freeze({ ...extensions, [OFFER_RECEIPT]: { info: { offers: [offer] } } });
  // Origins come from the Host header when no public base URL is configured: bounded.
  if (byUrl.size < MAX_OFFERS) byUrl.set(resourceUrl, signed);
  return signed;
}

/** What a paid answer's receipt states besides its body (see {@link receiptSigner}). */
export interface ReceiptContext {
  /** The public origin the resource URLs use (the key id's `did:web`). */
  base: string;
  /** The paid resource: the absolute request URL. */
  resourceUrl: string;
  payment: VerifiedPayment;
  network: X402Network;
  /** Hex SHA-256 of the canonical request the payment is bound to. */
  requestHash: string;
}

/**
 * Signs the receipt of a paid answer once its body is known and puts it in the answer's
 * `PAYMENT-RESPONSE` and `X-PAYMENT-RESPONSE` (`extensions["offer-receipt"].info.receipt`, x402
 * offer-receipt §5.1): transaction, CAIP-2 network, payer, amount (atomic units), mint, request hash,
 * the SHA-256 of the body and the time (docs/payments.md, "Signed offers and receipts"). Only a 2xx
 * answer whose headers are not sent yet gets one (a receipt confirms delivery). The returned function
 * runs before the answer is stored, so a replay sends the same receipt.
 */
export function receiptSigner(
  issuer: ReceiptIssuer,
  res: ServerResponse,
  context: ReceiptContext,
): (status: number, body: Buffer) => Promise<void> {
  return async (status, body) => {
    if (status < 200 || status >= 300 || res.headersSent) return;
    const receipt = await issuer.receipt(context.base, {
      version: 1,
      network: CAIP2_NETWORKS[context.network],
      resourceUrl: context.resourceUrl,
      payer: context.payment.payer,
      issuedAt: Math.floor(Date.now() / 1000),
      transaction: context.payment.signature,
      amount: context.payment.amountAtomic.toString(),
      asset: context.payment.asset,
      requestHash: context.requestHash,
      responseSha256: sha256Hex(body),
    });
    if (res.headersSent) return;
    const extensions = { [OFFER_RECEIPT]: { info: { receipt } } };
    for (const name of [PAYMENT_RESPONSE_HEADER, PAYMENT_V2_RESPONSE_HEADER]) {
      const value = res.getHeader(name);
      if (typeof value !== 'string') continue;
      const settlement = JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as Record<string, unknown>;
      res.setHeader(name, encodeBase64Json({ ...settlement, extensions }));
    }
  };
}

/**
 * Serves the keys that sign offers and receipts (docs/payments.md, "Signed offers and receipts"):
 * mount it at `/.well-known/jwks.json` (the JWKS, `application/jwk-set+json`) and
 * `/.well-known/did.json` (the did:web document, `application/did+json`, which `@x402/extensions`
 * resolves a `kid` with). Both list the signing key and the published previous ones, with key ids of
 * the public origin; cacheable for 5 minutes.
 * @throws AppError `invalid_request` (400) when, without `publicBaseUrl`, the Host header makes no URL
 */
export function receiptKeysHandler(issuer: ReceiptIssuer, publicBaseUrl: string | undefined): RequestHandler {
  return (req: Request, res: Response) => {
    const base = publicBaseOf(req, publicBaseUrl);
    const did = req.path.endsWith('/did.json');
    let document: unknown;
    try {
      document = did ? issuer.didDocument(base) : issuer.keySet(base);
    } catch (error) {
      throw new AppError('invalid_request', 'The Host header names no origin', { cause: error });
    }
    res.setHeader('cache-control', 'public, max-age=300');
    res.type(did ? 'application/did+json' : 'application/jwk-set+json');
    res.send(JSON.stringify(document));
  };
}
