import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, isAppError, requestIdOf, sendAppError } from '@repo/errors';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import {
  buildPaymentRequirements,
  CAIP2_NETWORKS,
  DEFAULT_MAX_TIMEOUT_SECONDS,
  encodeBase64Json,
  encodePaymentResponse,
  parsePaymentProof,
  PAYMENT_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
  X402_VERSION,
  X402_VERSION_HEADER,
  type PaymentProof,
  type PaymentRequiredV2,
  type PaymentRequirementsV2,
  type SettleResponseV2,
  type PaymentVerifier,
  type ResourceDiscovery,
  type VerifiedPayment,
  canonicalRequestText,
  requestHash,
  requestReference,
  v1OutputSchema,
} from '@repo/x402-core';
import type {
  AttemptCounter,
  PaymentClaim,
  PaymentKind,
  PaymentLedger,
  StoredResponse,
} from '@repo/x402-ledger';
import { ExactSvmSettler, SettlementRefusedError, type SettlementKey } from '@repo/x402-solana';
import { bazaarExtensions } from './discovery';
import { emitPaymentEvent, type PaymentEventListener } from './events';
import { processPayment } from './process';
import { paidAnswerSent } from './paid-answers';
import { networkOfQuery, networkOfRequest, resourceUrlOf, sendPaymentRequired } from './request';

/** What every paid route of a service shares: the ledger, one verifier per offered network, hooks. */
export interface PaymentGateway {
  /** The payment ledger (usually a {@link PrismaPaymentLedger} over the service's Prisma client). */
  ledger: PaymentLedger;
  /** The verifier of each offered network; its `asset` and `payTo` are advertised in the 402. */
  verifiers: Partial<Record<X402Network, PaymentVerifier>>;
  /**
   * The official exact SVM scheme per network (fee payer configured): offered in `PAYMENT-REQUIRED`
   * and settling `payload.transaction` payments. A network without one offers push mode only.
   */
  settlers?: Partial<Record<X402Network, ExactSvmSettler>>;
  /**
   * Asked before each official-scheme settlement (a refused transaction still costs the fee payer
   * its fee): rate limits per payer wallet and per client, shared by replicas. Absent: no limit.
   */
  settlementGuard?: SettlementGuard;
  /** Optional metrics hook. */
  onPaymentEvent?: PaymentEventListener;
  /** Public origin for `resource` URLs, e.g. `https://api.example.com`; default: from the request. */
  publicBaseUrl?: string;
  /**
   * Request-bound payments (README, "Request-bound payments"): every requirement carries
   * `extra.reference`, derived from the request with `secret`, and a push payment carrying another
   * request's reference is refused without being consumed; with `required`, a push payment must carry
   * one. Absent: no reference is offered or checked.
   */
  references?: { secret: string | Uint8Array; required?: boolean };
  /**
   * Bounds the RPC cost of push payments that do not verify (random or foreign signatures): e.g. a
   * limit per client address shared by replicas. Refused: `429 rate_limited` with `Retry-After`;
   * nothing is consumed. Absent: no limit.
   */
  verificationGuard?: VerificationGuard;
}

/** A client's push payment attempt: `ip` is the client address (`req.ip`). */
export interface VerificationAttempt {
  ip: string | undefined;
  network: X402Network;
}

/**
 * A limit on push payments that do not verify, per client: `check` counts an attempt before a new
 * push payment is verified on chain (refused: `429 rate_limited` with `Retry-After` seconds, no RPC
 * call), and `verified` gives it back once the payment verified. What stays counted are the attempts
 * in flight and those that failed (each cost RPC calls), so a concurrent flood is bounded too.
 */
export interface VerificationGuard {
  /** Counts an attempt of the client, or refuses it. */
  check(
    attempt: VerificationAttempt,
  ): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }>;
  /** Gives back the attempt of a payment that verified. */
  verified(attempt: VerificationAttempt): Promise<void>;
  /**
   * Optional: where `check` and `verified` count, as a counter row of the ledger's database, so that
   * the ledger counts the attempt in its claim statement and gives it back in its verified mark: two
   * PostgreSQL round trips fewer per push payment (README, "The paid path's statements"). It must name
   * the very row `check` and `verified` use, with the same limit and window: they still count the
   * sightings ({@link recordPaymentSighting}), give back the attempt of an RPC failure, and stand in
   * for a ledger that does not count.
   */
  counter?(attempt: VerificationAttempt): AttemptCounter;
}

/**
 * Decides whether an official-scheme settlement may go ahead, once its claim is held (README, "Paying
 * with an official x402 client"): `ip` is the client address (`req.ip`), `payer` the wallet whose
 * Ed25519 signature of the transaction was checked (so nobody spends another wallet's limits),
 * `source` the token account its transfer debits (absent when it comes from a lookup table).
 * Allowed: `release`, when given, is called once the settlement ended, whatever its outcome (an
 * in-flight slot is given back). Refused: the answer is `429 rate_limited` with `Retry-After`
 * (seconds) and `details.limit` (`client`, `payer`, or `payer_in_flight`: another settlement of this
 * payer and source is still running); nothing is sent and the claim is dropped.
 */
export type SettlementGuard = (settlement: {
  ip: string | undefined;
  payer: string | undefined;
  source: string | undefined;
  network: X402Network;
}) => Promise<
  | { allowed: true; release?: () => Promise<void> }
  | { allowed: false; retryAfterSeconds: number; limit: SettlementLimit }
>;

/** Which limit refused a settlement (`details.limit` of the 429). */
export type SettlementLimit = 'client' | 'payer' | 'payer_in_flight';

/** The message of a settlement refused by each limit, given the seconds to wait. */
const SETTLEMENT_REFUSALS: Readonly<Record<SettlementLimit, (seconds: number) => string>> = {
  client: (s) => `Too many payment settlements from this client; retry in ${s} s`,
  payer: (s) => `Too many payment settlements for this payer wallet; retry in ${s} s`,
  payer_in_flight: (s) =>
    `Another payment of this payer wallet from the same token account is being settled; retry in ${s} s`,
};

/** The price and description of one paid route. */
export interface PaidRoute {
  /** Price in atomic USDC units (6 decimals), e.g. `100000n` for 0.10 USDC. */
  amountAtomic: bigint;
  /** What is sold, advertised in the requirements. */
  description: string;
  /** MIME type of the paid answer; default `"application/json"`. */
  mimeType?: string;
  /**
   * Advertised seconds to pay in the official scheme's offer (its transaction must land while its
   * blockhash is valid, about 60 to 90 s); default 60. The push requirement advertises its
   * verifier's `maxTimeoutSeconds` (the freshness window it enforces) when the verifier has one.
   */
  maxTimeoutSeconds?: number;
  /**
   * Endpoint identity stored with the payment, e.g. `"GET /api/v1/scout/gaps"`. Default:
   * the method and the matched route path (`req.baseUrl + req.route.path`).
   */
  endpoint?: string;
  /**
   * How to call the resource and what it answers, for x402 discovery: `outputSchema` in the v1
   * requirement and the `bazaar` extension in `PAYMENT-REQUIRED` (README, "Discovery").
   */
  discovery?: ResourceDiscovery;
}

/** Options of {@link requirePayment}. */
export type RequirePaymentOptions = PaymentGateway & PaidRoute;

/**
 * Options of {@link acceptPayment}: a gateway, a route, and the endpoint kind; `deferVerifiedMark`
 * leaves the verified mark to the caller's completion ({@link processPayment}'s option of that name).
 */
export type AcceptPaymentOptions = PaymentGateway &
  PaidRoute & { kind: PaymentKind; deferVerifiedMark?: boolean };

/** A payment accepted by {@link acceptPayment}: proven and claimed by this request. */
export interface AcceptedPayment {
  /** The verified payment (payer, amount, slot...). */
  payment: VerifiedPayment;
  /** The claim to finish with `ledger.complete`, `ledger.completeWithJob` or `ledger.releaseLease`. */
  claim: PaymentClaim;
  /**
   * With `deferVerifiedMark`: the verification the ledger does not hold yet, to pass to the
   * completion (`ledger.complete`, `ledger.releaseLease`) or to `ledger.markVerified`.
   */
  unrecorded?: VerifiedPayment;
  /** The requirements that were paid. */
  requirements: PaymentRequirements;
}

/**
 * The endpoint identity of a request: `"<METHOD> <baseUrl><route path>"`, e.g. `"GET /api/v1/scout/gaps"`.
 */
export function endpointOf(req: Request): string {
  const route = (req as Request & { route?: { path?: unknown } }).route;
  const path = typeof route?.path === 'string' ? `${req.baseUrl}${route.path}` : `${req.baseUrl}${req.path}`;
  return `${req.method} ${path}`;
}

/** The v2 offer of a request, when its network has an {@link ExactSvmSettler}. */
export interface OfferV2 {
  settler: ExactSvmSettler;
  requirements: PaymentRequirementsV2;
  /** What is paid for (`resource` of the `PAYMENT-REQUIRED` header). */
  resource: { url: string; description: string; mimeType: string };
  /** `extensions` of the `PAYMENT-REQUIRED` header (the `bazaar` discovery extension, or none). */
  extensions: Record<string, unknown>;
  /**
   * This request's Solana Pay reference, advertised in the offer's `extra.reference` and as its
   * `extra.memo`: the official client writes the memo into the transaction, and the official
   * facilitator refuses a transaction whose memo is not this request's, so an official-scheme payment
   * is bound to its request on chain too.
   */
  reference?: string;
}

/**
 * The one requirement of a request's v2 offer, as `PAYMENT-REQUIRED` advertises it, the payer's
 * `accepted` must equal and the facilitator settles against: the route's offer with this request's
 * `extra.reference` and `extra.memo` (when references are configured).
 */
export function offeredRequirements(offer: OfferV2): PaymentRequirementsV2 {
  return offer.reference === undefined
    ? offer.requirements
    : {
        ...offer.requirements,
        extra: { ...offer.requirements.extra, reference: offer.reference, memo: offer.reference },
      };
}

/**
 * The requirements of a paid route for this request: the network from `?network=`, its verifier's
 * mint and merchant account, the price, `resource` = the absolute request URL and, with references
 * configured, `extra.reference` = this request's reference; plus the v2 offer of the official exact
 * scheme when the network has a settler.
 *
 * @throws AppError `invalid_request` (400) for an unknown `network` value or a network not offered
 */
export function requirementsForRequest(
  req: Request,
  gateway: PaymentGateway,
  route: PaidRoute,
): {
  network: X402Network;
  verifier: PaymentVerifier;
  /** The push requirement (the spec's: `payTo` is the merchant's token account). */
  requirements: PaymentRequirements;
  /**
   * The body's `accepts`: the push requirement, then, when the network has a settler, the official
   * exact scheme in v1 form (`payTo` the merchant wallet, `extra.feePayer`), which a v1 `exact` SVM
   * client pays with `payload.transaction`.
   */
  accepts: PaymentRequirements[];
  offer: OfferV2 | undefined;
  reference: string | undefined;
  /** The request's canonical text (`canonicalRequestText`), built now only when a reference needed it. */
  canonical: string | undefined;
  /** The request URL, parsed once. */
  url: URL;
} {
  const url = new URL(req.originalUrl || req.url, 'http://localhost');
  const network = networkOfQuery(url.searchParams);
  const verifier = gateway.verifiers[network];
  if (!verifier) throw new AppError('invalid_request', `Payments on ${network} are not offered here`);
  const template = requirementsTemplate(verifier, route);
  const canonical = gateway.references ? canonicalTextOf(req, url) : undefined;
  const reference =
    gateway.references && canonical !== undefined
      ? requestReference(gateway.references.secret, canonical)
      : undefined;
  const requirements: PaymentRequirements = {
    ...template,
    resource: resourceUrlOf(req, gateway.publicBaseUrl),
    ...(reference === undefined ? {} : { extra: { ...template.extra, reference } }),
  };
  const settler = gateway.settlers?.[network];
  const offer: OfferV2 | undefined = settler && {
    settler,
    requirements: offerTemplate(settler, route),
    resource: { url: requirements.resource, description: template.description, mimeType: template.mimeType },
    extensions: extensionsOf(route),
    ...(reference === undefined ? {} : { reference }),
  };
  const accepts = offer
    ? [
        requirements,
        { ...officialV1Template(offer.settler, route), resource: requirements.resource, ...v1ExtraOf(offer) },
      ]
    : [requirements];
  return { network, verifier, requirements, accepts, offer, reference, canonical, url };
}

/** The `extra` of the official scheme's v1 requirement of a request: its v2 offer's. */
function v1ExtraOf(offer: OfferV2): { extra: Record<string, unknown> } {
  return { extra: offeredRequirements(offer).extra ?? {} };
}

const officialV1Templates = new WeakMap<ExactSvmSettler, WeakMap<PaidRoute, PaymentRequirements>>();

/**
 * The official scheme's requirement in the v1 body, all but `resource` and `extra` (built once per
 * settler and route): the v2 offer's price, mint, merchant wallet and timeout in v1 field names.
 */
function officialV1Template(settler: ExactSvmSettler, route: PaidRoute): PaymentRequirements {
  return perRoute(officialV1Templates, settler, route, () =>
    buildPaymentRequirements({
      network: settler.network,
      asset: settler.asset,
      payTo: settler.payTo,
      amountAtomic: route.amountAtomic,
      resource: 'http://localhost/',
      description: route.description,
      mimeType: route.mimeType ?? 'application/json',
      maxTimeoutSeconds: route.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS,
    }),
  );
}

/**
 * The canonical text of a request (method, path, sorted query, body hash): its reference is the HMAC
 * of it, and the hash its payment is bound to in the ledger is the SHA-256 of it.
 */
function canonicalTextOf(req: Request, url: URL): string {
  return canonicalRequestText({
    method: req.method,
    path: url.pathname,
    query: url.searchParams,
    bodySha256: bodyHash(req),
  });
}

const offers = new WeakMap<ExactSvmSettler, WeakMap<PaidRoute, PaymentRequirementsV2>>();
// Keyed by the discovery object, which routes declare once (options objects may be per request).
const discoveryExtensions = new WeakMap<ResourceDiscovery, Record<string, unknown>>();

function extensionsOf(route: PaidRoute): Record<string, unknown> {
  if (!route.discovery) return {};
  let extensions = discoveryExtensions.get(route.discovery);
  if (!extensions) {
    extensions = bazaarExtensions(route.discovery);
    discoveryExtensions.set(route.discovery, extensions);
  }
  return extensions;
}

/**
 * What `build` makes for `owner` (a verifier or settler) and `route`, built once: requirements are
 * validated on their first request, then every 402 reuses them.
 */
function perRoute<K extends object, V>(
  cache: WeakMap<K, WeakMap<PaidRoute, V>>,
  owner: K,
  route: PaidRoute,
  build: () => V,
): V {
  let byRoute = cache.get(owner);
  if (!byRoute) cache.set(owner, (byRoute = new WeakMap()));
  let value = byRoute.get(route);
  if (value === undefined) {
    value = build();
    byRoute.set(route, value);
  }
  return value;
}

function offerTemplate(settler: ExactSvmSettler, route: PaidRoute): PaymentRequirementsV2 {
  return perRoute(offers, settler, route, () =>
    settler.requirements(route.amountAtomic, route.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS),
  );
}

/**
 * The `PAYMENT-REQUIRED` header value of a 402: base64 JSON of a v2 `PaymentRequired` with the one
 * official-scheme offer (README, "Paying with an official x402 client").
 */
export function paymentRequiredHeader(offer: OfferV2, error: string): string {
  const body: PaymentRequiredV2 = {
    x402Version: 2,
    error,
    resource: offer.resource,
    accepts: [offeredRequirements(offer)],
    extensions: offer.extensions,
  };
  return encodeBase64Json(body);
}

/** Validated requirements per verifier and route, all but `resource` (built once: this is every 402's hot path). */
const templates = new WeakMap<PaymentVerifier, WeakMap<PaidRoute, PaymentRequirements>>();

function requirementsTemplate(verifier: PaymentVerifier, route: PaidRoute): PaymentRequirements {
  return perRoute(templates, verifier, route, () =>
    buildPaymentRequirements({
      network: verifier.network,
      asset: verifier.asset,
      payTo: verifier.payTo,
      amountAtomic: route.amountAtomic,
      resource: 'http://localhost/',
      description: route.description,
      mimeType: route.mimeType ?? 'application/json',
      // What is advertised is what is enforced: the verifier's own window when it has one.
      ...((verifier.maxTimeoutSeconds ?? route.maxTimeoutSeconds) === undefined
        ? {}
        : { maxTimeoutSeconds: verifier.maxTimeoutSeconds ?? route.maxTimeoutSeconds }),
      ...(route.discovery ? { outputSchema: v1OutputSchema(route.discovery) } : {}),
    }),
  );
}

/**
 * Answers an error raised while taking a payment: AppError `payment_required` → 402 Error402 with the
 * requirements (`x402-version: 1`, `details.reason`, and `PAYMENT-REQUIRED` when `offer` is given);
 * other AppErrors → the error envelope.
 *
 * @returns `false` when `error` is not an AppError (pass it to `next`)
 */
export function sendPaymentError(
  req: Request,
  res: Response,
  error: unknown,
  accepts: PaymentRequirements[],
  offer?: OfferV2,
): boolean {
  if (!isAppError(error)) return false;
  res.setHeader(X402_VERSION_HEADER, String(X402_VERSION));
  // Every refusal carries the offer, its `error` the reason's code as the official server puts it.
  if (offer) res.setHeader(PAYMENT_REQUIRED_HEADER, paymentRequiredHeader(offer, reasonOf(error)));
  if (error.code === 'payment_required') {
    const details =
      error.details !== null && typeof error.details === 'object'
        ? (error.details as Record<string, unknown>)
        : undefined;
    sendPaymentRequired(req, res, accepts, error.message, details);
  } else {
    sendAppError(req, res, error);
  }
  return true;
}

/**
 * Sends a stored answer again, byte for byte, with its stored headers; with `network` (the payment's),
 * a listener of the response's paid answer (`onPaidAnswer`, the hot path) is told of it.
 */
export function sendStoredResponse(res: Response, stored: StoredResponse, network?: X402Network): void {
  const body = Buffer.from(stored.body, 'utf8');
  if (network) paidAnswerSent(res, { network, status: stored.status, headers: stored.headers, body });
  res.status(stored.status);
  for (const [name, value] of Object.entries(stored.headers)) res.setHeader(name, value);
  res.end(body);
}

/**
 * Takes the payment of one request, for endpoints that finish it themselves (the asynchronous compute
 * endpoints): resolves the network, answers 402 (the v1 body, plus `PAYMENT-REQUIRED` when the network
 * offers the official scheme) when neither `PAYMENT-SIGNATURE` nor `X-PAYMENT` is present, parses the
 * payment ({@link parsePaymentProof}), and runs {@link processPayment} — for a `payload.transaction`
 * payment with the claim key computed up front and the settlement after the claim. When it returns
 * `undefined` the answer was already sent (402, 4xx, 503, or a replay of a synchronous endpoint).
 * Otherwise the caller owns the claim: create the job and call `ledger.completeWithJob(claim, jobId,
 * tx)` in the job's transaction, or `ledger.releaseLease(claim)` on failure. Pass the same `options`
 * object for every request of a route: the route's requirements are built and validated once per
 * object (and verifier), not per request. Sets `X-PAYMENT-RESPONSE`
 * (v1 network name), `PAYMENT-RESPONSE` (CAIP-2 network) and `x402-version: 1` on the response.
 *
 * @throws whatever is not an AppError (database failures...), for the error middleware
 */
export async function acceptPayment(
  req: Request,
  res: Response,
  options: AcceptPaymentOptions,
): Promise<AcceptedPayment | undefined> {
  let accepts: PaymentRequirements[] = [];
  let offer: OfferV2 | undefined;
  // An official-scheme payment once its key is known, and whether its settlement was tried.
  let official: { transaction: string; payer: string | undefined; network: X402Network } | undefined;
  let settleTried = false;
  try {
    const request = requirementsForRequest(req, options, options);
    const { network, verifier, requirements } = request;
    accepts = request.accepts;
    offer = request.offer;
    const endpoint = options.endpoint ?? endpointOf(req);
    const v2Header = req.get(PAYMENT_SIGNATURE_HEADER);
    const header = v2Header ?? req.get(PAYMENT_HEADER);
    if (header === undefined || header.trim() === '') {
      emitPaymentEvent(options.onPaymentEvent, { type: 'challenged', network, endpoint });
      const error = 'X-PAYMENT header is required';
      if (offer) res.setHeader(PAYMENT_REQUIRED_HEADER, paymentRequiredHeader(offer, V2_PAYMENT_MISSING));
      sendPaymentRequired(req, res, accepts, error);
      return undefined;
    }
    let proof: PaymentProof;
    let signature: string;
    let payer: string | undefined;
    let source: string | undefined;
    try {
      proof = parsePaymentProof(header, network, v2Header === undefined ? 'X-PAYMENT' : 'PAYMENT-SIGNATURE');
      if (proof.kind === 'signature') signature = proof.txSignature;
      else {
        ({ signature, payer, source } = await signatureToClaim(proof, offer));
        official = { transaction: signature, payer, network };
      }
    } catch (error) {
      const malformed = isAppError(error) && error.code === 'invalid_payment_header';
      emitPaymentEvent(options.onPaymentEvent, {
        type: 'rejected',
        reason: malformed ? 'invalid_payment_header' : 'scheme_refused',
        network,
        endpoint,
      });
      // A malformed payment header is a 402 with the Error402 body (README, "Paying with our client"),
      // `details.reason` the specification's code the parser named (`invalid_payload`, ...).
      if (malformed)
        throw new AppError('payment_required', error.message, {
          details: {
            reason: 'invalid_payload',
            ...(typeof error.details === 'object' && error.details !== null ? error.details : {}),
          },
          cause: error,
        });
      throw error;
    }
    const settling =
      proof.kind === 'transaction' && offer ? { ...offer, transaction: proof.transaction } : undefined;
    const guard = options.settlementGuard;
    const ip = req.ip; // a getter that parses the forwarding chain on every read
    const settle = settling
      ? async () => {
          const decision = await guard?.({ ip, payer, source, network });
          if (decision && !decision.allowed) {
            emitPaymentEvent(options.onPaymentEvent, {
              type: 'rejected',
              reason: 'rate_limited',
              network,
              endpoint,
            });
            throw new AppError(
              'rate_limited',
              SETTLEMENT_REFUSALS[decision.limit](decision.retryAfterSeconds),
              {
                details: { limit: decision.limit },
                headers: { 'Retry-After': String(decision.retryAfterSeconds) },
              },
            );
          }
          settleTried = true;
          try {
            return await settling.settler.settle(settling.transaction, offeredRequirements(settling));
          } finally {
            await decision?.release?.().catch(() => undefined);
          }
        }
      : undefined;
    const verificationGuard = options.verificationGuard;
    const result = await processPayment({
      ledger: options.ledger,
      verifier,
      signature,
      network,
      ...(settle ? { settle } : {}),
      ...(request.reference === undefined
        ? {}
        : { reference: request.reference, requireReference: options.references?.required ?? false }),
      ...(verificationGuard
        ? {
            guard: {
              check: () => verificationGuard.check({ ip, network }),
              verified: () => verificationGuard.verified({ ip, network }),
              ...(verificationGuard.counter ? { counter: verificationGuard.counter({ ip, network }) } : {}),
            },
          }
        : {}),
      amountAtomic: options.amountAtomic,
      endpoint,
      kind: options.kind,
      requestHash: requestHash(request.canonical ?? canonicalTextOf(req, request.url)),
      ...(options.onPaymentEvent ? { onPaymentEvent: options.onPaymentEvent } : {}),
      ...(options.deferVerifiedMark ? { deferVerifiedMark: true } : {}),
    });
    if (result.outcome === 'replay') {
      sendStoredResponse(res, result.response, network);
      return undefined;
    }
    const settlement = { success: true, transaction: result.payment.signature, payer: result.payment.payer };
    res.setHeader(X402_VERSION_HEADER, String(X402_VERSION));
    res.setHeader(PAYMENT_RESPONSE_HEADER, encodePaymentResponse({ ...settlement, network }));
    res.setHeader(
      PAYMENT_V2_RESPONSE_HEADER,
      encodeBase64Json({ ...settlement, network: CAIP2_NETWORKS[network] }),
    );
    return {
      payment: result.payment,
      claim: result.claim,
      requirements,
      ...(result.unrecorded ? { unrecorded: result.unrecorded } : {}),
    };
  } catch (error) {
    // A settlement that was tried and failed, or that another request is still running (x402 v2,
    // "PAYMENT-RESPONSE"): the payer learns its outcome the way the official clients read it.
    const pending = isAppError(error) && error.code === 'service_unavailable';
    if (official && (settleTried || pending) && isAppError(error))
      res.setHeader(
        PAYMENT_V2_RESPONSE_HEADER,
        encodeBase64Json({
          success: false,
          errorReason: pending ? 'settlement_pending' : reasonOf(error),
          errorMessage: error.message,
          transaction: official.transaction,
          network: CAIP2_NETWORKS[official.network],
          ...(official.payer === undefined ? {} : { payer: official.payer }),
        } satisfies SettleResponseV2),
      );
    if (sendPaymentError(req, res, error, accepts, offer)) return undefined;
    throw error;
  }
}

/** The `PaymentRequired.error` of a 402 without a payment (the x402 v2 HTTP transport's wording). */
const V2_PAYMENT_MISSING = 'PAYMENT-SIGNATURE header is required';

/**
 * The machine-readable reason of a payment refusal: its `details.reason` (the specification's or the
 * facilitator's code, e.g. `invalid_payload`, `invalid_exact_svm_payload_amount_mismatch`,
 * `not_found`), else its error code (`payment_reused`, `rate_limited`...).
 */
function reasonOf(error: AppError): string {
  const details = error.details as { reason?: unknown } | null | undefined;
  return typeof details?.reason === 'string' ? details.reason : error.code;
}

/**
 * Records the push payment a request carries as seen, without taking it, for an answer given before
 * the payment is looked at (a compute preflight's 503 with `Retry-After`): when the payer retries
 * with it, its freshness counts from now (README, "Paying for data (x402)"). Each sighting counts as
 * an attempt of the client against `verificationGuard` (a flood of random signatures cannot fill the
 * ledger), and over the limit nothing is recorded. Best effort: no payment header, a malformed one, an
 * official-scheme transaction (this server sends those itself), a network not offered, or a database
 * failure record nothing and throw nothing.
 */
export async function recordPaymentSighting(req: Request, options: AcceptPaymentOptions): Promise<void> {
  const v2Header = req.get(PAYMENT_SIGNATURE_HEADER);
  const header = v2Header ?? req.get(PAYMENT_HEADER);
  if (header === undefined || header.trim() === '') return;
  try {
    const network = networkOfRequest(req);
    if (!options.verifiers[network]) return;
    const proof = parsePaymentProof(
      header,
      network,
      v2Header === undefined ? 'X-PAYMENT' : 'PAYMENT-SIGNATURE',
    );
    if (proof.kind !== 'signature') return;
    const decision = await options.verificationGuard?.check({ ip: req.ip, network });
    if (decision && !decision.allowed) return;
    await options.ledger.recordSighting({
      signature: proof.txSignature,
      network,
      endpoint: options.endpoint ?? endpointOf(req),
      kind: options.kind,
      requestHash: requestHash(canonicalTextOf(req, new URL(req.originalUrl || req.url, 'http://localhost'))),
    });
  } catch {
    // The answer being sent (a 503) matters more than the sighting.
  }
}

/**
 * The ledger key of an official-scheme payment (the signature its transaction will have once this
 * server co-signs it), its payer wallet (its signature checked) and source token account, after
 * checking that the network offers the scheme and that a v2 payment accepted exactly this offer.
 * @throws AppError `payment_required` (402) when the scheme is not offered on the network, the
 *   accepted offer differs, or the transaction is not one this server can co-sign
 */
async function signatureToClaim(
  proof: PaymentProof & { kind: 'transaction' },
  offer: OfferV2 | undefined,
): Promise<SettlementKey> {
  const refuse = (reason: string, message: string): never => {
    throw new AppError('payment_required', message, { details: { reason } });
  };
  if (!offer)
    return refuse(
      'unsupported_scheme',
      `payload.transaction payments are not accepted on ${proof.network} here; pay in push mode (payload.txSignature)`,
    );
  if (proof.accepted && !isDeepStrictEqual(proof.accepted, offeredRequirements(offer)))
    return refuse(
      'invalid_payment_requirements',
      'The payment accepted an offer this server did not make; use the PAYMENT-REQUIRED offer',
    );
  try {
    return await offer.settler.signatureOf(proof.transaction);
  } catch (error) {
    if (error instanceof SettlementRefusedError) return refuse(error.reason, error.message);
    throw error;
  }
}

/** Hex SHA-256 of the parsed request body (as JSON): a genuine retry sends the same body. */
function bodyHash(req: Request): string {
  return createHash('sha256')
    .update(JSON.stringify(req.body ?? null))
    .digest('hex');
}

/** Headers that belong to one connection or one request and are not stored for replay. */
const UNSTORED_HEADERS = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'x-request-id',
  'set-cookie',
]);

/** The request object carries the accepted payment for the route handler. */
export interface PaidRequestLocals {
  /** The verified payment of this request (set by {@link requirePayment}). */
  x402Payment?: VerifiedPayment;
}

/**
 * Express middleware for a paid synchronous endpoint (README, "Paying for data (x402)";
 * docs/architecture.md, "How a paid request flows (market-intel)"). Place it AFTER the route's query
 * validation (bad parameters are a 400 without a charge) and before the handler:
 *
 * `router.get('/scout/gaps', validate({ query }), requirePayment({ ...gateway, amountAtomic: 100000n, description }), handler)`
 *
 * No X-PAYMENT → 402 Error402 + `x402-version: 1`; otherwise parse → claim → verify → run the handler
 * while capturing its answer → store it with the verification in one statement (status < 500:
 * `completed`; 5xx: `verified`, a retry re-runs the handler without a new charge; a handler still
 * running after {@link VERIFIED_MARK_DELAY_MS} gets the verified mark on its own first: README, "The
 * paid path's statements"). The answer carries `X-PAYMENT-RESPONSE` and `x402-version: 1`; a repeated
 * signature on the same endpoint gets the identical status, headers and body. The verified payment is in `res.locals.x402Payment`.
 */
export function requirePayment(options: RequirePaymentOptions): RequestHandler {
  // One object for every request of the route: its requirements are built and validated once.
  const accept: AcceptPaymentOptions = { ...options, kind: 'sync', deferVerifiedMark: true };
  return (req: Request, res: Response, next: NextFunction) => {
    acceptPayment(req, res, accept).then(
      (accepted) => {
        if (!accepted) return;
        (res.locals as PaidRequestLocals).x402Payment = accepted.payment;
        // The stored answer is replayed to every holder of the signature: it must be a full answer,
        // never a 304 computed from this request's conditional headers.
        delete req.headers['if-none-match'];
        delete req.headers['if-modified-since'];
        captureAnswer(req, res, options.ledger, accepted.claim, accepted.unrecorded);
        next();
      },
      (error: unknown) => next(error),
    );
  };
}

type EndFn = (chunk?: unknown, encoding?: unknown, callback?: unknown) => Response;
type WriteFn = (chunk: unknown, encoding?: unknown, callback?: unknown) => boolean;

function toBuffer(chunk: unknown, encoding: unknown): Buffer | undefined {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined;
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
}

/** Headers of the answer that must not survive when it is replaced by a 503. */
const ANSWER_HEADERS = [
  'content-type',
  'content-length',
  'etag',
  'last-modified',
  'cache-control',
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
];

/**
 * Longest time, in milliseconds, a paid handler runs before its verification is recorded on its own
 * (at most a third of the ledger's lease); a faster handler's answer records it in the same statement.
 */
export const VERIFIED_MARK_DELAY_MS = 1000;

/**
 * Wraps `res.write`/`res.end` so that the final answer is sent only once it is stored in the ledger
 * (one payment, one answer): while the handler runs the claim's lease is renewed every third of the
 * lease; when storing fails or the claim was taken over, the answer is replaced by a `503
 * service_unavailable` with `Retry-After: 1` (a retry replays the stored answer or, if none was
 * stored, runs the handler once more). A handler that already streamed part of its answer is cut off
 * instead. A response closed without `end` releases the lease.
 *
 * `unrecorded` is a verification the ledger does not hold yet: the stored answer (or, after a 5xx, a
 * failed store or a closed response, the released lease) records it in the same statement, or the
 * verified mark does once the handler has run for {@link VERIFIED_MARK_DELAY_MS}.
 */
function captureAnswer(
  req: Request,
  res: Response,
  ledger: PaymentLedger,
  claim: PaymentClaim,
  unrecorded: VerifiedPayment | undefined,
): void {
  const chunks: Buffer[] = [];
  const target = res as unknown as { write: WriteFn; end: EndFn };
  const originalWrite = target.write;
  const originalEnd = target.end;
  let finished = false;
  const renewal = setInterval(
    () => void ledger.renewLease(claim).catch(() => undefined),
    Math.max(100, Math.floor(ledger.leaseMs / 3)),
  );
  renewal.unref();
  let pending = unrecorded;
  let recording: Promise<void> = Promise.resolve();
  const marking =
    unrecorded &&
    setTimeout(
      () => {
        const payment = pending;
        if (!payment) return;
        pending = undefined;
        // A failed mark leaves the verification to the completion; a lost lease fails that too.
        recording = ledger.markVerified(claim, payment).then(
          () => undefined,
          () => {
            pending = payment;
          },
        );
      },
      Math.min(VERIFIED_MARK_DELAY_MS, Math.floor(ledger.leaseMs / 3)),
    );
  marking?.unref();
  const stop = (): void => {
    clearInterval(renewal);
    clearTimeout(marking);
  };
  const release = async (): Promise<void> => {
    await recording;
    await ledger.releaseLease(claim, pending);
  };
  const store = async (response: StoredResponse): Promise<boolean> => {
    await recording;
    const payment = pending;
    try {
      return await ledger.complete(claim, response, payment);
    } catch (error) {
      // The payment stays verified even when its answer cannot be stored.
      if (payment) await ledger.releaseLease(claim, payment).catch(() => undefined);
      throw error;
    }
  };

  target.write = function write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const buffer = toBuffer(chunk, encoding);
    if (buffer) chunks.push(buffer);
    return originalWrite.call(res, chunk, encoding, callback);
  };
  target.end = function end(chunk?: unknown, encoding?: unknown, callback?: unknown): Response {
    if (finished) return originalEnd.call(res, chunk, encoding, callback);
    finished = true;
    stop();
    target.write = originalWrite;
    target.end = originalEnd;
    const buffer = toBuffer(chunk, encoding);
    if (buffer) chunks.push(buffer);
    const status = res.statusCode;
    let answer: { status: number; headers: Record<string, string | string[]>; body: Buffer } | undefined;
    let stored: Promise<boolean>;
    if (status >= 500) {
      stored = release().then(
        () => true,
        () => true, // the lease expires on its own; a 5xx is no answer to keep
      );
    } else {
      answer = { status, headers: storedHeaders(res), body: Buffer.concat(chunks) };
      stored = store({ status, headers: answer.headers, body: answer.body.toString('utf8') });
    }
    stored
      .catch(() => false)
      .then((ok) => {
        if (ok) {
          if (answer) paidAnswerSent(res, { network: claim.network, ...answer });
          originalEnd.call(res, chunk, encoding, callback);
          return;
        }
        if (res.headersSent) {
          res.destroy();
          return;
        }
        for (const name of ANSWER_HEADERS) res.removeHeader(name);
        res.statusCode = 503;
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.setHeader('retry-after', '1');
        originalEnd.call(
          res,
          JSON.stringify({
            error:
              'The paid answer could not be recorded; retry with the same payment (it is not charged twice)',
            code: 'service_unavailable',
            requestId: requestIdOf(req),
          }),
        );
      });
    return res;
  };
  res.on('close', () => {
    stop();
    if (!finished) {
      finished = true;
      release().catch(() => undefined);
    }
  });
}

function storedHeaders(res: Response): Record<string, string | string[]> {
  const stored: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(res.getHeaders())) {
    if (value === undefined || UNSTORED_HEADERS.has(name.toLowerCase())) continue;
    stored[name.toLowerCase()] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return stored;
}
