import type { Pool } from 'pg';
import type { Sentiment } from './signals';

/** One signal type's count in a range (GET /api/dashboard/types). */
export interface TypeCount {
  type: string;
  sentiment: Sentiment;
  count: number;
}

/** A recent signal as the dashboard's live table shows it (GET /api/dashboard/signals). */
export interface RecentSignal {
  /** The row id (a bigint, as a decimal string). */
  id: string;
  product_id: string;
  /** Null: the signal reached no context and is never analysed. */
  context_id: string | null;
  type: string;
  sentiment: Sentiment;
  /** The payload's JSON, cut to {@link PAYLOAD_PREVIEW_CHARS} characters; null without a payload. */
  payload_preview: string | null;
  /** The signal's time (ISO 8601): the client's `timestamp` when it sent one, else its receipt time. */
  created_at: string;
  /**
   * When the service stored it (ISO 8601); for signals stored before receipt times were kept, their
   * `created_at`, which was their receipt time.
   */
  received_at: string;
}

/** Why a context was or was not analysed (GET /api/dashboard/analysis). */
export interface ContextReadiness {
  context_id: string;
  product_id: string;
  name: string;
  /** Signals routed to the context in the last 24 hours. */
  signals_24h: number;
  last_analyzed_at: string | null;
}

/** A product's signals that reached no context (never analysed). */
export interface UnroutedSignals {
  product_id: string;
  name: string;
  /** Unrouted signals in the last 24 hours. */
  signals_24h: number;
  /** Unrouted signals in the last 7 days. */
  signals_7d: number;
}

/** Characters of a payload the live table shows. */
export const PAYLOAD_PREVIEW_CHARS = 160;

const DAY_MS = 24 * 3_600_000;

/**
 * The dashboard's read-only queries (README, "Dashboard": breakdown by type, latest signals, analysis
 * readiness), in raw SQL on the service's `pg` pool, each scoped to the session's user. They read the
 * tables the other repositories write and change nothing.
 */
export class DashboardRepository {
  /** @param pool the service's `pg` pool */
  constructor(private readonly pool: Pool) {}

  private async rows<T>(text: string, ...values: unknown[]): Promise<T[]> {
    return (await this.pool.query(text, values)).rows as T[];
  }

  /**
   * Signal counts by type and sentiment of one of the user's contexts in `[from, to)`, most frequent
   * first, at most `limit` types.
   * @returns undefined when the user has no such context
   */
  async typeCounts(
    userId: string,
    contextId: string,
    range: { from: Date; to: Date },
    limit: number,
  ): Promise<TypeCount[] | undefined> {
    const owned = await this.rows<unknown>(
      `SELECT 1 FROM contexts c JOIN products p ON p.id = c.product_id WHERE c.id = $1::uuid AND p.user_id = $2::uuid`,
      contextId,
      userId,
    );
    if (owned.length === 0) return undefined;
    return this.rows<TypeCount>(
      `SELECT type, sentiment::text AS sentiment, count(*)::int AS count
         FROM signals WHERE context_id = $1::uuid AND created_at >= $2 AND created_at < $3
        GROUP BY 1, 2 ORDER BY 3 DESC, 1 LIMIT $4`,
      contextId,
      range.from,
      range.to,
      limit,
    );
  }

  /**
   * The user's latest signals in the order they arrived, last received first (not by `created_at`,
   * which a client may set in the past), optionally of one product only.
   * @param limit at most this many rows
   */
  async latestSignals(userId: string, limit: number, productId?: string): Promise<RecentSignal[]> {
    const rows = await this.rows<
      Omit<RecentSignal, 'created_at' | 'received_at'> & { created_at: Date; received_at: Date }
    >(
      // Ids are assigned on insert, so they are the arrival order, also of rows stored before
      // received_at existed. Per product, the newest ids by the (product_id, id) index, then merged:
      // the cost is `limit` rows per product whatever the product's volume.
      `SELECT s.id::text AS id, s.product_id, s.context_id, s.type, s.sentiment::text AS sentiment,
              left(s.payload::text, $3) AS payload_preview, s.created_at,
              coalesce(s.received_at, s.created_at) AS received_at
         FROM products p
        CROSS JOIN LATERAL (
              SELECT * FROM signals s WHERE s.product_id = p.id ORDER BY s.id DESC LIMIT $4
             ) s
        WHERE p.user_id = $1::uuid AND ($2::uuid IS NULL OR p.id = $2::uuid)
        ORDER BY s.id DESC LIMIT $4`,
      userId,
      productId ?? null,
      PAYLOAD_PREVIEW_CHARS,
      limit,
    );
    return rows.map((r) => ({
      ...r,
      created_at: r.created_at.toISOString(),
      received_at: r.received_at.toISOString(),
    }));
  }

  /** Each of the user's contexts with its signals of the last 24 hours before `now`, oldest context first. */
  async contextReadiness(userId: string, now: Date): Promise<ContextReadiness[]> {
    const rows = await this.rows<
      Omit<ContextReadiness, 'last_analyzed_at'> & { last_analyzed_at: Date | null }
    >(
      `SELECT c.id AS context_id, c.product_id, c.name, c.last_analyzed_at,
              (SELECT count(*) FROM signals s
                WHERE s.context_id = c.id AND s.created_at >= $2 AND s.created_at <= $3)::int AS signals_24h
         FROM contexts c JOIN products p ON p.id = c.product_id
        WHERE p.user_id = $1::uuid ORDER BY c.created_at, c.id`,
      userId,
      new Date(now.getTime() - DAY_MS),
      now,
    );
    return rows.map((r) => ({ ...r, last_analyzed_at: r.last_analyzed_at?.toISOString() ?? null }));
  }

  /**
   * Each of the user's products with its signals that reached no context, last 24 hours and 7 days
   * (the analysis reads 24 hours; a week bounds the scan of the (product_id, created_at) index).
   */
  async unroutedSignals(userId: string, now: Date): Promise<UnroutedSignals[]> {
    return this.rows<UnroutedSignals>(
      `SELECT p.id AS product_id, p.name,
              count(s.id) FILTER (WHERE s.created_at >= $2)::int AS signals_24h,
              count(s.id)::int AS signals_7d
         FROM products p
         LEFT JOIN signals s ON s.product_id = p.id AND s.context_id IS NULL
                            AND s.created_at >= $3 AND s.created_at <= $4
        WHERE p.user_id = $1::uuid
        GROUP BY p.id, p.name, p.created_at ORDER BY p.created_at, p.id`,
      userId,
      new Date(now.getTime() - DAY_MS),
      new Date(now.getTime() - 7 * DAY_MS),
      now,
    );
  }
}
