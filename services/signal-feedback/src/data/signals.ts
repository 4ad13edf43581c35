import type { Pool } from 'pg';
import type { PlanName } from '../schemas';

/**
 * How a signal counts for its context, as stored in `signals.sentiment` (README, "Routing,
 * classification and analysis").
 */
export type Sentiment = 'positive' | 'negative' | 'neutral';

/** What an API key authenticates: the product, its owner's plan and its contexts' signal lists. */
export interface KeyOwner {
  productId: string;
  userId: string;
  plan: PlanName;
  apiKeyHash: string;
  contexts: { id: string; positiveSignals: string[]; negativeSignals: string[] }[];
}

/** A signal ready to store. */
export interface SignalRow {
  type: string;
  payload?: Record<string, unknown>;
  contextId: string | null;
  sentiment: Sentiment;
}

/** Outcome of {@link SignalRepository.insertWithinQuota}. */
export type InsertOutcome = { ok: true; inserted: number; used: number } | { ok: false; used: number };

/**
 * An escaped NUL or unpaired surrogate in serialised JSON (an odd run of backslashes before `u`):
 * PostgreSQL's text and jsonb cannot store either. Paired surrogates are serialised raw, never escaped.
 */
const UNSTORABLE = /(?<!\\)(?:\\\\)*\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/;

/**
 * The batch insert under the monthly quota (see {@link SignalRepository.insertWithinQuota}), as a named
 * statement: each pooled connection has PostgreSQL parse and plan it once instead of once per batch.
 */
const INSERT_WITHIN_QUOTA = {
  name: 'signal-feedback/insert-within-quota',
  text: `WITH quota AS (
      INSERT INTO usage_counters AS u (user_id, month, signals, proposals)
      SELECT $1::uuid, $2::date, $3::int, 0 WHERE $3::int <= $4::int
      ON CONFLICT (user_id, month) DO UPDATE SET signals = u.signals + EXCLUDED.signals
       WHERE u.signals + EXCLUDED.signals <= $4::int
      RETURNING u.signals
    ), inserted AS (
      INSERT INTO signals (product_id, context_id, type, payload, sentiment)
      SELECT $5::uuid, x.c, x.t, x.p, x.s::"Sentiment"
        FROM jsonb_to_recordset($6::jsonb) AS x(c uuid, t text, p jsonb, s text)
       WHERE EXISTS (SELECT 1 FROM quota)
      RETURNING 1
    )
    SELECT (SELECT signals FROM quota) AS used, (SELECT count(*) FROM inserted)::int AS inserted`,
};

/** Thrown when a signal holds text PostgreSQL cannot store (NUL, unpaired surrogate); nothing was written. */
export class UnstorableTextError extends Error {
  constructor() {
    super('signal text contains NUL or an unpaired surrogate');
    this.name = 'UnstorableTextError';
  }
}

/**
 * Signals and the monthly signal counters: the ingestion hot path, in raw SQL straight on the `pg` pool
 * that Prisma's adapter also uses (no query-engine layer per request).
 */
export class SignalRepository {
  /** @param pool the service's `pg` pool (shared with the Prisma client) */
  constructor(private readonly pool: Pool) {}

  private async query<T extends unknown[]>(text: string, ...values: unknown[]): Promise<T> {
    return (await this.pool.query(text, values)).rows as T;
  }

  /** The product whose key hashes to `apiKeyHash`, with its plan and contexts; undefined when none. */
  async findKeyOwner(apiKeyHash: string): Promise<KeyOwner | undefined> {
    const rows = await this.query<
      {
        product_id: string;
        user_id: string;
        plan: PlanName;
        api_key_hash: string;
        contexts: { id: string; p: string[]; n: string[] }[];
      }[]
    >(
      `SELECT p.id AS product_id, p.user_id, u.plan::text AS plan, p.api_key_hash,
              COALESCE((SELECT json_agg(json_build_object('id', c.id, 'p', c.positive_signals, 'n', c.negative_signals))
                        FROM contexts c WHERE c.product_id = p.id), '[]'::json) AS contexts
         FROM products p JOIN users u ON u.id = p.user_id
        WHERE p.api_key_hash = $1`,
      apiKeyHash,
    );
    const r = rows[0];
    if (!r) return undefined;
    return {
      productId: r.product_id,
      userId: r.user_id,
      plan: r.plan,
      apiKeyHash: r.api_key_hash,
      contexts: r.contexts.map((c) => ({ id: c.id, positiveSignals: c.p, negativeSignals: c.n })),
    };
  }

  /**
   * Stores a batch only if the user's monthly signal counter can take all of it, in one statement (one
   * transaction): a conditional upsert of the counter row (`... DO UPDATE ... WHERE signals + n <= limit`,
   * which locks the row, so concurrent batches are serialised and the quota is exact) and the insert,
   * which runs only when the counter moved. A batch that would cross the limit stores nothing.
   * @param month first day of the UTC month, `YYYY-MM-01`
   * @param limit the plan's monthly signal limit
   * @returns the rows inserted and the month's usage, or `ok: false` with the current usage
   * @throws the database's foreign-key error (code 23503) when a context was deleted meanwhile
   */
  async insertWithinQuota(args: {
    userId: string;
    productId: string;
    month: string;
    limit: number;
    rows: SignalRow[];
  }): Promise<InsertOutcome> {
    const n = args.rows.length;
    const json = JSON.stringify(
      args.rows.map((r) => ({ c: r.contextId, t: r.type, p: r.payload, s: r.sentiment })),
    );
    if (UNSTORABLE.test(json)) throw new UnstorableTextError();
    const { rows: result } = await this.pool.query<{ used: number | null; inserted: number }>({
      name: INSERT_WITHIN_QUOTA.name,
      text: INSERT_WITHIN_QUOTA.text,
      values: [args.userId, args.month, n, args.limit, args.productId, json],
    });
    const row = result[0];
    if (row && row.used !== null) return { ok: true, inserted: row.inserted, used: row.used };
    return { ok: false, used: await this.monthlySignals(args.userId, args.month) };
  }

  /**
   * Signal counts of one context per UTC hour or day in `[from, to)`, only the buckets that have
   * signals (the caller fills the empty ones), when the scope owns the context.
   * @param scope the key's product or the session's user
   * @returns undefined when the scope has no such context; else bucket start -> counts
   */
  async series(
    contextId: string,
    scope: { productId: string } | { userId: string },
    range: { from: Date; to: Date; bucket: 'hour' | 'day' },
  ): Promise<Map<number, { signals: number; negative: number }> | undefined> {
    const owned = await this.query<unknown[]>(
      `SELECT 1 FROM contexts c JOIN products p ON p.id = c.product_id
        WHERE c.id = $1::uuid AND ${'userId' in scope ? 'p.user_id' : 'p.id'} = $2::uuid`,
      contextId,
      'userId' in scope ? scope.userId : scope.productId,
    );
    if (owned.length === 0) return undefined;
    const rows = await this.query<{ start: Date; signals: number; negative: number }[]>(
      `SELECT date_trunc($4, created_at, 'UTC') AS start, count(*)::int AS signals,
              count(*) FILTER (WHERE sentiment = 'negative')::int AS negative
         FROM signals WHERE context_id = $1::uuid AND created_at >= $2 AND created_at < $3
        GROUP BY 1`,
      contextId,
      range.from,
      range.to,
      range.bucket,
    );
    return new Map(rows.map((r) => [r.start.getTime(), { signals: r.signals, negative: r.negative }]));
  }

  /** Signals counted this month for the user. */
  async monthlySignals(userId: string, month: string): Promise<number> {
    const rows = await this.query<{ signals: number }[]>(
      'SELECT signals FROM usage_counters WHERE user_id = $1::uuid AND month = $2::date',
      userId,
      month,
    );
    return rows[0]?.signals ?? 0;
  }
}

/**
 * Whether an error is PostgreSQL's foreign-key violation (23503) of `signals.product_id`: the product
 * was deleted since its key was authenticated (possibly from the key cache).
 */
export function isProductForeignKeyViolation(err: unknown): boolean {
  return foreignKeyViolationOf(err) === 'signals_product_id_fkey';
}

/**
 * Whether an error is PostgreSQL's foreign-key violation (23503) of `signals.context_id` (a context
 * deleted between routing and insert), as `pg` or Prisma's driver adapter reports it.
 */
export function isContextForeignKeyViolation(err: unknown): boolean {
  return foreignKeyViolationOf(err) === 'signals_context_id_fkey';
}

/** The constraint of a foreign-key violation (23503), as `pg` or Prisma's driver adapter reports it. */
function foreignKeyViolationOf(err: unknown): unknown {
  const e = err as {
    code?: unknown;
    constraint?: unknown;
    meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; constraint?: { index?: unknown } } } };
  } | null;
  if (e?.code === '23503') return e.constraint;
  const cause = e?.meta?.driverAdapterError?.cause;
  return cause?.originalCode === '23503' ? cause.constraint?.index : undefined;
}
