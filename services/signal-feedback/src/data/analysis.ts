import type { Db } from './prisma';
import type { PlanName } from '../schemas/accounts';
import type { Sentiment } from './signals';

/** A context due for analysis, with what the analysis needs to know about it. */
export interface AnalysisCandidate {
  contextId: string;
  productId: string;
  userId: string;
  plan: PlanName;
  name: string;
  content: string;
  positiveSignals: string[];
  negativeSignals: string[];
}

/** Aggregates of one context's signals in a window. */
export interface WindowStats {
  total: number;
  positive: number;
  negative: number;
  neutral: number;
  /** Signal counts by type and sentiment, most frequent first. */
  byType: { type: string; sentiment: Sentiment; count: number }[];
}

/** A top-level payload key/value pair and how many negative and other signals carried it. */
export interface RecurringValue {
  key: string;
  value: string;
  /** Negative signals carrying it. */
  negative: number;
  /** Positive and neutral signals carrying it. */
  other: number;
}

/** Queries of the analysis: due contexts, leases across replicas, window aggregates. */
export class AnalysisRepository {
  /** @param db the Prisma client */
  constructor(private readonly db: Db) {}

  /**
   * Contexts with at least `minSignals` signals since `since` (optionally only the user's).
   */
  async candidates(since: Date, minSignals: number, userId?: string): Promise<AnalysisCandidate[]> {
    const rows = await this.db.$queryRawUnsafe<
      {
        context_id: string;
        product_id: string;
        user_id: string;
        plan: PlanName;
        name: string;
        content: string;
        positive_signals: string[];
        negative_signals: string[];
      }[]
    >(
      `SELECT c.id AS context_id, c.product_id, p.user_id, u.plan::text AS plan, c.name, c.content, c.positive_signals, c.negative_signals
         FROM contexts c JOIN products p ON p.id = c.product_id JOIN users u ON u.id = p.user_id
        WHERE ($3::uuid IS NULL OR p.user_id = $3::uuid)
          AND (SELECT count(*) FROM signals s WHERE s.context_id = c.id AND s.created_at >= $1) >= $2
        ORDER BY c.created_at`,
      since,
      minSignals,
      userId ?? null,
    );
    return rows.map((r) => ({
      contextId: r.context_id,
      productId: r.product_id,
      userId: r.user_id,
      plan: r.plan,
      name: r.name,
      content: r.content,
      positiveSignals: r.positive_signals,
      negativeSignals: r.negative_signals,
    }));
  }

  /**
   * Claims a context for analysis until `until` unless another replica holds an unexpired lease
   * (`FOR UPDATE SKIP LOCKED`, so concurrent claimers never wait on each other or both win).
   * @returns true when this caller holds the lease
   */
  async claim(contextId: string, now: Date, until: Date): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `UPDATE contexts SET analysis_lease_until = $3
        WHERE id = (SELECT id FROM contexts WHERE id = $1::uuid AND (analysis_lease_until IS NULL OR analysis_lease_until <= $2)
                    FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      contextId,
      now,
      until,
    );
    return rows.length === 1;
  }

  /** Releases a lease and records when the context was analysed. */
  async release(contextId: string, analyzedAt: Date | null): Promise<void> {
    await this.db.$executeRawUnsafe(
      'UPDATE contexts SET analysis_lease_until = NULL, last_analyzed_at = COALESCE($2, last_analyzed_at) WHERE id = $1::uuid',
      contextId,
      analyzedAt,
    );
  }

  /** Counts of a context's signals in `[from, to)`, by sentiment and by type. */
  async windowStats(contextId: string, from: Date, to: Date): Promise<WindowStats> {
    const rows = await this.db.$queryRawUnsafe<{ type: string; sentiment: Sentiment; count: number }[]>(
      `SELECT type, sentiment::text AS sentiment, count(*)::int AS count FROM signals
        WHERE context_id = $1::uuid AND created_at >= $2 AND created_at < $3
        GROUP BY type, sentiment ORDER BY count(*) DESC, type`,
      contextId,
      from,
      to,
    );
    const sum = (s: string) => rows.filter((r) => r.sentiment === s).reduce((a, r) => a + r.count, 0);
    return {
      total: rows.reduce((a, r) => a + r.count, 0),
      positive: sum('positive'),
      negative: sum('negative'),
      neutral: sum('neutral'),
      byType: rows,
    };
  }

  /**
   * Top-level scalar payload values of the window's signals, counted separately in the negative signals
   * and in the others, for values carried by at least two signals; reads at most the latest 5,000
   * signals of the window.
   */
  async payloadValues(contextId: string, from: Date, to: Date, limit = 50): Promise<RecurringValue[]> {
    return this.db.$queryRawUnsafe<RecurringValue[]>(
      `SELECT e.key, e.value #>> '{}' AS value,
              count(*) FILTER (WHERE s.sentiment = 'negative')::int AS negative,
              count(*) FILTER (WHERE s.sentiment <> 'negative')::int AS other
         FROM (SELECT payload, sentiment FROM signals
                WHERE context_id = $1::uuid AND created_at >= $2 AND created_at < $3 AND jsonb_typeof(payload) = 'object'
                ORDER BY created_at DESC LIMIT 5000) s,
              jsonb_each(s.payload) e
        WHERE jsonb_typeof(e.value) IN ('string', 'number', 'boolean') AND length(e.value #>> '{}') <= 200
        GROUP BY e.key, e.value #>> '{}'
       HAVING count(*) >= 2
        ORDER BY count(*) DESC, e.key, 2
        LIMIT $4`,
      contextId,
      from,
      to,
      limit,
    );
  }

  /** Starts an analysis run record; returns its id. */
  async startRun(trigger: 'schedule' | 'user' | 'cli'): Promise<string> {
    return (await this.db.analysisRun.create({ data: { trigger } })).id;
  }

  /** Finishes an analysis run record. */
  async finishRun(
    id: string,
    result: { contextsAnalyzed: number; proposalsCreated: number; error?: string },
  ): Promise<void> {
    await this.db.analysisRun.update({ where: { id }, data: { finishedAt: new Date(), ...result } });
  }
}
