import { AppError } from '@repo/errors';
import type { X402Network } from '@repo/schemas';
import {
  isPaymentVerificationError,
  type PaymentVerificationError,
  type PaymentVerifier,
  type VerifiedPayment,
} from '@repo/x402-core';
import type {
  AttemptCounter,
  PaymentClaim,
  PaymentKind,
  PaymentLedger,
  PaymentRecord,
  StoredResponse,
} from '@repo/x402-ledger';
import type { SettlementOutcome } from '@repo/x402-solana';
import { emitPaymentEvent, type PaymentEventListener } from './events';

/** Seconds a client is told to wait (`Retry-After`) when the RPC or a concurrent holder is in the way. */
export const RETRY_AFTER_SECONDS = 5;

/**
 * Seconds an official-scheme transaction may still land after the service first saw it: its
 * blockhash lives 150 slots (about 60 to 90 s) from before it was signed, with a margin. A payment
 * under an identifier that was not found on chain within this window may still land, so the
 * identifier does not move to another payment until it is over (docs/payments.md, "Retrying safely:
 * payment identifiers").
 */
export const LANDING_WINDOW_SECONDS = 120;

/**
 * Whether the settlement refused a transaction before sending it (the scheme's checks, or the node's
 * preflight simulation refusing the send): nothing can land. Any other refusal (an RPC error while sending or confirming, a
 * confirmation that timed out...) may have sent it.
 */
function refusedBeforeSending(reason: string): boolean {
  // The scheme's verification codes (the official facilitator's) all start so; the one post-sending
  // code among them is the on-chain failure.
  if (reason.startsWith('invalid_exact_svm_')) return reason !== 'invalid_exact_svm_transaction_failed';
  return NEVER_SENT.has(reason);
}

const NEVER_SENT = new Set([
  'transaction_simulation_failed',
  'fee_payer_not_managed_by_facilitator',
  'verification_failed',
  'network_mismatch',
  'unsupported_scheme',
]);

/**
 * Thrown by {@link processPayment} when the payment identifier it works under no longer names the
 * payment it claimed (`ProcessPaymentInput.identifier`): the claim was let go and nothing was sent;
 * the caller reads the identifier again and starts over. `rebound`: this request moved it to its own
 * payment.
 */
export class IdentifierMovedError extends Error {
  /** @param rebound whether the identifier now names the caller's own payment */
  constructor(readonly rebound: boolean) {
    super('the payment identifier names another payment now');
    this.name = 'IdentifierMovedError';
  }
}

/** Input of {@link processPayment}. */
export interface ProcessPaymentInput {
  /** The payment ledger. */
  ledger: PaymentLedger;
  /** The verifier of the request's network. */
  verifier: PaymentVerifier;
  /**
   * The payment's key in the ledger (base58): a push payment's signature, or the signature an
   * official-scheme transaction will have once co-signed (`ExactSvmSettler.signatureOf`).
   */
  signature: string;
  /** The request's network (the payment was checked to be for it). */
  network: X402Network;
  /**
   * Official-scheme payments only: verifies, co-signs, sends and confirms the transaction. Called once
   * the claim is held, so concurrent copies of one payload settle once.
   */
  settle?: () => Promise<SettlementOutcome>;
  /** The price in atomic USDC units. */
  amountAtomic: bigint;
  /** Endpoint identity, e.g. `"GET /api/v1/scout/gaps"` or `"POST /api/v1/forge/ideate"`. */
  endpoint: string;
  /** `sync` (response stored and replayed) or `async` (a job is created; reuse is a 409). */
  kind: PaymentKind;
  /**
   * The request's hash (`requestHash` of `@repo/x402-core`: method, path, sorted query, body): the
   * payment is bound to it, so a replay is served only to the same request (see
   * `ClaimRequest.requestHash`).
   */
  requestHash?: string;
  /**
   * This request's Solana Pay reference (push payments): a transfer carrying another request's
   * reference is refused with `reference_mismatch` and not consumed.
   */
  reference?: string;
  /** With `reference`: a push payment carrying no reference is refused (`reference_missing`). */
  requireReference?: boolean;
  /**
   * Push payments only: `check` is asked once the claim is held and before the on-chain verification
   * (its RPC calls) — refused → `429 rate_limited` with `Retry-After`, and the claim is dropped
   * unconsumed; `verified` is told when the payment verified (the attempt is given back). With
   * `counter`, the ledger counts the attempt in its claim statement and gives it back in its verified
   * mark instead, and `check` / `verified` are used only where the ledger did not count (and
   * `verified` after an RPC failure, which is given back too).
   */
  guard?: {
    check(): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }>;
    verified(): Promise<void>;
    counter?: AttemptCounter;
  };
  /**
   * The x402 `payment-identifier` this payment is processed under (docs/payments.md, "Retrying safely:
   * payment identifiers"); the rule is that a payment is settled only by the holder of its claim that
   * read, after taking the claim, that the identifier names it, and that the identifier is moved only
   * by the holder of the claim of the payment it names:
   * - `stillBound` (with `settle`: the identifier names this payment): asked once the claim is held
   *   and before anything is settled; `false` → the claim is let go and {@link IdentifierMovedError}
   *   thrown;
   * - `rebind` (without `settle`: `signature` is the payment an earlier request made under the
   *   identifier): when that payment does not verify on chain (one look), asked with its claim still
   *   held to move the identifier to this request's own payment; then the claim is let go and
   *   {@link IdentifierMovedError} thrown.
   */
  identifier?: {
    stillBound?: () => Promise<boolean>;
    rebind?: () => Promise<boolean>;
    /**
     * With `settle`: the payment was refused before anything was sent (a limit, the scheme's
     * checks); asked, with the claim still held, to free the identifier if it names this
     * payment, so that refused attempts leave no identifier behind.
     */
    unbind?: () => Promise<void>;
  };
  /** Optional metrics hook. */
  onPaymentEvent?: PaymentEventListener;
  /**
   * Leave the verified mark to the caller's completion (README, "The paid path's statements"): the
   * result's `unrecorded` is then the verification to pass to `ledger.complete` or
   * `ledger.releaseLease`, or to `ledger.markVerified` if the handler runs long.
   */
  deferVerifiedMark?: boolean;
}

/**
 * Result of {@link processPayment}:
 * - `accepted`: the payment is proven and claimed by this request; run the handler, then call
 *   `ledger.complete` (sync), `ledger.completeWithJob` (async, inside the job's transaction) or
 *   `ledger.releaseLease` (handler failed: a retry re-runs it without a new charge); `unrecorded`
 *   (only with `deferVerifiedMark`) is the verification the ledger does not hold yet, for the
 *   completion or `releaseLease` to record;
 * - `replay`: the signature was already used on this synchronous endpoint; answer `response` (the
 *   caller emits the `replayed` event once it sends it).
 */
export type ProcessPaymentResult =
  | { outcome: 'accepted'; payment: VerifiedPayment; claim: PaymentClaim; unrecorded?: VerifiedPayment }
  | { outcome: 'replay'; response: StoredResponse; record: PaymentRecord };

/**
 * Claim → (guard) → (settle) → verify → mark verified (docs/architecture.md, "How a paid request flows
 * (market-intel)", step 2). The claim comes before any network call; an official-scheme transaction is
 * sent only by the request holding the claim, and a settlement that confirmed it is its verification
 * (`SettlementOutcome.payment`: no `getTransaction`); a failed settlement or verification releases it so
 * nothing is consumed (a transaction not found on chain is forgotten; any other refusal keeps the
 * first sighting, from which freshness counts). With `guard.counter` the guard's count is part of the
 * claim statement and its give-back part of the verified mark's (the package README, "The paid path's
 * statements"): a fresh push payment costs two statements here, then the caller's completion, or one
 * with `deferVerifiedMark`, whose completion records the verification.
 *
 * @throws AppError
 * - `payment_required` (402, `details.reason`) for not_found / transaction_failed / wrong_recipient /
 *   stale / reference_mismatch / reference_missing,
 *   and for an official-scheme transaction the settlement refused (its reason);
 * - `amount_mismatch`, `mint_mismatch` (400);
 * - `payment_reused` (400, no details) when the signature was verified for another endpoint, network
 *   or request (docs/payments.md, "Paying with our client"; "Request-bound payments");
 * - `payment_conflict` (409) when it was used on this asynchronous endpoint (a paid job exists), with
 *   `details.jobId` only for a request with the paying request's body;
 * - `service_unavailable` (503, `Retry-After`) when the RPC is unreachable, another request still
 *   holds the signature after the ledger's wait timeout, or an unverified claim for another endpoint
 *   holds it (`Retry-After: 1`);
 * - `rate_limited` (429, `Retry-After`) when `guard` refuses the verification.
 * @throws IdentifierMovedError when `identifier` says the payment identifier names another payment
 *   (nothing was sent; the claim was let go)
 */
export async function processPayment(input: ProcessPaymentInput): Promise<ProcessPaymentResult> {
  const { ledger, verifier, signature, network, amountAtomic, endpoint, kind, onPaymentEvent } = input;
  if (verifier.network !== network) {
    throw new Error(`verifier for ${verifier.network} used for a ${network} payment`);
  }
  const reject = (reason: string, error: AppError, rpcMs?: number): never => {
    emitPaymentEvent(onPaymentEvent, {
      type: 'rejected',
      reason,
      network,
      endpoint,
      ...(rpcMs === undefined ? {} : { rpcMs }),
    });
    throw error;
  };

  const guard = input.settle ? undefined : input.guard;
  const claimed = await ledger.claim({
    signature,
    network,
    endpoint,
    kind,
    ...(input.requestHash === undefined ? {} : { requestHash: input.requestHash }),
    ...(guard?.counter ? { attemptCounter: guard.counter } : {}),
  });
  switch (claimed.outcome) {
    case 'replay':
      // Counted by the caller once it is actually sent (a replay may still need its payer's sign-in).
      return { outcome: 'replay', response: claimed.response, record: claimed.record };
    case 'conflict':
      return reject(
        'payment_conflict',
        new AppError(
          'payment_conflict',
          'This payment was already used to start a job on this endpoint',
          claimed.jobId === null ? {} : { details: { jobId: claimed.jobId } },
        ),
      );
    case 'other_endpoint':
      // Which endpoint it paid is the payer's business, not the presenter's.
      return reject(
        'payment_reused',
        new AppError('payment_reused', 'This payment was already used for another endpoint or request'),
      );
    case 'busy':
      return reject(
        'busy',
        new AppError(
          'service_unavailable',
          'This payment is still being processed by another request; retry shortly',
          {
            headers: { 'Retry-After': String(claimed.retryAfterSeconds ?? RETRY_AFTER_SECONDS) },
          },
        ),
      );
    case 'claimed':
      break;
  }

  const { claim } = claimed;
  if (claim.verified) return { outcome: 'accepted', payment: claim.verified, claim };
  // A claim that binds nothing yet leaves no trace; one taken over keeps its first sighting.
  const letGo = () => (claim.takenOver ? ledger.release(claim) : ledger.forget(claim));
  const stillBound = input.settle ? input.identifier?.stillBound : undefined;
  if (stillBound) {
    const bound = await stillBound().catch(async (error: unknown) => {
      await letGo();
      throw error;
    });
    if (!bound) {
      await letGo();
      throw new IdentifierMovedError(false);
    }
  }

  // Counted by the claim statement when the ledger could (one round trip fewer), else asked now.
  const counted = claim.attempt;
  if (guard) {
    const decision = counted
      ? counted.allowed
        ? { allowed: true as const }
        : { allowed: false as const, retryAfterSeconds: counted.retryAfterSeconds }
      : await guard.check().catch(async (error: unknown) => {
          await ledger.release(claim);
          throw error;
        });
    if (!decision.allowed) {
      // A sighting that came before stays; a claim made just now leaves no trace.
      await letGo();
      return reject(
        'rate_limited',
        new AppError(
          'rate_limited',
          `Too many payment verifications from this client; retry in ${decision.retryAfterSeconds} s`,
          { headers: { 'Retry-After': String(decision.retryAfterSeconds) } },
        ),
      );
    }
  }

  let refused: (SettlementOutcome & { ok: false }) | undefined;
  let settledPayment: VerifiedPayment | undefined;
  let verified: VerifiedPayment;
  try {
    if (input.settle) {
      const settled = await input.settle();
      if (!settled.ok) refused = settled;
      // Our own settlement checked and confirmed exactly this payment: no getTransaction after it.
      else if (
        settled.payment?.signature === signature &&
        settled.payment.network === network &&
        settled.payment.amountAtomic === amountAtomic
      )
        settledPayment = settled.payment;
    }
    // After a refused settlement, one look: an earlier attempt that died unrecorded may have landed it.
    verified =
      settledPayment ??
      (await verifier.verify(signature, amountAtomic, {
        ...(refused ? { attempts: 1 } : {}),
        ...(input.settle && !refused ? { landed: true } : {}),
        firstSeenAt: claim.firstSeenAt,
        // This server sent an official-scheme transaction itself: nobody could take it first.
        ...(input.reference === undefined || input.settle
          ? {}
          : { reference: input.reference, requireReference: input.requireReference ?? false }),
      }));
  } catch (error) {
    // An earlier payment under the identifier did not land: the identifier moves to this request's
    // own payment while the claim on that one is still held.
    const rebind = input.settle ? undefined : input.identifier?.rebind;
    if (rebind && isPaymentVerificationError(error) && error.reason !== 'rpc_unavailable') {
      // Not found, but kept by a settlement that may have sent it (or a holder that died): it may
      // still land until its blockhash expires, and then it is the one payment of the identifier.
      const landingMs =
        error.reason === 'not_found' && claim.takenOver
          ? claim.firstSeenAt.getTime() + LANDING_WINDOW_SECONDS * 1000 - Date.now()
          : 0;
      if (landingMs > 0) {
        await ledger.release(claim);
        return reject(
          'busy',
          new AppError(
            'service_unavailable',
            'The first payment under this payment identifier may still land; retry shortly with the same identifier',
            { headers: { 'Retry-After': String(Math.min(10, Math.ceil(landingMs / 1000))) } },
          ),
        );
      }
      let rebound: boolean;
      try {
        rebound = await rebind();
      } finally {
        await (error.reason === 'not_found' ? ledger.forget(claim) : ledger.release(claim));
      }
      throw new IdentifierMovedError(rebound);
    }
    // A refusal on chain keeps the first sighting for a retry; a transaction not on chain, or a
    // settlement stopped before anything was sent (a rate limit), leaves nothing to remember.
    const seen = isPaymentVerificationError(error) && error.reason !== 'not_found';
    // Under a payment identifier, a settlement that may have sent its transaction keeps its row: a
    // retry must not settle another payment while this one may still land.
    const maybeSent =
      input.identifier !== undefined && refused !== undefined && !refusedBeforeSending(refused.reason);
    const unbind = input.settle ? input.identifier?.unbind : undefined;
    if (unbind && !seen && !maybeSent) await unbind().catch(() => undefined);
    await (seen || maybeSent ? ledger.release(claim) : ledger.forget(claim));
    // An unreachable RPC is our failure, not the client's: the attempt is given back.
    if (guard && isPaymentVerificationError(error) && error.reason === 'rpc_unavailable') {
      await guard.verified().catch(() => undefined);
    }
    if (refused && isPaymentVerificationError(error) && error.reason === 'not_found')
      return reject(
        refused.reason,
        new AppError('payment_required', refused.message, { details: { reason: refused.reason } }),
      );
    if (isPaymentVerificationError(error))
      return reject(error.reason, verificationErrorToAppError(error), error.rpcMs);
    throw error;
  }
  // A settlement's confirmation made no verification call: it has no verification RPC time.
  const verifiedEvent = {
    type: 'verified' as const,
    network,
    endpoint,
    ...(settledPayment ? {} : { rpcMs: verified.rpcMs }),
  };
  // An attempt the claim counted is given back by the statement that records the verification.
  if (!counted) await guard?.verified().catch(() => undefined);
  if (input.deferVerifiedMark) {
    emitPaymentEvent(onPaymentEvent, verifiedEvent);
    return { outcome: 'accepted', payment: verified, claim, unrecorded: verified };
  }
  const marked = await ledger.markVerified(claim, verified);
  if (!marked) {
    return reject(
      'busy',
      new AppError(
        'service_unavailable',
        'This payment is being processed by another request; retry shortly',
        {
          headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        },
      ),
    );
  }
  emitPaymentEvent(onPaymentEvent, verifiedEvent);
  return { outcome: 'accepted', payment: verified, claim };
}

/**
 * Maps a refused proof to the answer (docs/payments.md, "Paying with our client"):
 * `amount_mismatch` / `mint_mismatch` → 400 with those codes; `rpc_unavailable` → 503
 * `service_unavailable` with `Retry-After`; everything else → 402 `payment_required` with
 * `details.reason` (sent as an Error402 body by {@link sendPaymentError}).
 */
export function verificationErrorToAppError(error: PaymentVerificationError): AppError {
  const details = { reason: error.reason, signature: error.signature, ...(error.details ?? {}) };
  switch (error.reason) {
    case 'amount_mismatch':
      return new AppError('amount_mismatch', error.message, { details, cause: error });
    case 'mint_mismatch':
      return new AppError('mint_mismatch', error.message, { details, cause: error });
    case 'rpc_unavailable':
      return new AppError(
        'service_unavailable',
        `Payment verification is unavailable: the ${error.network} RPC endpoint cannot be reached; retry later`,
        {
          details: { reason: error.reason },
          headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
          cause: error,
        },
      );
    case 'not_found':
    case 'transaction_failed':
    case 'wrong_recipient':
    case 'stale':
    case 'reference_mismatch':
    case 'reference_missing':
      return new AppError('payment_required', error.message, { details, cause: error });
  }
}
