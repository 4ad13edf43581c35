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
import type { IdentifierBinding, PaymentIdentifiers } from '@repo/x402-ledger';
import { SettlementRefusedError, type SettlementKey } from '@repo/x402-solana';
import { captureAnswer, interceptAnswer } from './capture';
import { emitPaymentEvent } from './events';
import type {
  AcceptedPayment,
  AcceptPaymentOptions,
  PaidRequestLocals,
  RequirePaymentOptions,
  SettlementLimit,
} from './gateway';
import { paymentIdentifierOf } from './identifier';
import {
  IdentifierMovedError,
  processPayment,
  type ProcessPaymentInput,
  type ProcessPaymentResult,
} from './process';
import { receiptSigner } from './receipts';
import { sendPaymentRequired } from './request';
import {
  canonicalTextOf,
  endpointOf,
  offeredRequirements,
  paymentRequiredHeader,
  requirementsForRequest,
  type OfferV2,
} from './requirements';
import {
  answerListenerOf,
  reasonOf,
  sendPaymentError,
  sendStoredResponse,
  V2_PAYMENT_MISSING,
} from './responses';
import {
  requirePayerSignIn,
  SIGN_IN_HEADER,
  signedInAccess,
  signInChallenge,
  signInOriginOf,
  type SignedInAccess,
} from './sign-in';

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
    onSignedIn: (access, _req, { locals }: { locals: PaidRequestLocals }) => {
      locals.x402Access = access;
    },
  };
  return (req: Request, res: Response<unknown, PaidRequestLocals>, next: NextFunction) => {
    acceptPayment(req, res, accept).then(
      (accepted) => {
        // A payer signed in within the access window: the handler runs, nothing is stored.
        if (!accepted && res.locals.x402Access && !res.headersSent) next();
        if (!accepted) return;
        res.locals.x402Payment = accepted.payment;
        // The stored answer is replayed to every holder of the signature: it must be a full answer,
        // never a 304 computed from this request's conditional headers.
        delete req.headers['if-none-match'];
        delete req.headers['if-modified-since'];
        captureAnswer(
          req,
          res,
          options.ledger,
          accepted.claim,
          accepted.unrecorded,
          answerListenerOf(options),
          accepted.signReceipt,
        );
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
  // Sign-in-with-x, where the network makes the official offer: its origin, and this request's own
  // payment (a replay of another one, named by a payment identifier, is the payer's own retry).
  const signIn = options.signInWithX;
  let signInOrigin: { origin: URL; network: X402Network } | undefined;
  let ownSignature: string | undefined;
  // Whether this payment's identifier was bound by an earlier request (processIdentified's 'existing').
  let retryOfKnownIdentifier = false;
  try {
    const request = requirementsForRequest(req, options, options);
    const { network, verifier, requirements } = request;
    accepts = request.accepts;
    offer = request.offer;
    const origin = signIn && offer ? signInOriginOf(req, options.publicBaseUrl) : undefined;
    if (signIn && offer && origin) {
      signInOrigin = { origin, network };
      offer = { ...offer, signIn: signInChallenge(signIn, origin, req.originalUrl || req.url, network) };
    }
    const endpoint = options.endpoint ?? endpointOf(req);
    const v2Header = req.get(PAYMENT_SIGNATURE_HEADER);
    const header = v2Header ?? req.get(PAYMENT_HEADER);
    if (header === undefined || header.trim() === '') {
      if (signIn && signInOrigin && options.onSignedIn && req.get(SIGN_IN_HEADER) !== undefined) {
        const access: SignedInAccess = await signedInAccess(req, signIn, {
          origin: signInOrigin.origin,
          network,
          endpoint,
          kind: options.kind,
          requestHash: requestHash(request.canonical ?? canonicalTextOf(req, request.url)),
        });
        emitPaymentEvent(options.onPaymentEvent, { type: 'signed_in', network, endpoint });
        await options.onSignedIn(access, req, res);
        return undefined;
      }
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
    let identifier: string | undefined;
    try {
      proof = parsePaymentProof(header, network, v2Header === undefined ? 'X-PAYMENT' : 'PAYMENT-SIGNATURE');
      if (proof.kind === 'signature') signature = ownSignature = proof.txSignature;
      else {
        // Checked before anything is claimed: a malformed identifier is the payer's mistake (400).
        if (offer && options.identifiers) identifier = paymentIdentifierOf(proof.extensions);
        ({ signature, payer, source } = await signatureToClaim(proof, offer));
        ownSignature = signature;
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
      // `details.reason` the specification's code the parser named (`invalid_payload`, ...); a
      // malformed payment identifier stays the 400 it was raised as.
      if (malformed && !isIdentifierRefusal(error))
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
    const paidRequestHash = requestHash(request.canonical ?? canonicalTextOf(req, request.url));
    const paid: ProcessPaymentInput = {
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
      requestHash: paidRequestHash,
      ...(options.onPaymentEvent ? { onPaymentEvent: options.onPaymentEvent } : {}),
      ...(options.deferVerifiedMark ? { deferVerifiedMark: true } : {}),
    };
    const result =
      identifier !== undefined && payer !== undefined && options.identifiers && official
        ? await processIdentified(paid, options.identifiers, { identifier, payer }, (transaction, known) => {
            official = { ...official!, transaction };
            retryOfKnownIdentifier = known;
          })
        : await processPayment(paid);
    if (result.outcome === 'replay') {
      // Its own payment's signature is public once on chain: only its payer, signed in, gets it again.
      // An identifier bound before this request never went on chain: whoever sends it is the payer
      // retrying (an official client signs the same transaction again within one blockhash).
      if (
        signIn?.requiredForReplay &&
        signInOrigin &&
        result.record.signature === ownSignature &&
        !retryOfKnownIdentifier
      )
        await requirePayerSignIn(req, signIn, signInOrigin.origin, network, result.record.payer, (reason) =>
          emitPaymentEvent(options.onPaymentEvent, { type: 'replay_refused', reason, network, endpoint }),
        );
      emitPaymentEvent(options.onPaymentEvent, { type: 'replayed', network, endpoint });
      sendStoredResponse(res, result.response, network, answerListenerOf(options));
      return undefined;
    }
    const settlement = { success: true, transaction: result.payment.signature, payer: result.payment.payer };
    res.setHeader(X402_VERSION_HEADER, String(X402_VERSION));
    res.setHeader(PAYMENT_RESPONSE_HEADER, encodePaymentResponse({ ...settlement, network }));
    res.setHeader(
      PAYMENT_V2_RESPONSE_HEADER,
      encodeBase64Json({ ...settlement, network: CAIP2_NETWORKS[network] }),
    );
    const signReceipt =
      options.receipts &&
      receiptSigner(options.receipts, res, {
        base: request.base,
        resourceUrl: request.resource,
        payment: result.payment,
        network,
        requestHash: paidRequestHash,
      });
    // An asynchronous endpoint's caller sends its answer itself: its receipt is signed on the way out.
    if (signReceipt && options.kind === 'async')
      interceptAnswer(res, (ended) => {
        signReceipt(ended.status, ended.body).then(ended.send, ended.send);
      });
    return {
      payment: result.payment,
      claim: result.claim,
      requirements,
      ...(result.unrecorded ? { unrecorded: result.unrecorded } : {}),
      ...(signReceipt ? { signReceipt } : {}),
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
    const refusal = await payerOnlyConflict(error, signIn, signInOrigin, ownSignature, official, req);
    if (sendPaymentError(req, res, refusal, accepts, offer)) return undefined;
    throw refusal;
  }
}

/**
 * With `signInWithX.requiredForReplay`, the 409 of a used compute payment names its job only to its
 * payer signed in (the job id is the job's capability): the request's own payment answered with a
 * job id and no valid proof of its payer becomes the sign-in's 402. Any other error is returned as is.
 */
async function payerOnlyConflict(
  error: unknown,
  signIn: AcceptPaymentOptions['signInWithX'],
  signInOrigin: { origin: URL; network: X402Network } | undefined,
  ownSignature: string | undefined,
  official: { transaction: string } | undefined,
  req: Request,
): Promise<unknown> {
  if (!signIn?.requiredForReplay || !signInOrigin || ownSignature === undefined) return error;
  if (!isAppError(error) || error.code !== 'payment_conflict') return error;
  const details = error.details as { jobId?: unknown } | null | undefined;
  // A retry under a payment identifier answered with an earlier payment's job is the payer's own.
  if (details?.jobId === undefined || (official && official.transaction !== ownSignature)) return error;
  try {
    const { origin, network } = signInOrigin;
    await requirePayerSignIn(req, signIn, origin, network, await signIn.records.payerOf(ownSignature));
    return error;
  } catch (refused) {
    return refused;
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

/** How many times a request reads a payment identifier that moved under it before answering 503. */
const IDENTIFIER_ROUNDS = 4;

/** Whether `error` is the refusal of a malformed `payment-identifier` ({@link paymentIdentifierOf}). */
function isIdentifierRefusal(error: AppError): boolean {
  const details = error.details as { reason?: unknown } | null | undefined;
  return details?.reason === 'invalid_payment_identifier';
}

/**
 * {@link processPayment} for an official-scheme payment carrying a `payment-identifier` (docs/payments.md,
 * "Retrying safely: payment identifiers"): the identifier is bound (or read) before any network call;
 * when it names this payment, this payment is processed, settled only if the identifier still names
 * it once its claim is held; when it names an earlier payment of the same request, that payment
 * answers (its stored answer, its verified claim, or a bounded wait while it settles) and this
 * request's transaction is never sent, unless the earlier payment did not land on chain, in which
 * case the identifier moves to this one. `following` is told the signature the request answers with,
 * and whether the identifier was bound before this request (`known`: the payer's own retry).
 *
 * @throws AppError `payment_identifier_conflict` (409) when the identifier was used for another
 *   request; `service_unavailable` (503, `Retry-After: 1`) when it kept moving; whatever
 *   {@link processPayment} throws
 */
async function processIdentified(
  paid: ProcessPaymentInput,
  identifiers: PaymentIdentifiers,
  who: { identifier: string; payer: string },
  following: (signature: string, known: boolean) => void,
): Promise<ProcessPaymentResult> {
  const own = paid.signature;
  const binding: IdentifierBinding = {
    payer: who.payer,
    identifier: who.identifier,
    signature: own,
    network: paid.network,
    endpoint: paid.endpoint,
    requestHash: paid.requestHash ?? '',
  };
  for (let round = 0; round < IDENTIFIER_ROUNDS; round++) {
    const bound = await identifiers.bind(binding);
    if (bound.outcome === 'conflict') {
      emitPaymentEvent(paid.onPaymentEvent, {
        type: 'rejected',
        reason: 'payment_identifier_conflict',
        network: paid.network,
        endpoint: paid.endpoint,
      });
      throw new AppError(
        'payment_identifier_conflict',
        'This payment identifier was already used for another request; a new request needs a new identifier',
      );
    }
    following(bound.signature, bound.outcome === 'existing');
    try {
      if (bound.signature === own)
        return await processPayment({
          ...paid,
          identifier: {
            stillBound: async () => (await identifiers.boundTo(who.payer, who.identifier)) === own,
            unbind: () => identifiers.unbind(binding),
          },
        });
      // The earlier payment answers: this request's transaction is not sent, and it is looked up on
      // chain as it is (its memo binds it to the request; no reference to check).
      const earlier: ProcessPaymentInput = {
        ...paid,
        signature: bound.signature,
        identifier: { rebind: () => identifiers.rebind(binding, bound.signature) },
      };
      delete earlier.settle;
      delete earlier.reference;
      delete earlier.requireReference;
      return await processPayment(earlier);
    } catch (error) {
      if (!(error instanceof IdentifierMovedError)) throw error;
    }
  }
  throw new AppError(
    'service_unavailable',
    'This payment identifier is being used by concurrent requests; retry shortly',
    { headers: { 'Retry-After': '1' } },
  );
}
