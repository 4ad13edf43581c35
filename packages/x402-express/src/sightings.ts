import type { Request } from 'express';
import type { VerifiedPayment } from '@repo/x402-core';
import { parsePaymentProof, PAYMENT_HEADER, PAYMENT_SIGNATURE_HEADER, requestHash } from '@repo/x402-core';
import type { PaymentClaim, PaymentLedger, StoredResponse } from '@repo/x402-ledger';
import type { AcceptPaymentOptions } from './gateway';
import { canonicalTextOf, endpointOf } from './requirements';
import { networkOfRequest } from './request';

/**
 * Records the push payment a request carries as seen, without taking it, for an answer given before
 * the payment is looked at (a compute preflight's 503 with `Retry-After`): when the payer retries
 * with it, its freshness counts from now (docs/payments.md, "Paying for data (x402)"). Each sighting counts as
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
 * Longest time, in milliseconds, a paid handler runs before its verification is recorded on its own
 * (at most a third of the ledger's lease); a faster handler's answer records it in the same statement.
 */
export const VERIFIED_MARK_DELAY_MS = 1000;

/** What {@link holdClaim} returns: the ways a held claim ends. */
export interface HeldClaim {
  /** Stores the answer with the deferred verification, if any (`ledger.complete`'s result). */
  store(response: StoredResponse): Promise<boolean>;
  /** Releases the lease, recording the deferred verification, if any. */
  release(): Promise<void>;
  /** Stops renewing the lease and cancels the pending verified mark. */
  stop(): void;
}

/**
 * Holds a claim while its handler runs (README, "The paid path's statements"): the lease is renewed
 * every third of the lease, and `unrecorded`, a verification the ledger does not hold yet, is recorded
 * by the stored answer or the released lease in the same statement, or by its own verified mark once
 * the handler has run for {@link VERIFIED_MARK_DELAY_MS}.
 *
 * @throws nothing itself; `store` rejects when `ledger.complete` does (the verification is then
 *   recorded as the lease is released)
 */
export function holdClaim(
  ledger: PaymentLedger,
  claim: PaymentClaim,
  unrecorded: VerifiedPayment | undefined,
): HeldClaim {
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
  return { store, release, stop };
}
