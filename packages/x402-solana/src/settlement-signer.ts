import { TransactionOnchainFailureError } from '@x402/svm';
import type { RpcSignatureStatus, SolanaRpcClient } from './rpc-client';

/** The most signatures one `getSignatureStatuses` call may ask about. */
const MAX_STATUSES_PER_CALL = 256;

/** How {@link SignatureStatusPoller} waits for confirmations. */
export interface ConfirmationOptions {
  /**
   * Milliseconds between two status calls while every waiting signature has been asked about at
   * least once; default 250 (the official facilitator's first interval). A signature that starts
   * waiting is asked about at the next call, without waiting for the interval.
   */
  pollIntervalMs?: number;
  /** Milliseconds a signature may wait for its confirmation; default 30 000 (the official facilitator's). */
  timeoutMs?: number;
}

interface Waiter {
  deadline: number;
  polled: boolean;
  listeners: { resolve: (status: RpcSignatureStatus) => void; reject: (error: unknown) => void }[];
}

/**
 * Waits for transactions to be confirmed with one `getSignatureStatuses` call for all the signatures
 * waiting at that moment (docs/payments.md, "Paying with an official x402 client": settling): at most
 * one call is in flight, and the signatures that start waiting meanwhile are asked about by the next.
 * A signature resolves once its status is `confirmed` or `finalized`.
 */
export class SignatureStatusPoller {
  private readonly waiting = new Map<string, Waiter>();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private running = false;
  private wake: (() => void) | undefined;

  /**
   * @param rpc the client whose `getSignatureStatuses` is called
   * @param options the interval and the timeout, in milliseconds
   */
  constructor(
    private readonly rpc: Pick<SolanaRpcClient, 'getSignatureStatuses'>,
    options: ConfirmationOptions = {},
  ) {
    this.intervalMs = options.pollIntervalMs ?? 250;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /**
   * Resolves once `signature` is confirmed without error.
   * @param signature base58 transaction signature
   * @returns its status (its slot)
   * @throws TransactionOnchainFailureError (`@x402/svm`) when it landed and failed: terminal
   * @throws Error `Transaction confirmation timeout` after the timeout, and the RPC client's
   *   `RpcTransportError` / `RpcResponseError` when the status call fails: the outcome is unknown
   */
  confirm(signature: string): Promise<RpcSignatureStatus> {
    return new Promise((resolve, reject) => {
      const waiter = this.waiting.get(signature);
      if (waiter) waiter.listeners.push({ resolve, reject });
      else
        this.waiting.set(signature, {
          deadline: Date.now() + this.timeoutMs,
          polled: false,
          listeners: [{ resolve, reject }],
        });
      if (this.running) this.wake?.();
      else void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      // The signatures that start waiting in this turn of the event loop share the first call.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.waiting.size > 0) {
        const batch = this.nextBatch();
        let statuses: (RpcSignatureStatus | null)[] | undefined;
        let failure: unknown;
        try {
          statuses = await this.rpc.getSignatureStatuses(batch);
        } catch (error) {
          failure = error ?? new Error('getSignatureStatuses failed');
        }
        const now = Date.now();
        batch.forEach((signature, i) => {
          const waiter = this.waiting.get(signature);
          if (!waiter) return;
          const status = statuses?.[i];
          if (failure !== undefined) this.finish(signature, waiter, { error: failure });
          else if (status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized')
            this.finish(
              signature,
              waiter,
              status.err === null || status.err === undefined
                ? { status }
                : {
                    error: new TransactionOnchainFailureError(
                      `Transaction failed onchain: ${JSON.stringify(status.err)}`,
                    ),
                  },
            );
          else if (now >= waiter.deadline)
            this.finish(signature, waiter, { error: new Error('Transaction confirmation timeout') });
          else waiter.polled = true;
        });
        if (this.waiting.size > 0 && [...this.waiting.values()].every((waiter) => waiter.polled))
          await this.sleep(this.intervalMs);
      }
    } finally {
      this.running = false;
    }
  }

  /** The signatures never asked about first, then the others, up to the RPC's limit. */
  private nextBatch(): string[] {
    const fresh: string[] = [];
    const asked: string[] = [];
    for (const [signature, waiter] of this.waiting) (waiter.polled ? asked : fresh).push(signature);
    return [...fresh, ...asked].slice(0, MAX_STATUSES_PER_CALL);
  }

  private finish(
    signature: string,
    waiter: Waiter,
    outcome: { status: RpcSignatureStatus } | { error: unknown },
  ): void {
    this.waiting.delete(signature);
    for (const listener of waiter.listeners)
      if ('status' in outcome) listener.resolve(outcome.status);
      else listener.reject(outcome.error);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
