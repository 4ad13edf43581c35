import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, isAppError, sendAppError } from '@repo/errors';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import { emitPaymentEvent, type PaymentEventListener } from './events';
import { encodePaymentResponse, PAYMENT_HEADER, PAYMENT_RESPONSE_HEADER, parsePaymentHeader } from './header';
import type { PaymentClaim, PaymentKind, PaymentLedger, StoredResponse } from './ledger';
import { processPayment } from './process';
import {
  buildPaymentRequirements,
  networkOfRequest,
  resourceUrlOf,
  sendPaymentRequired,
  X402_VERSION,
  X402_VERSION_HEADER,
} from './requirements';
import type { PaymentVerifier, VerifiedPayment } from './verifier';

/** What every paid route of a service shares: the ledger, one verifier per offered network, hooks. */
export interface PaymentGateway {
  /** The payment ledger (usually a {@link PrismaPaymentLedger} over the service's Prisma client). */
  ledger: PaymentLedger;
  /** The verifier of each offered network; its `asset` and `payTo` are advertised in the 402. */
  verifiers: Partial<Record<X402Network, PaymentVerifier>>;
  /** Optional metrics hook. */
  onPaymentEvent?: PaymentEventListener;
  /** Public origin for `resource` URLs, e.g. `https://api.example.com`; default: from the request. */
  publicBaseUrl?: string;
}

/** The price and description of one paid route. */
export interface PaidRoute {
  /** Price in atomic USDC units (6 decimals), e.g. `100000n` for 0.10 USDC. */
  amountAtomic: bigint;
  /** What is sold, advertised in the requirements. */
  description: string;
  /** MIME type of the paid answer; default `"application/json"`. */
  mimeType?: string;
  /** Advertised seconds to pay; default 60. */
  maxTimeoutSeconds?: number;
  /**
   * Endpoint identity stored with the payment, e.g. `"GET /api/v1/scout/gaps"`. Default:
   * the method and the matched route path (`req.baseUrl + req.route.path`).
   */
  endpoint?: string;
}

/** Options of {@link requirePayment}. */
export type RequirePaymentOptions = PaymentGateway & PaidRoute;

/** Options of {@link acceptPayment}: a gateway, a route, and the endpoint kind. */
export type AcceptPaymentOptions = PaymentGateway & PaidRoute & { kind: PaymentKind };

/** A payment accepted by {@link acceptPayment}: proven and claimed by this request. */
export interface AcceptedPayment {
  /** The verified payment (payer, amount, slot...). */
  payment: VerifiedPayment;
  /** The claim to finish with `ledger.complete`, `ledger.completeWithJob` or `ledger.releaseLease`. */
  claim: PaymentClaim;
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

/**
 * The requirements of a paid route for this request: the network from `?network=`, its verifier's
 * mint and merchant account, the price, and `resource` = the absolute request URL.
 *
 * @throws AppError `invalid_request` (400) for an unknown `network` value or a network not offered
 */
export function requirementsForRequest(
  req: Request,
  gateway: PaymentGateway,
  route: PaidRoute,
): { network: X402Network; verifier: PaymentVerifier; requirements: PaymentRequirements } {
  const network = networkOfRequest(req);
  const verifier = gateway.verifiers[network];
  if (!verifier) throw new AppError('invalid_request', `Payments on ${network} are not offered here`);
  const requirements = {
    ...requirementsTemplate(verifier, route),
    resource: resourceUrlOf(req, gateway.publicBaseUrl),
  };
  return { network, verifier, requirements };
}

/** Validated requirements per verifier and route, all but `resource` (built once: this is every 402's hot path). */
const templates = new WeakMap<PaymentVerifier, WeakMap<PaidRoute, PaymentRequirements>>();

function requirementsTemplate(verifier: PaymentVerifier, route: PaidRoute): PaymentRequirements {
  let byRoute = templates.get(verifier);
  if (!byRoute) templates.set(verifier, (byRoute = new WeakMap()));
  let template = byRoute.get(route);
  if (!template) {
    template = buildPaymentRequirements({
      network: verifier.network,
      asset: verifier.asset,
      payTo: verifier.payTo,
      amountAtomic: route.amountAtomic,
      resource: 'http://localhost/',
      description: route.description,
      mimeType: route.mimeType ?? 'application/json',
      ...(route.maxTimeoutSeconds === undefined ? {} : { maxTimeoutSeconds: route.maxTimeoutSeconds }),
    });
    byRoute.set(route, template);
  }
  return template;
}

/**
 * Answers an error raised while taking a payment: AppError `payment_required` → 402 Error402 with the
 * requirements (`x402-version: 1`, `details.reason`); other AppErrors → the error envelope.
 *
 * @returns `false` when `error` is not an AppError (pass it to `next`)
 */
export function sendPaymentError(
  req: Request,
  res: Response,
  error: unknown,
  accepts: PaymentRequirements[],
): boolean {
  if (!isAppError(error)) return false;
  res.setHeader(X402_VERSION_HEADER, String(X402_VERSION));
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

/** Sends a stored answer again, byte for byte, with its stored headers. */
export function sendStoredResponse(res: Response, stored: StoredResponse): void {
  res.status(stored.status);
  for (const [name, value] of Object.entries(stored.headers)) res.setHeader(name, value);
  res.end(Buffer.from(stored.body, 'utf8'));
}

/**
 * Takes the payment of one request, for endpoints that finish it themselves (the asynchronous compute
 * endpoints): resolves the network, answers 402 when X-PAYMENT is missing, parses it, and runs
 * {@link processPayment}. When it returns `undefined` the answer was already sent (402, 4xx, 503, or a
 * replay of a synchronous endpoint). Otherwise the caller owns the claim: create the job and call
 * `ledger.completeWithJob(claim, jobId, tx)` in the job's transaction, or `ledger.releaseLease(claim)`
 * on failure. Sets `X-PAYMENT-RESPONSE` and `x402-version: 1` on the response.
 *
 * @throws whatever is not an AppError (database failures...), for the error middleware
 */
export async function acceptPayment(
  req: Request,
  res: Response,
  options: AcceptPaymentOptions,
): Promise<AcceptedPayment | undefined> {
  let accepts: PaymentRequirements[] = [];
  try {
    const { network, verifier, requirements } = requirementsForRequest(req, options, options);
    accepts = [requirements];
    const endpoint = options.endpoint ?? endpointOf(req);
    const header = req.get(PAYMENT_HEADER);
    if (header === undefined || header.trim() === '') {
      emitPaymentEvent(options.onPaymentEvent, { type: 'challenged', network, endpoint });
      sendPaymentRequired(req, res, accepts, 'X-PAYMENT header is required');
      return undefined;
    }
    let payload;
    try {
      payload = parsePaymentHeader(header, network);
    } catch (error) {
      emitPaymentEvent(options.onPaymentEvent, {
        type: 'rejected',
        reason: 'invalid_payment_header',
        network,
        endpoint,
      });
      throw error;
    }
    const result = await processPayment({
      ledger: options.ledger,
      verifier,
      payment: payload,
      amountAtomic: options.amountAtomic,
      endpoint,
      kind: options.kind,
      ...(options.onPaymentEvent ? { onPaymentEvent: options.onPaymentEvent } : {}),
    });
    if (result.outcome === 'replay') {
      sendStoredResponse(res, result.response);
      return undefined;
    }
    res.setHeader(X402_VERSION_HEADER, String(X402_VERSION));
    res.setHeader(
      PAYMENT_RESPONSE_HEADER,
      encodePaymentResponse({
        success: true,
        transaction: result.payment.signature,
        network,
        payer: result.payment.payer,
      }),
    );
    return { payment: result.payment, claim: result.claim, requirements };
  } catch (error) {
    if (sendPaymentError(req, res, error, accepts)) return undefined;
    throw error;
  }
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
 * Express middleware for a paid synchronous endpoint (market-intel spec, "Authentication"; ARCHITECTURE.md,
 * "Payments: x402 on Solana"). Place it AFTER the route's query validation (bad parameters are a 400
 * without a charge) and before the handler:
 *
 * `router.get('/scout/gaps', validate({ query }), requirePayment({ ...gateway, amountAtomic: 100000n, description }), handler)`
 *
 * No X-PAYMENT → 402 Error402 + `x402-version: 1`; otherwise parse → claim → verify → mark verified →
 * run the handler while capturing its answer → store it (status < 500: `completed`; 5xx: stays
 * `verified`, a retry re-runs the handler without a new charge). The answer carries
 * `X-PAYMENT-RESPONSE` and `x402-version: 1`; a repeated signature on the same endpoint gets the
 * identical status, headers and body. The verified payment is in `res.locals.x402Payment`.
 */
export function requirePayment(options: RequirePaymentOptions): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    acceptPayment(req, res, { ...options, kind: 'sync' }).then(
      (accepted) => {
        if (!accepted) return;
        (res.locals as PaidRequestLocals).x402Payment = accepted.payment;
        // The stored answer is replayed to every holder of the signature: it must be a full answer,
        // never a 304 computed from this request's conditional headers.
        delete req.headers['if-none-match'];
        delete req.headers['if-modified-since'];
        captureAnswer(res, options.ledger, accepted.claim);
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

/**
 * Wraps `res.write`/`res.end` so the final answer is stored in the ledger before it is sent; a
 * response closed without `end` releases the lease.
 */
function captureAnswer(res: Response, ledger: PaymentLedger, claim: PaymentClaim): void {
  const chunks: Buffer[] = [];
  const target = res as unknown as { write: WriteFn; end: EndFn };
  const originalWrite = target.write;
  const originalEnd = target.end;
  let finished = false;

  target.write = function write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const buffer = toBuffer(chunk, encoding);
    if (buffer) chunks.push(buffer);
    return originalWrite.call(res, chunk, encoding, callback);
  };
  target.end = function end(chunk?: unknown, encoding?: unknown, callback?: unknown): Response {
    if (finished) return originalEnd.call(res, chunk, encoding, callback);
    finished = true;
    target.write = originalWrite;
    target.end = originalEnd;
    const buffer = toBuffer(chunk, encoding);
    if (buffer) chunks.push(buffer);
    const status = res.statusCode;
    const store =
      status >= 500
        ? ledger.releaseLease(claim)
        : ledger.complete(claim, {
            status,
            headers: storedHeaders(res),
            body: Buffer.concat(chunks).toString('utf8'),
          });
    store
      .catch(() => {
        // The answer still goes out; the row stays `verified` and a retry re-runs the handler after the lease.
      })
      .finally(() => originalEnd.call(res, chunk, encoding, callback));
    return res;
  };
  res.on('close', () => {
    if (!finished) {
      finished = true;
      ledger.releaseLease(claim).catch(() => undefined);
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
