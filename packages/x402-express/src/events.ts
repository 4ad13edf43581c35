import type { X402Network } from '@repo/schemas';

/**
 * A payment event for metrics and logs:
 * - `challenged`: a 402 with the requirements was answered (no X-PAYMENT);
 * - `verified`: a new payment was proven on chain (`rpcMs` = time spent in verification RPC calls;
 *   absent for an official-scheme payment whose own settlement's confirmation proved it);
 * - `rejected`: a proof was refused (`reason`: a verification reason, `invalid_payment_header`,
 *   `payment_reused`, `payment_conflict` or `busy`);
 * - `replayed`: a stored answer was returned for a signature already used on the same endpoint;
 * - `replay_refused`: a stored answer was found for it but not returned, the sign-in of its payer
 *   that a replay needs being absent or refused (`reason`: `siwx_required`, `siwx_not_payer`,
 *   `siwx_rate_limited`, `invalid_siwx_*`; docs/payments.md, "Signing in instead of paying again");
 * - `signed_in`: a request was served to the payer who signed in, without paying again
 *   (docs/payments.md, "Signing in instead of paying again").
 */
export interface PaymentEvent {
  /** What happened. */
  type: 'challenged' | 'verified' | 'rejected' | 'replayed' | 'replay_refused' | 'signed_in';
  /** Why a proof or a replay was refused (only for `rejected` and `replay_refused`). */
  reason?: string;
  /** The request's network. */
  network: X402Network;
  /** The endpoint, e.g. `"GET /api/v1/scout/gaps"`. */
  endpoint: string;
  /**
   * Milliseconds spent in verification RPC calls (for `verified` when a verification ran, and
   * `rejected` after an RPC call).
   */
  rpcMs?: number;
}

/** Receives {@link PaymentEvent}s; must not throw (exceptions are swallowed). */
export type PaymentEventListener = (event: PaymentEvent) => void;

/** Calls the listener, ignoring its failures. */
export function emitPaymentEvent(listener: PaymentEventListener | undefined, event: PaymentEvent): void {
  if (!listener) return;
  try {
    listener(event);
  } catch {
    // A metrics hook must never break a payment.
  }
}
