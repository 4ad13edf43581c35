import type { Pool, PoolClient } from 'pg';
import type { PlanName } from '../schemas/accounts';

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
  /** The signal's time (ISO 8601) when the client sent one; the time of receipt otherwise. */
  occurredAt?: string;
  /** The client's idempotency key: a key this product used in the last window is not stored again. */
  messageId?: string;
}

/**
 * Outcome of {@link SignalRepository.insertWithinQuota}: the signals stored and the month's usage after
 * them, or, when the new signals would cross the limit, the current usage and how many new signals the
 * batch had (`requested`). `duplicates` counts the signals skipped for a `messageId` already received
 * (in the window, or earlier in the same batch).
 */
export type InsertOutcome =
  | { ok: true; inserted: number; duplicates: number }
  | { ok: false; used: number; requested: number; duplicates: number };

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
      INSERT INTO signals (product_id, context_id, type, payload, sentiment, created_at, received_at, message_id)
      SELECT $5::uuid, x.c, x.t, x.p, x.s::"Sentiment", COALESCE(x.at, now()), now(), x.m
        FROM jsonb_to_recordset($6::jsonb) AS x(c uuid, t text, p jsonb, s text, at timestamptz, m text)
       WHERE EXISTS (SELECT 1 FROM quota)
      RETURNING 1
    )
    SELECT (SELECT signals FROM quota) AS used, (SELECT count(*) FROM inserted)::int AS inserted`,
};

/**
 * Claims a batch's message ids for a product (see {@link SignalRepository.insertWithinQuota}): inserts
 * each id, or takes over a row older than the window; returns the ids claimed, so an id another
 * request holds (committed, or in flight: the insert waits for that transaction) is not returned. The ids
 * go in sorted, so two batches sharing ids lock them in the same order and cannot deadlock.
 */
const CLAIM_MESSAGE_IDS = {
  name: 'signal-feedback/claim-message-ids',
  text: `INSERT INTO signal_message_ids AS m (product_id, message_id, received_at)
    SELECT $1::uuid, id, now() FROM unnest($2::text[]) AS id ORDER BY id
    ON CONFLICT (product_id, message_id) DO UPDATE SET received_at = EXCLUDED.received_at
     WHERE m.received_at < EXCLUDED.received_at - $3::int * interval '1 millisecond'
    RETURNING message_id`,
};

/**
 * Rows as the insert statements read them (`jsonb_to_recordset`), one short key per column: context,
 * type, payload, sentiment, time, message id.
 */
function serialiseRows(rows: readonly SignalRow[]): string {
  return JSON.stringify(
    rows.map((r) => ({
      c: r.contextId,
      t: r.type,
      p: r.payload,
      s: r.sentiment,
      at: r.occurredAt,
      m: r.messageId,
    })),
  );
}

/**
 * The history import (see {@link SignalRepository.importHistory}): the columns of `INSERT_WITHIN_QUOTA`
 * without the quota, skipping a signal whose message id this product already stored at the same time.
 * The lookup runs on the `(product_id, created_at)` index.
 */
const IMPORT_HISTORY = {
  name: 'signal-feedback/import-history',
  text: `WITH inserted AS (
      INSERT INTO signals (product_id, context_id, type, payload, sentiment, created_at, received_at, message_id)
      SELECT $1::uuid, x.c, x.t, x.p, x.s::"Sentiment", x.at, now(), x.m
        FROM jsonb_to_recordset($2::jsonb) AS x(c uuid, t text, p jsonb, s text, at timestamptz, m text)
       WHERE x.m IS NULL OR NOT EXISTS (
         SELECT 1 FROM signals s WHERE s.product_id = $1::uuid AND s.created_at = x.at AND s.message_id = x.m)
      RETURNING context_id
    )
    SELECT context_id, count(*)::int AS inserted FROM inserted GROUP BY context_id`,
};

/**
 * Runs `work` in a transaction on one pooled connection: committed when it says so, rolled back
 * otherwise or when it throws. A connection that cannot even roll back is destroyed rather than
 * returned to the pool.
 */
async function inTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<{ value: T; commit: boolean }>,
): Promise<T> {
  const client = await pool.connect();
  let result: { value: T; commit: boolean };
  try {
    await client.query('BEGIN');
    result = await work(client);
    await client.query(result.commit ? 'COMMIT' : 'ROLLBACK');
  } catch (err) {
    const broken = await client.query('ROLLBACK').then(
      () => undefined,
      (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
    );
    client.release(broken);
    throw err;
  }
  client.release();
  return result.value;
}

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
    return this.findOwner('p.api_key_hash = $1', apiKeyHash);
  }

  /**
   * The product `productId` (a UUID), with its plan and contexts, as {@link findKeyOwner} reads it;
   * undefined when none (the operator's history import, README "Importing history").
   */
  async findProductOwner(productId: string): Promise<KeyOwner | undefined> {
    return this.findOwner('p.id = $1::uuid', productId);
  }

  private async findOwner(where: string, value: string): Promise<KeyOwner | undefined> {
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
        WHERE ${where}`,
      value,
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
   * Stores dated history for a product (README, "Importing history"): the columns POST /api/signals
   * stores, without the monthly quota (history is not this month's traffic: `usage_counters` is not
   * touched). A signal with a `messageId` is already present when this product has a stored signal
   * with the same id at the same time (also earlier in `rows`): it is skipped, so importing a file
   * again stores nothing twice; a signal without one is always stored. One transaction under a
   * per-product advisory lock, so concurrent imports of one file cannot both store a signal.
   * @param rows routed signals, each with its `occurredAt` (ISO 8601)
   * @returns the signals stored per context id (null: unrouted)
   * @throws {@link UnstorableTextError} for text PostgreSQL cannot store; the database's foreign-key
   *   error (code 23503) when a context or the product was deleted meanwhile
   */
  async importHistory(productId: string, rows: readonly SignalRow[]): Promise<Map<string | null, number>> {
    const seen = new Set<string>();
    const fresh = rows.filter((r) => {
      if (r.messageId === undefined) return true;
      const key = `${r.occurredAt ?? ''} ${r.messageId}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    const json = serialiseRows(fresh);
    if (UNSTORABLE.test(json)) throw new UnstorableTextError();
    return inTransaction(this.pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('signal-import:' || $1, 0))", [
        productId,
      ]);
      const { rows: counts } = await client.query<{ context_id: string | null; inserted: number }>({
        name: IMPORT_HISTORY.name,
        text: IMPORT_HISTORY.text,
        values: [productId, json],
      });
      return { value: new Map(counts.map((c) => [c.context_id, c.inserted])), commit: true };
    });
  }

  /**
   * Stores a batch only if the user's monthly signal counter can take all of its new signals (README,
   * "Plans and quotas" and "Timestamps and message ids"). The quota and the insert are one statement: a
   * conditional upsert of the counter row (`... DO UPDATE ... WHERE signals + n <= limit`, which locks
   * the row, so concurrent batches are serialised and the quota is exact) and the insert, which runs
   * only when the counter moved. A batch that would cross the limit stores nothing.
   *
   * A batch with `messageId`s first claims them in the same transaction (a unique row per product and
   * id, see `CLAIM_MESSAGE_IDS`): a signal whose id another request already holds, or that repeats an
   * id earlier in the batch, is a duplicate, neither stored nor counted; a refused batch rolls its claims
   * back. Concurrent requests with the same ids, on any replica, wait for each other on the unique
   * index, so each id is stored and counted once.
   * @param month first day of the UTC month, `YYYY-MM-01`
   * @param limit the plan's monthly signal limit
   * @param messageIdWindowMs how long an id is remembered (milliseconds); an older claim is taken over
   * @returns the rows inserted and the duplicates, or `ok: false` with the current usage
   * @throws {@link UnstorableTextError} for text PostgreSQL cannot store; the database's foreign-key
   *   error (code 23503) when a context or the product was deleted meanwhile
   */
  async insertWithinQuota(args: {
    userId: string;
    productId: string;
    month: string;
    limit: number;
    rows: SignalRow[];
    messageIdWindowMs: number;
  }): Promise<InsertOutcome> {
    const all = serialiseRows(args.rows);
    if (UNSTORABLE.test(all)) throw new UnstorableTextError();
    // A plain loop: this runs for every batch, most of which carry no ids.
    const idSet = new Set<string>();
    for (const r of args.rows) if (r.messageId !== undefined) idSet.add(r.messageId);
    const ids = [...idSet];
    if (ids.length === 0) {
      return this.insertCounted(this.pool, { ...args, n: args.rows.length, json: all, duplicates: 0 });
    }
    return inTransaction(this.pool, async (client) => {
      const { rows: claimedRows } = await client.query<{ message_id: string }>({
        name: CLAIM_MESSAGE_IDS.name,
        text: CLAIM_MESSAGE_IDS.text,
        values: [args.productId, ids, args.messageIdWindowMs],
      });
      const claimed = new Set(claimedRows.map((r) => r.message_id));
      // A claimed id is stored with its first signal; a later signal with it is a duplicate.
      const fresh = args.rows.filter((r) => r.messageId === undefined || claimed.delete(r.messageId));
      const duplicates = args.rows.length - fresh.length;
      const outcome: InsertOutcome =
        fresh.length === 0
          ? { ok: true, inserted: 0, duplicates }
          : await this.insertCounted(client, {
              ...args,
              n: fresh.length,
              json: fresh.length === args.rows.length ? all : serialiseRows(fresh),
              duplicates,
            });
      return { value: outcome, commit: outcome.ok };
    });
  }

  /** The counted insert of {@link insertWithinQuota} for `n` new signals serialised as `json`. */
  private async insertCounted(
    db: Pick<PoolClient, 'query'>,
    args: {
      userId: string;
      productId: string;
      month: string;
      limit: number;
      n: number;
      json: string;
      duplicates: number;
    },
  ): Promise<InsertOutcome> {
    const { rows: result } = await db.query<{ used: number | null; inserted: number }>({
      name: INSERT_WITHIN_QUOTA.name,
      text: INSERT_WITHIN_QUOTA.text,
      values: [args.userId, args.month, args.n, args.limit, args.productId, args.json],
    });
    const row = result[0];
    if (row && row.used !== null) return { ok: true, inserted: row.inserted, duplicates: args.duplicates };
    // Read on the same connection: a transaction holding its client must not wait for another.
    const { rows: usage } = await db.query<{ signals: number }>(
      'SELECT signals FROM usage_counters WHERE user_id = $1::uuid AND month = $2::date',
      [args.userId, args.month],
    );
    return {
      ok: false,
      used: usage[0]?.signals ?? 0,
      requested: args.n,
      duplicates: args.duplicates,
    };
  }

  /**
   * Deletes the message ids received before `before` (README, "Timestamps and message ids"), in rounds
   * of at most 10,000 rows so that no round holds many locks or a long transaction.
   * @param before the end of the window: now minus the window length
   * @returns the number of rows deleted
   */
  async deleteExpiredMessageIds(before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM signal_message_ids WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM signal_message_ids WHERE received_at < $1 LIMIT 10000))`,
        [before],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < 10000) return total;
    }
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
  const constraint = foreignKeyViolationOf(err);
  return constraint === 'signals_product_id_fkey' || constraint === 'signal_message_ids_product_id_fkey';
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
