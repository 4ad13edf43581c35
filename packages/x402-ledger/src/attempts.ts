import type { SqlClient } from './types';

/** Name of the ledger's own table of verification attempts, the default of {@link AttemptCounter.table}. */
export const X402_VERIFICATION_ATTEMPTS_TABLE = 'x402_verification_attempts';

/**
 * The Prisma model every service that takes x402 payments pastes into its `schema.prisma` beside
 * `X402Payment`; its migration creates the `x402_verification_attempts` table that
 * {@link VerificationAttemptLimit} and the ledger's claim and verified-mark statements count in.
 */
export const X402_VERIFICATION_ATTEMPT_PRISMA_MODEL = `/// x402 verification attempts (@repo/x402-ledger): per client and network, the push payments counted in the current window (one that verifies is given back).
model X402VerificationAttempt {
  /// Whom the attempts are counted for, e.g. "solana:203.0.113.7".
  key    String @id
  /// Attempts counted in the window, those given back deducted.
  points Int
  /// The window's end, milliseconds since the epoch.
  expire BigInt

  @@map("x402_verification_attempts")
}
`;

/**
 * A fixed-window limit on attempts that the ledger counts inside its own statements (README, "Verification
 * attempts"). The counter row has the layout `key text primary key, points integer, expire bigint`
 * (the window's end in milliseconds since the epoch), the ledger's table
 * {@link X402_VERIFICATION_ATTEMPTS_TABLE} unless `table` names another of that layout.
 */
export interface AttemptCounter {
  /** The counter table, a plain SQL identifier; default {@link X402_VERIFICATION_ATTEMPTS_TABLE}. */
  table?: string;
  /** The row's key, e.g. `solana:203.0.113.7`. */
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

/**
 * A counter's table name as SQL: a plain identifier, quoted.
 * @throws Error when `counter.table` is not a plain SQL identifier
 */
export function counterTable(counter: AttemptCounter): string {
  const table = counter.table ?? X402_VERIFICATION_ATTEMPTS_TABLE;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) {
    throw new Error(`attempt counter table must be a plain SQL identifier, got ${JSON.stringify(table)}`);
  }
  return `"${table}"`;
}

/**
 * The upsert of `points` into a counter row: a new window starts at the first write after the last one
 * ended (a give-back then starts one at -1, as rate-limiter-flexible's `reward` does). `p` holds the placeholders of the key,
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

/** Seconds until the window ending at `expire` (ms since the epoch, a placeholder `now` later) ends, at least 1. */
export function retryAfterSql(expire: string, now: string): string {
  return `GREATEST(1, CEIL(GREATEST(${expire} - ${now}::bigint, 0) / 1000.0))::int`;
}

/** Statement texts by counter table: a counter's count and give-back are the same few texts. */
const statements = new Map<string, { count: string; giveBack: string }>();

function statementsOf(counter: AttemptCounter): { count: string; giveBack: string } {
  const table = counterTable(counter);
  let texts = statements.get(table);
  if (!texts) {
    const p = { key: '$1', now: '$2', window: '$3' };
    texts = {
      count: `WITH counted AS (${counterUpsert(table, 1, '(SELECT 1) AS one', p)})
        SELECT points, ${retryAfterSql('expire', p.now)} AS retry_after_seconds FROM counted`,
      giveBack: counterUpsert(table, -1, '(SELECT 1) AS one', p),
    };
    statements.set(table, texts);
  }
  return texts;
}

/** Tuning of a {@link VerificationAttemptLimit}. */
export interface VerificationAttemptLimitOptions {
  /** Attempts allowed per key and window; every one beyond is refused (and still counted). */
  limit: number;
  /** Length of a window in milliseconds, from its first attempt. */
  windowMs: number;
}

/**
 * The limit on verification attempts, counted in the ledger's own table
 * ({@link X402_VERIFICATION_ATTEMPTS_TABLE}) so that it holds across replicas (README, "Verification
 * attempts"). {@link VerificationAttemptLimit.counter} names the row a payment claim counts in
 * ({@link ClaimRequest.attemptCounter}); {@link VerificationAttemptLimit.count} and
 * {@link VerificationAttemptLimit.giveBack} count and give back in the same row, with the same
 * arithmetic, outside a claim (a sighting, an RPC failure). One statement each.
 */
export class VerificationAttemptLimit {
  /**
   * @param db the database client; its statements commit on their own
   * @param options the limit per key and the window's length in milliseconds
   */
  constructor(
    private readonly db: SqlClient,
    private readonly options: VerificationAttemptLimitOptions,
  ) {}

  /** The counter of `key` (e.g. `solana:203.0.113.7`), for a claim to count in. */
  counter(key: string): AttemptCounter {
    return { key, limit: this.options.limit, windowMs: this.options.windowMs };
  }

  /**
   * Counts one attempt for `key`, refused or not.
   * @returns whether it is within the limit, the count and the seconds until the window ends
   * @throws whatever the database throws
   */
  async count(key: string): Promise<CountedAttempt> {
    const rows = await this.db.$queryRawUnsafe<{ points: number; retry_after_seconds: number }[]>(
      statementsOf(this.counter(key)).count,
      key,
      String(Date.now()),
      String(this.options.windowMs),
    );
    const count = Number(rows[0]?.points ?? 1);
    return {
      allowed: count <= this.options.limit,
      count,
      retryAfterSeconds: Number(rows[0]?.retry_after_seconds ?? 1),
    };
  }

  /**
   * Gives back one attempt counted for `key` (a payment that verified, or an attempt that failed on
   * our side).
   * @throws whatever the database throws
   */
  async giveBack(key: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      statementsOf(this.counter(key)).giveBack,
      key,
      String(Date.now()),
      String(this.options.windowMs),
    );
  }
}
