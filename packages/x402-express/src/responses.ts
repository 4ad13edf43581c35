import type { Request, Response } from 'express';
import { isAppError, sendAppError, type AppError } from '@repo/errors';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import { PAYMENT_REQUIRED_HEADER, X402_VERSION, X402_VERSION_HEADER } from '@repo/x402-core';
import type { StoredResponse } from '@repo/x402-ledger';
import type { AnswerStoredListener, PaidAnswer, PaymentGateway } from './gateway';
import { paymentRequiredHeader, type OfferV2 } from './requirements';
import { sendPaymentRequired } from './request';

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
 * `onAnswerStored` (the gateway's option of that name, e.g. the hot path) is told of it first.
 */
export function sendStoredResponse(
  res: Response,
  stored: StoredResponse,
  network?: X402Network,
  onAnswerStored?: AnswerStoredListener,
): void {
  const body = Buffer.from(stored.body, 'utf8');
  if (network)
    tellAnswerStored(onAnswerStored, res, { network, status: stored.status, headers: stored.headers, body });
  res.status(stored.status);
  for (const [name, value] of Object.entries(stored.headers)) res.setHeader(name, value);
  res.end(body);
}

/**
 * Tells `listener` (if any) that `answer` is the paid answer of `res`, stored and about to be sent. Its
 * failure is swallowed: remembering an answer is an optimisation.
 */
export function tellAnswerStored(
  listener: AnswerStoredListener | undefined,
  res: Response,
  answer: PaidAnswer,
): void {
  if (!listener) return;
  try {
    listener(answer, res);
  } catch {
    // The answer is sent as stored whatever the listener did.
  }
}

// Per listener: the same listener telling every answer `payerOnly`.
const payerOnlyListeners = new WeakMap<AnswerStoredListener, AnswerStoredListener>();

/**
 * The `onAnswerStored` listener of a gateway's paid routes: the gateway's own, told `payerOnly` of
 * every answer when `signInWithX.requiredForReplay` is set (one wrapper per listener, not per request).
 */
export function answerListenerOf(
  gateway: Pick<PaymentGateway, 'onAnswerStored' | 'signInWithX'>,
): AnswerStoredListener | undefined {
  const listener = gateway.onAnswerStored;
  if (!listener || !gateway.signInWithX?.requiredForReplay) return listener;
  let marked = payerOnlyListeners.get(listener);
  if (!marked) {
    marked = (answer, res) => listener({ ...answer, payerOnly: true }, res);
    payerOnlyListeners.set(listener, marked);
  }
  return marked;
}

/** The `PaymentRequired.error` of a 402 without a payment (the x402 v2 HTTP transport's wording). */
export const V2_PAYMENT_MISSING = 'PAYMENT-SIGNATURE header is required';

/**
 * The machine-readable reason of a payment refusal: its `details.reason` (the specification's or the
 * facilitator's code, e.g. `invalid_payload`, `invalid_exact_svm_payload_amount_mismatch`,
 * `not_found`), else its error code (`payment_reused`, `rate_limited`...).
 */
export function reasonOf(error: AppError): string {
  const details = error.details as { reason?: unknown } | null | undefined;
  return typeof details?.reason === 'string' ? details.reason : error.code;
}
