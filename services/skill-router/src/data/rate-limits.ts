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
 * shares it, separated by `keyPrefix`. Rows expired for an hour are deleted every 5 minutes.
 * @param pool the service's `pg` pool
 */
export function createRateLimit(pool: Pool, opts: { keyPrefix: string; points: number; durationSeconds: number }): RateLimit {
  const limiter = new RateLimiterPostgres({
    storeClient: pool,
    storeType: 'pool',
    tableName: 'rate_limits',
    tableCreated: true,
    keyPrefix: opts.keyPrefix,
    points: opts.points,
    duration: opts.durationSeconds,
  });
  return {
    async consume(key) {
      try {
        await limiter.consume(key, 1);
        return { allowed: true };
      } catch (err) {
        if (err instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
        throw err;
      }
    },
  };
}
