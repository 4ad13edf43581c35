/**
 * A fixed-window limit on attempts that the ledger counts inside its own statements. The counter row
 * has the layout of rate-limiter-flexible's `RateLimiterPostgres` (`key varchar(255) primary key,
 * points integer, expire bigint`: the window's end in milliseconds since the epoch), the table
 * `@repo/service-kit`'s `createRateLimit` keeps, so a limiter and the ledger can count in one row with
 * the same arithmetic (the library's `consume` and `reward`).
 */
export interface AttemptCounter {
  /** The counter table: a plain SQL identifier, e.g. `rate_limits`. */
  table: string;
  /** The row's key as the limiter stores it, its prefix included, e.g. `x402_verify_client:solana:203.0.113.7`. */
  key: string;
  /** Attempts allowed per window; every one beyond is refused (and still counted). */
  limit: number;
  /** Length of a window in milliseconds, from its first attempt. */
  windowMs: number;
}

/** The attempt a claim counted against {@link ClaimRequest.attemptCounter}. */
export interface CountedAttempt {
  /** `false` when this attempt is over the limit: the caller refuses it and drops the claim. */
  allowed: boolean;
  /** Attempts counted in the current window, this one included. */
  count: number;
  /** Seconds until the window ends, at least 1 (the `Retry-After` of a refusal). */
  retryAfterSeconds: number;
}

/** A counter table name as SQL: a plain identifier, quoted. */
export function counterTable(counter: AttemptCounter): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(counter.table)) {
    throw new Error(
      `attempt counter table must be a plain SQL identifier, got ${JSON.stringify(counter.table)}`,
    );
  }
  return `"${counter.table}"`;
}

/**
 * rate-limiter-flexible's upsert of `points` into a counter row (`RateLimiterPostgres._upsert`): a new
 * window starts at the first write after the last one ended. `p` holds the placeholders of the key,
 * of now and of the window (both in milliseconds); `source` is what the row is selected from, so that
 * the write happens only for, and after, the statement part it depends on.
 */
export function counterUpsert(
  table: string,
  points: 1 | -1,
  source: string,
  p: { key: string; now: string; window: string },
): string {
  return `INSERT INTO ${table} AS counter (key, points, expire)
    SELECT ${p.key}::text, ${points}, ${p.now}::bigint + ${p.window}::bigint FROM ${source}
    ON CONFLICT (key) DO UPDATE SET
      points = CASE WHEN counter.expire <= ${p.now}::bigint THEN ${points} ELSE counter.points + (${points}) END,
      expire = CASE WHEN counter.expire <= ${p.now}::bigint THEN EXCLUDED.expire ELSE counter.expire END
    RETURNING points, expire`;
}
