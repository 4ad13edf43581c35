import type { VerifiedPayment } from '@repo/x402-core';
import {
  counterTable,
  counterUpsert,
  retryAfterSql,
  X402_VERIFICATION_ATTEMPTS_TABLE,
  type AttemptCounter,
  type CountedAttempt,
} from './attempts';
import { toDate, X402_PAYMENTS_TABLE } from './payments-table';
import type { PaymentClaim, SqlClient } from './types';

// The claim and verified-mark statements of the paid path, shared by every method of the ledger that
// takes a row or records a verification (README, "Claims commit asynchronously").

/** What a claim's insert or takeover returns. */
interface Taken {
  created_at: Date | string;
}

/** What a claim statement that also counted an attempt returns. */
interface TakenAndCounted extends Taken {
  attempts: number | null;
  retry_after_seconds: number | null;
}

/** A claim statement's result: the row's first sighting, and the attempt it counted. */
export interface TakenRow {
  createdAt: Date;
  attempt?: CountedAttempt;
}

/** Statement texts composed from constant parts, built once per pair of parts. */
const composedStatements = new Map<string, Map<string, string>>();

/**
 * The statement `build` makes of the constant strings `a` and `b`, built once: the paid path's
 * statements are the same few texts every time, and a text built per call would be hashed again to
 * find its prepared statement.
 */
export function composed(a: string, b: string, build: () => string): string {
  let byB = composedStatements.get(a);
  if (!byB) composedStatements.set(a, (byB = new Map()));
  let text = byB.get(b);
  if (text === undefined) {
    text = build();
    byB.set(b, text);
  }
  return text;
}

/**
 * Selected by a claim statement for the row it claimed: that implicit transaction commits without
 * waiting for its WAL to reach disk (the setting is local to it). Nothing has been answered or charged
 * on a claim, and every later statement of the payment commits synchronously, which flushes the
 * claim's WAL first: a database crash can lose only a claim whose request then fails and is retried
 * (package README, "Claims commit asynchronously").
 */
const ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true) AS async_commit";

/** The claim of a signature never seen: a new row, or nothing when one exists. */
export const CLAIM_INSERT = `INSERT INTO ${X402_PAYMENTS_TABLE} (signature, network, endpoint, kind, status, claim_token, request_hash, claimed_at, created_at)
         VALUES ($1, $2, $3, $4, 'processing', $5, $6, now(), COALESCE($7::timestamptz, now()))
         ON CONFLICT (signature) DO NOTHING
         RETURNING created_at`;

/**
 * Runs a claim statement (an insert or a takeover `RETURNING created_at`) and, with `counter`, counts
 * one attempt in the same statement only if it claimed the row.
 * @returns the claimed row's first sighting and the attempt counted, or `undefined` when nothing was claimed
 */
export async function take(
  db: SqlClient,
  sql: string,
  values: unknown[],
  counter: AttemptCounter | undefined,
): Promise<TakenRow | undefined> {
  if (!counter) {
    const text = composed(
      sql,
      '',
      () => `WITH claimed AS (${sql}) SELECT claimed.created_at, ${ASYNC_COMMIT} FROM claimed`,
    );
    const row = (await db.$queryRawUnsafe<Taken[]>(text, ...values))[0];
    return row && { createdAt: toDate(row.created_at) };
  }
  const n = values.length;
  const p = { key: `$${n + 1}`, now: `$${n + 2}`, window: `$${n + 3}` };
  // The count reads the claim's RETURNING: it runs only when, and after, the row was claimed (the
  // payment row is always locked before the counter row, as in markVerified). `sql`'s placeholders
  // fix the number of its values, so `sql` and the table determine the text.
  const text = composed(
    sql,
    counter.table ?? X402_VERIFICATION_ATTEMPTS_TABLE,
    () => `WITH claimed AS (${sql}),
       counted AS (${counterUpsert(counterTable(counter), 1, 'claimed', p)})
       SELECT claimed.created_at, counted.points AS attempts,
              ${retryAfterSql('counted.expire', p.now)} AS retry_after_seconds,
              ${ASYNC_COMMIT}
         FROM claimed LEFT JOIN counted ON true`,
  );
  const row = (
    await db.$queryRawUnsafe<TakenAndCounted[]>(
      text,
      ...values,
      counter.key,
      String(Date.now()),
      String(counter.windowMs),
    )
  )[0];
  if (!row) return undefined;
  if (row.attempts === null) return { createdAt: toDate(row.created_at) };
  const count = Number(row.attempts);
  return {
    createdAt: toDate(row.created_at),
    attempt: {
      allowed: count <= counter.limit,
      count,
      retryAfterSeconds: Number(row.retry_after_seconds ?? 1),
    },
  };
}

/**
 * One statement that records `payment` on an unverified claim (`status = 'processing'`, held by
 * `claim.token`) with the further assignments `set` (which name placeholders from `$9` on, bound to
 * `extra`), and gives back the attempt the claim counted.
 * @returns whether the row was updated (`false`: the lease was lost to a takeover)
 */
export async function recordVerified(
  db: SqlClient,
  claim: PaymentClaim,
  payment: VerifiedPayment,
  set: string,
  extra: unknown[] = [],
): Promise<boolean> {
  const update = composed(
    set,
    '',
    () => `UPDATE ${X402_PAYMENTS_TABLE}
     SET ${set}, payer = $3, amount_atomic = $4::numeric, asset = $5, pay_to = $6,
         slot = $7::bigint, block_time = $8::timestamptz, verified_at = now()
     WHERE signature = $1 AND claim_token = $2 AND status = 'processing'`,
  );
  const values = [
    claim.signature,
    claim.token,
    payment.payer,
    payment.amountAtomic.toString(),
    payment.asset,
    payment.payTo,
    String(payment.slot),
    payment.blockTime.toISOString(),
    ...extra,
  ];
  const counter = claim.attempt ? claim.attemptCounter : undefined;
  if (!counter) return (await db.$executeRawUnsafe(update, ...values)) > 0;
  const n = values.length;
  const p = { key: `$${n + 1}`, now: `$${n + 2}`, window: `$${n + 3}` };
  // The give-back selects from the update's count (one row whatever it matched), so the payment row
  // is locked first, as in a claim, and the attempt is given back even when the lease was lost.
  const text = composed(
    update,
    counter.table ?? X402_VERIFICATION_ATTEMPTS_TABLE,
    () => `WITH marked AS (${update} RETURNING 1),
     outcome AS (SELECT count(*)::int AS marked FROM marked),
     given AS (${counterUpsert(counterTable(counter), -1, 'outcome', p)})
     SELECT marked FROM outcome`,
  );
  const rows = await db.$queryRawUnsafe<{ marked: number }[]>(
    text,
    ...values,
    counter.key,
    String(Date.now()),
    String(counter.windowMs),
  );
  return Number(rows[0]?.marked ?? 0) > 0;
}
