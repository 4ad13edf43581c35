import { createLoop, type Logger, type Loop, type LoopMetrics } from '@repo/service-kit';

/** Hourly, like the sweep always ran. */
export const EXPIRY_SWEEP_INTERVAL_MS = 3_600_000;

/** Options of {@link expirySweepLoop}. */
export interface ExpirySweepOptions {
  /** Deletes sessions expired before `now`. */
  deleteExpiredSessions(now: Date): Promise<unknown>;
  /** Deletes rate-limit counters expired before `now` (milliseconds since the epoch). */
  sweepRateLimits(now: number): Promise<unknown>;
  /** Deletes signal message ids whose 24-hour window ended before `now` (README, "Timestamps and message ids"). */
  deleteExpiredMessageIds?(now: Date): Promise<unknown>;
  logger: Logger;
  metrics?: LoopMetrics;
}

/**
 * Removes expired sessions, rate-limit counters and signal message ids once an hour (the first sweep an
 * hour after start). Any replica may run it: the deletes are idempotent. Every sweep runs even when
 * another fails; a failure fails the round (logged, counted as an `error` round).
 */
export function expirySweepLoop(options: ExpirySweepOptions): Loop {
  return createLoop({
    name: 'expiry-sweep',
    intervalMs: EXPIRY_SWEEP_INTERVAL_MS,
    initialDelayMs: EXPIRY_SWEEP_INTERVAL_MS,
    logger: options.logger,
    metrics: options.metrics,
    round: async () => {
      const now = new Date();
      const results = await Promise.allSettled([
        options.deleteExpiredSessions(now),
        options.sweepRateLimits(now.getTime()),
        options.deleteExpiredMessageIds?.(now),
      ]);
      const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      if (errors.length > 0) throw new AggregateError(errors, 'expiry sweep failed');
    },
  });
}
