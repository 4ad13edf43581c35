import { isDeepStrictEqual } from 'node:util';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, isAppError } from '@repo/errors';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import {
  CAIP2_NETWORKS,
  encodeBase64Json,
  encodePaymentResponse,
  parsePaymentProof,
  PAYMENT_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
  requestHash,
  X402_VERSION,
  X402_VERSION_HEADER,
  type PaymentProof,
  type SettleResponseV2,
} from '@repo/x402-core';
import { SettlementRefusedError, type SettlementKey } from '@repo/x402-solana';
import { captureAnswer } from './capture';
import { emitPaymentEvent } from './events';
import type {
  AcceptedPayment,
  AcceptPaymentOptions,
  PaidRequestLocals,
  RequirePaymentOptions,
  SettlementLimit,
} from './gateway';
import { processPayment } from './process';
import { sendPaymentRequired } from './request';
import {
  canonicalTextOf,
  endpointOf,
  offeredRequirements,
  paymentRequiredHeader,
  requirementsForRequest,
  type OfferV2,
} from './requirements';
import { reasonOf, sendPaymentError, sendStoredResponse, V2_PAYMENT_MISSING } from './responses';

/** The message of a settlement refused by each limit, given the seconds to wait. */
const SETTLEMENT_REFUSALS: Readonly<Record<SettlementLimit, (seconds: number) => string>> = {
  client: (s) => `Too many payment settlements from this client; retry in ${s} s`,
  payer: (s) => `Too many payment settlements for this payer wallet; retry in ${s} s`,
  payer_in_flight: (s) =>
    `Another payment of this payer wallet from the same token account is being settled; retry in ${s} s`,
};

/**
 * Express middleware for a paid synchronous endpoint (docs/payments.md, "Paying for data (x402)";
 * docs/architecture.md, "How a paid request flows (market-intel)"). Place it AFTER the route's query
 * validation (bad parameters are a 400 without a charge) and before the handler:
 *
 * `router.get('/scout/gaps', validate({ query }), requirePayment({ ...gateway, amountAtomic: 100000n, description }), handler)`
 *
 * No X-PAYMENT → 402 Error402 + `x402-version: 1`; otherwise parse → claim → verify → run the handler
 * while capturing its answer → store it with the verification in one statement (status < 500:
 * `completed`; 5xx: `verified`, a retry re-runs the handler without a new charge; a handler still
 * running after {@link VERIFIED_MARK_DELAY_MS} gets the verified mark on its own first: README, "The
 * paid path's statements"; with `deferVerifiedMark: false` the mark is written before the handler).
 * The answer carries `X-PAYMENT-RESPONSE` and `x402-version: 1`; a repeated
 * signature on the same endpoint gets the identical status, headers and body. The verified payment is in `res.locals.x402Payment`.
 * The gateway's `onAnswerStored` is told of the stored (or replayed) 2xx-4xx answer just before it is sent.
 */
export function requirePayment(options: RequirePaymentOptions): RequestHandler {
  // One object for every request of the route: its requirements are built and validated once.
  const accept: AcceptPaymentOptions = {
    ...options,
    kind: 'sync',
    deferVerifiedMark: options.deferVerifiedMark ?? true,
  };
  return (req: Request, res: Response, next: NextFunction) => {
    acceptPayment(req, res, accept).then(
      (accepted) => {
        if (!accepted) return;
        (res.locals as PaidRequestLocals).x402Payment = accepted.payment;
        // The stored answer is replayed to every holder of the signature: it must be a full answer,
        // never a 304 computed from this request's conditional headers.
        delete req.headers['if-none-match'];
        delete req.headers['if-modified-since'];
        captureAnswer(req, res, options.ledger, accepted.claim, accepted.unrecorded, options.onAnswerStored);
        next();
      },
      (error: unknown) => next(error),
    );
  };
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
 * (v1 network name), `PAYMENT-RESPONSE` (CAIP-2 network) and `x402-version: 1` on the response. A
 * replay is told to `options.onAnswerStored` before it is sent.
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
      // A malformed payment header is a 402 with the Error402 body (docs/payments.md, "Paying with our client"),
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
      sendStoredResponse(res, result.response, network, options.onAnswerStored);
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
