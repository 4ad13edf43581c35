import { backoffDelay, type Logger, type Loop } from '@repo/service-kit';
import type { X402Network } from '@repo/schemas';
import type { PrismaRefundLedger, RefundClaim } from '@repo/x402-ledger';
import { RefundSendError, type RefundSender, type RefundState, type SignedRefund } from '@repo/x402-solana';
import { workerLoop, type WorkerLoopOptions } from './worker-loop';

/** A refund transaction as the ledger keeps it: all a resend or a status read needs. */
type Attempt = Omit<SignedRefund, 'destination'>;

/** Options of {@link createRefundWorker}; times in milliseconds. */
export interface RefundWorkerOptions extends WorkerLoopOptions {
  /** How often each replica looks for due refunds. */
  intervalMs: number;
  /** How long a sent refund is watched for confirmation before it is left to a later pass. */
  confirmTimeoutMs: number;
  /** Interval between status reads while watching, default 500. */
  pollIntervalMs?: number;
  /** Refunds claimed per pass, default 5. */
  batchSize?: number;
}

/**
 * What a refund did, for metrics (`x402_refunds_total`; README, "Refunds"): a transaction `sent`,
 * `confirmed` on chain, `retried` (an attempt replaced after failing or expiring), `send_failed`, or
 * held as `unclaimable` (the account the payment came from is gone or changed; never sent).
 */
export type RefundOutcome = 'sent' | 'confirmed' | 'retried' | 'send_failed' | 'unclaimable';

/** The longest wait before a refund that keeps failing is tried again: 5 minutes. */
const MAX_RETRY_MS = 300_000;

/** The refund worker: the `refund-worker` loop, whose round is one {@link RefundWorker.runDue}. */
export interface RefundWorker extends Loop {
  /**
   * One pass: claims due refunds and works on each until it is confirmed or left for later.
   * @returns how many refunds were claimed
   */
  runDue(): Promise<number>;
}

/**
 * Sends and confirms refunds of failed paid jobs (README, "Refunds"), on every replica: each pass
 * claims due refunds (`x402_refunds`, leased, so one replica works on a refund at a time), and for
 * each one either
 * - checks the stored attempt on chain: confirmed -> done; failed on chain or expired without
 *   landing -> cleared, and a new transaction is built; still possibly landing -> sent again (the
 *   same bytes, so it cannot land twice); or
 * - builds and signs a new refund transaction into the token account the payment came from, stores
 *   it, and only then sends it: an attempt that could not be stored (the lease was lost to another
 *   replica) is never sent; or, when that account is gone or changed, holds the refund as
 *   `unclaimable` (final, never retried, never creating an account at the refund wallet's expense);
 * then watches it for `confirmTimeoutMs`. A refund is retried until confirmed; while the RPC refuses
 * it (an unfunded refund wallet) it is retried with a growing delay up to 5 minutes, and a warning
 * names the wallet.
 * @param ledger the refunds table
 * @param senders the refund sender of each network refunds are made on
 * @param onOutcome told of each step (metrics)
 */
export function createRefundWorker(
  ledger: PrismaRefundLedger,
  senders: Partial<Record<X402Network, RefundSender>>,
  options: RefundWorkerOptions,
  logger: Logger,
  onOutcome: (network: X402Network, outcome: RefundOutcome) => void = () => undefined,
): RefundWorker {
  // Cuts a confirmation watch short on shutdown; a worker never started watches no longer than one read.
  let stopped = true;
  const pollIntervalMs = options.pollIntervalMs ?? 500;
  const batchSize = options.batchSize ?? 5;
  // While a refund keeps failing: the interval doubled per attempt (at most 6 times), at most 5 minutes.
  const retryBackoff = { initialDelayMs: options.intervalMs, maxDelayMs: MAX_RETRY_MS };

  const runDue = async (): Promise<number> => {
    // The lease covers building, sending and watching, with a margin for slow RPC calls.
    const claims = await ledger.claimDue(batchSize, options.confirmTimeoutMs + 60_000);
    await Promise.all(claims.map((claim) => work(claim)));
    return claims.length;
  };

  const work = async (claim: RefundClaim): Promise<void> => {
    const { refund } = claim;
    const sender = senders[refund.network];
    if (!sender) {
      await ledger.release(claim, MAX_RETRY_MS, `no refund wallet is configured for ${refund.network}`);
      return;
    }
    try {
      let attempt = storedAttempt(claim);
      if (attempt) {
        const state = await sender.status(attempt);
        // Confirmed, or cleared to be built again on the next pass.
        if (await settle(claim, attempt, state)) return;
      }
      if (!attempt) {
        if (refund.payTo === null) {
          await hold(claim, {
            reason: 'payment_transfer_not_found',
            destination: null,
            detail: 'the payment row names no merchant account to find its transfer by',
          });
          return;
        }
        const built = await sender.build({
          paymentSignature: refund.paymentSignature,
          payer: refund.payer,
          amountAtomic: refund.amountAtomic,
          payTo: refund.payTo,
        });
        if (built.kind === 'unclaimable') {
          await hold(claim, built);
          return;
        }
        // Stored before it is sent: after a crash the same transaction is found or sent again. Not
        // stored (the lease went to another replica, which may build its own): never sent.
        if (!(await ledger.recordAttempt(claim, built.refund))) return;
        attempt = built.refund;
      }
      const sendError = await send(sender, claim, attempt);
      const state = await watch(sender, attempt);
      if (await settle(claim, attempt, state)) return;
      if (state.state === 'pending') {
        await ledger.release(claim, retryDelay(claim, sendError !== undefined), sendError);
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      logger.warn({ payment: refund.paymentSignature, err: message }, 'refund attempt failed');
      await ledger.release(claim, retryDelay(claim, true), message);
    }
  };

  /**
   * Holds the refund as `unclaimable` (final) when the claim still holds it with no attempt current;
   * counted and logged for operators (support may settle it by hand: README, "Refunds").
   */
  const hold = async (
    claim: RefundClaim,
    held: { reason: string; destination: string | null; detail: string },
  ): Promise<void> => {
    if (!(await ledger.markUnclaimable(claim, held))) return;
    const { network, paymentSignature, payer, amountAtomic } = claim.refund;
    onOutcome(network, 'unclaimable');
    logger.warn(
      {
        payment: paymentSignature,
        network,
        payer,
        account: held.destination,
        amountAtomic: amountAtomic.toString(),
        reason: held.reason,
        err: held.detail,
      },
      'refund held as unclaimable: the account the payment came from cannot take it back',
    );
  };

  /** Sends `attempt`; a failure is logged and returned (the attempt stays and is watched anyway). */
  const send = async (
    sender: RefundSender,
    claim: RefundClaim,
    attempt: Attempt,
  ): Promise<string | undefined> => {
    const { network } = claim.refund;
    try {
      await sender.send(attempt);
      onOutcome(network, 'sent');
      return undefined;
    } catch (err) {
      onOutcome(network, 'send_failed');
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof RefundSendError && err.kind === 'refused') {
        logger.warn(
          {
            payment: claim.refund.paymentSignature,
            network,
            refundWallet: sender.wallet,
            amountAtomic: claim.refund.amountAtomic.toString(),
            err: message,
          },
          'the RPC refused a refund: does the refund wallet hold enough USDC and SOL?',
        );
      } else {
        logger.warn({ payment: claim.refund.paymentSignature, err: message }, 'refund not sent');
      }
      return message;
    }
  };

  /** Reads the attempt's state until it is final or `confirmTimeoutMs` passed. */
  const watch = async (sender: RefundSender, attempt: Attempt): Promise<RefundState> => {
    const deadline = Date.now() + options.confirmTimeoutMs;
    for (;;) {
      const state = await sender.status(attempt);
      if (state.state !== 'pending' || Date.now() >= deadline || stopped) return state;
      await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
    }
  };

  /**
   * Acts on a final state: confirmed -> recorded; failed or expired -> the attempt is cleared and the
   * refund is due again at once.
   * @returns whether the claim is finished with (confirmed, cleared, or lost to another replica)
   */
  const settle = async (claim: RefundClaim, attempt: Attempt, state: RefundState): Promise<boolean> => {
    const { network, paymentSignature } = claim.refund;
    if (state.state === 'confirmed') {
      if (await ledger.markConfirmed(claim, attempt.signature, state.slot)) {
        onOutcome(network, 'confirmed');
        logger.info(
          { payment: paymentSignature, refund: attempt.signature, network },
          'refund confirmed on chain',
        );
      }
      return true;
    }
    if (state.state === 'failed' || state.state === 'expired') {
      const reason =
        state.state === 'failed'
          ? `refund transaction ${attempt.signature} failed on chain: ${state.error}`
          : `refund transaction ${attempt.signature} expired without landing`;
      if (await ledger.clearAttempt(claim, attempt.signature, reason)) {
        onOutcome(network, 'retried');
        logger.warn({ payment: paymentSignature, network, reason }, 'refund attempt replaced');
        await ledger.release(claim, 0);
      }
      return true;
    }
    return false;
  };

  const retryDelay = (claim: RefundClaim, failing: boolean): number =>
    failing ? backoffDelay(retryBackoff, Math.min(claim.refund.attempts, 6)) : options.intervalMs;

  const round = async (): Promise<boolean> => {
    if (stopped) return false;
    const claimed = await runDue();
    return claimed > 0;
  };
  const loop = workerLoop('refund-worker', round, { intervalMs: options.intervalMs }, options, logger);

  return {
    ...loop,
    /** Starts looking for due refunds (the first pass at once). */
    start() {
      stopped = false;
      loop.start();
    },
    /** Stops looking and waits for the pass in progress. */
    async stop() {
      stopped = true;
      await loop.stop();
    },
    runDue,
  };
}

/** The claim's stored attempt, when one is recorded. */
function storedAttempt(claim: RefundClaim): Attempt | undefined {
  const { signature, transaction, lastValidBlockHeight } = claim.refund;
  if (signature === null || transaction === null || lastValidBlockHeight === null) return undefined;
  return { signature, transaction, lastValidBlockHeight };
}
