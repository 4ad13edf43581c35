import type { Pool } from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';

/** The result of one {@link RateLimit.consume}. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** A fixed-window limit shared by every replica (rate-limiter-flexible over the `rate_limits` table). */
export interface RateLimit {
  /**
   * Counts one event for `key`.
   * @returns allowed, or refused with the seconds until the window resets (at least 1)
   */
  consume(key: string): Promise<RateDecision>;
}

/**
 * A limit of `points` events per `durationSeconds` per key, stored in PostgreSQL so that it holds
 * across replicas. The table comes from the Prisma migration (`tableCreated: true`); every limiter
 * shares it, separated by `keyPrefix`. Rows expired for an hour are deleted about once every 1000
 * calls (the library's own 5-minute timer is off: it would keep a stopping process alive).
 * @param pool the service's `pg` pool
 */
export function createRateLimit(
  pool: Pool,
  opts: { keyPrefix: string; points: number; durationSeconds: number },
): RateLimit {
  const limiter = new RateLimiterPostgres({
    storeClient: pool,
    storeType: 'pool',
    tableName: 'rate_limits',
    tableCreated: true,
    keyPrefix: opts.keyPrefix,
    points: opts.points,
    duration: opts.durationSeconds,
    clearExpiredByTimeout: false,
  });
  return {
    async consume(key) {
      // clearExpired is public in the library but missing from its typings.
      if (Math.random() < 0.001)
        void (limiter as unknown as { clearExpired(expire: number): Promise<void> }).clearExpired(
          Date.now() - 3_600_000,
        );
      try {
        await limiter.consume(key, 1);
        return { allowed: true };
      } catch (err) {
        if (err instanceof RateLimiterRes)
          return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
        throw err;
      }
    },
  };
}
