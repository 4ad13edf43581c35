import type { Pool } from 'pg';

/**
 * A routing candidate: the fields of a route match and everything scoring reads (the one declaration
 * of these fields; domain/scoring.ts's `ScoringSkill` is this without `name`, `endpoint` and `mcpTool`).
 */
export interface CandidateRecord {
  skillId: string;
  name: string;
  endpoint: string;
  /**
   * The MCP tool the skill calls at `endpoint`; absent (or `null`) for an HTTP skill (README, "MCP
   * servers as skills").
   */
  mcpTool?: string | null;
  /**
   * Stemmed lexemes of the skill's capabilities and description (`match_terms`); a candidate carries
   * only those that also occur in the task, which is all capability_match needs.
   */
  matchTerms: string[];
  /** Supported chains (lowercase). */
  chains: string[];
  /** Price per call in USD; 0 is free. */
  priceUsd: number;
  /** Share of successful health checks and counted call reports over the last 24 hours, 0..1. */
  successRate24h: number;
  /** Average latency in ms over the last 24 hours; `null` when unknown. */
  avgLatencyMs: number | null;
  /** Counted call reports over the last 30 days. */
  calls30d: number;
  /** Sum and count of satisfaction ratings (1–5) of counted call reports over the last 30 days. */
  ratingSum: number;
  ratingCount: number;
  /**
   * Cosine similarity of the skill's stored embedding and the task's, when the route uses meaning
   * and the skill has an embedding of the configured model (README, "Search by meaning").
   */
  similarity?: number;
}

/**
 * The select list of a {@link CandidateRecord} over `skills s JOIN skill_stats st`, giving the
 * {@link CandidateColumns}: the SQL ranking and the routing index's reads (data/routing-rows.ts) both
 * select it.
 * @param matchTerms the SQL expression of the `match_terms` column (the SQL ranking keeps only the
 *   task's lexemes; the index reads them all)
 */
export const candidateColumns = (matchTerms: string) =>
  `s.skill_id, s.name, s.endpoint, s.mcp_tool, s.chains, s.price_usd, ${matchTerms} AS match_terms,
   st.success_rate_24h, st.avg_latency_ms, st.calls_30d, st.rating_sum, st.rating_count`;

/**
 * Whether routing may return a skill (README, "Routing receipts"): `active` ones are routed; the
 * others are listed among a route's rejected candidates only. `unhealthy`: suspended by the health
 * checks; `degraded`: its answers stopped conforming; `unverified_version`: an update of a skill whose
 * earlier revision passed verification, awaiting verification of its own.
 */
export type RouteState = 'active' | 'unhealthy' | 'degraded' | 'unverified_version';

/**
 * The SQL condition of the skills a route may name (`s` is `skills`): the active ones, and those
 * with a {@link RouteState} other than `active`. Skills never verified (pending their first
 * verification, or failed) are not among them.
 */
export const LISTED_SKILLS = `(s.status IN ('active', 'suspended', 'degraded')
  OR (s.status = 'pending_verification'
      AND EXISTS (SELECT 1 FROM skill_versions v WHERE v.skill_id = s.skill_id AND v.status = 'passed')))`;

/** The SQL expression of a listed skill's {@link RouteState} (`s` is `skills`). */
export const ROUTE_STATE = `CASE s.status WHEN 'active' THEN 'active' WHEN 'suspended' THEN 'unhealthy'
  WHEN 'degraded' THEN 'degraded' ELSE 'unverified_version' END`;

/** What a route's rejected candidate needs of a skill (domain/route-receipts.ts). */
export interface RejectableSkill {
  skillId: string;
  name: string;
  /** Why routing could not return it, besides the chain filter. */
  state: RouteState;
  /** Supported chains (lowercase). */
  chains: string[];
  /** How many of the task's distinct lexemes are among the skill's capability and description lexemes. */
  sharedTerms: number;
  /** Price per call in USD. */
  priceUsd: number;
  /** Average latency in ms over the last 24 hours; `null` when unknown. */
  avgLatencyMs: number | null;
}

/** The columns {@link candidateColumns} selects, as `pg` returns them. */
export interface CandidateColumns {
  skill_id: string;
  name: string;
  endpoint: string;
  mcp_tool: string | null;
  chains: string[] | null;
  price_usd: number;
  match_terms: string[] | null;
  success_rate_24h: number;
  avg_latency_ms: number | null;
  calls_30d: number;
  rating_sum: number;
  rating_count: number;
}

interface CandidateRow extends CandidateColumns {
  /** Set on one row only. */
  task_terms: string[] | null;
  /** bigint, as a string from the driver */
  total: string;
}

/** A {@link CandidateRecord} from its columns (numbers parsed, null arrays empty). */
export function candidateOf(r: CandidateColumns): CandidateRecord {
  return {
    skillId: r.skill_id,
    name: r.name,
    endpoint: r.endpoint,
    // Absent for HTTP skills, so that candidates equal the skills as written (the property tests).
    ...(r.mcp_tool === null ? {} : { mcpTool: r.mcp_tool }),
    chains: r.chains ?? [],
    priceUsd: Number(r.price_usd),
    matchTerms: r.match_terms ?? [],
    successRate24h: Number(r.success_rate_24h),
    avgLatencyMs: r.avg_latency_ms === null ? null : Number(r.avg_latency_ms),
    calls30d: Number(r.calls_30d),
    ratingSum: Number(r.rating_sum),
    ratingCount: Number(r.rating_count),
  };
}

/** Routing candidates out of the full-text index of active skills (`skills` and `skill_stats`). */
export class RouteCandidates {
  /**
   * @param pool the `pg` pool, used directly rather than through Prisma (hundreds of rows per
   *   request; the driver's own row parsing is markedly cheaper there)
   */
  constructor(private readonly pool: Pool) {}

  /**
   * Routing candidates from the GIN-indexed full-text vector: active skills whose name, capabilities
   * or description share at least one lexeme with the task (the task's `plainto_tsquery` with its
   * ANDs turned into ORs), restricted to skills supporting at least one of `chains` when given.
   * With `semantic` (README, "Search by meaning"), also the active skills whose embedding of
   * `embeddingModel` has a cosine similarity of at least `semantic.minSimilarity` with the task's, and
   * every candidate carries its similarity (summed in PostgreSQL in double precision in index order,
   * as domain/semantic.ts's `similarity` sums it). When more than `limit` skills match, the best
   * `limit` by `ts_rank` (then similarity) are kept. A candidate's `matchTerms` holds only those of
   * its capability and description lexemes that occur in the task (the intersection is all
   * capability_match needs, and it keeps the rows small).
   * @param task the natural-language task
   * @param chains required chains (lowercase); empty or absent: any chain
   * @param limit most candidates returned
   * @param semantic the task's embedding and threshold, with the model whose embeddings count
   * @returns the task's distinct lexemes, the candidates, and how many skills matched before the cut
   */
  async find(
    task: string,
    chains: string[] | undefined,
    limit: number,
    semantic?: { vector: Float64Array; minSimilarity: number; embeddingModel: string },
  ): Promise<{ taskTerms: string[]; candidates: CandidateRecord[]; total: number }> {
    const chainFilter = chains && chains.length > 0;
    // One round trip: the task's lexemes ride along on every row (a few short strings), and of the
    // skill's lexemes only those in the task are sent (all capability_match needs). Ranking by
    // ts_rank is only paid for when more than `limit` skills match.
    const params: unknown[] = [task, 0];
    const param = (value: unknown) => `$${params.push(value)}`;
    const chainSql = chainFilter ? `AND s.chains && ${param(chains)}::text[]` : '';
    let similaritySql = 'NULL::float8';
    let matchSql = 's.route_vector @@ q.tsq';
    if (semantic) {
      const vector = param(Array.from(semantic.vector));
      similaritySql = `CASE WHEN s.embedding_model = ${param(semantic.embeddingModel)}
                              AND cardinality(s.embedding) = ${param(semantic.vector.length)}
                            THEN (SELECT sum(a::float8 * b) FROM unnest(s.embedding, ${vector}::float8[]) AS t(a, b)) END`;
      matchSql = `(s.route_vector @@ q.tsq OR (cardinality(q.terms) > 0 AND e.similarity >= ${param(semantic.minSimilarity)}::float8))`;
    }
    const query = async (ranked: boolean) => {
      params[1] = ranked ? limit : limit + 1;
      return (
        await this.pool.query<CandidateRow & { similarity: number | null }>(
          `WITH q AS (SELECT replace(plainto_tsquery('english', $1)::text, ' & ', ' | ')::tsquery AS tsq,
                             tsvector_to_array(to_tsvector('english', $1)) AS terms)
           SELECT ${candidateColumns('ARRAY(SELECT t FROM unnest(s.match_terms) t WHERE t = ANY (q.terms))')},
                  e.similarity,
                  CASE WHEN row_number() OVER () = 1 THEN q.terms END AS task_terms, count(*) OVER () AS total
             FROM q, skills s JOIN skill_stats st ON st.skill_id = s.skill_id
                  CROSS JOIN LATERAL (SELECT ${similaritySql} AS similarity) e
            WHERE s.status = 'active' AND ${matchSql} ${chainSql}
            ${ranked ? 'ORDER BY ts_rank(s.route_vector, q.tsq) DESC, e.similarity DESC NULLS LAST, s.skill_id' : ''}
            LIMIT $2`,
          params,
        )
      ).rows;
    };
    let rows = await query(false);
    if (rows.length > limit) rows = await query(true);
    return {
      taskTerms: rows.find((r) => r.task_terms)?.task_terms ?? [],
      candidates: rows.map((r) => {
        const candidate = candidateOf(r);
        if (r.similarity !== null) candidate.similarity = Number(r.similarity);
        return candidate;
      }),
      total: Number(rows[0]?.total ?? 0),
    };
  }

  /**
   * The route's snapshot instant and the skills it removes (README, "Routing receipts"): skills sharing
   * a lexeme with the task (as {@link find} matches them) that are active but support none of
   * `chains`, or that routing cannot return at all ({@link LISTED_SKILLS} that are not active), the
   * nearest `max` by shared capability and description lexemes plus every skill tied with the last of
   * them (the caller orders ties by `skill_id` in code-unit order, which no PostgreSQL collation gives).
   * @param chains required chains (lowercase); empty or absent: the chain filter removes nothing
   * @param max how many nearest to keep (at least one)
   * @returns `snapshotAt`, the database's clock when the read started (every write committed before
   *   it is seen), the task's distinct lexeme count, and the skills
   * @throws whatever PostgreSQL throws
   */
  async rejected(
    task: string,
    chains: string[] | undefined,
    max: number,
  ): Promise<{ snapshotAt: Date; taskTermCount: number; skills: RejectableSkill[] }> {
    const { rows } = await this.pool.query<{
      snapshot_at: Date;
      term_count: number;
      rejected: {
        skill_id: string;
        name: string;
        state: RouteState;
        chains: string[] | null;
        price_usd: number;
        avg_latency_ms: number | null;
        shared: number;
      }[];
    }>(
      `WITH q AS (SELECT replace(plainto_tsquery('english', $1)::text, ' & ', ' | ')::tsquery AS tsq,
                         tsvector_to_array(to_tsvector('english', $1)) AS terms),
            r AS (SELECT s.skill_id, s.name, ${ROUTE_STATE} AS state, s.chains, s.price_usd, st.avg_latency_ms,
                         (SELECT count(*) FROM (SELECT unnest(s.match_terms) INTERSECT SELECT unnest(q.terms)) i)::int AS shared
                    FROM q, skills s JOIN skill_stats st ON st.skill_id = s.skill_id
                   WHERE s.route_vector @@ q.tsq AND ${LISTED_SKILLS}
                     AND (s.status <> 'active'
                          OR (cardinality($2::text[]) > 0 AND NOT coalesce(s.chains && $2::text[], false)))),
            cut AS (SELECT coalesce((SELECT shared FROM r ORDER BY shared DESC OFFSET $3 - 1 LIMIT 1), 0) AS shared)
       SELECT now() AS snapshot_at, cardinality(q.terms) AS term_count,
              coalesce((SELECT json_agg(r) FROM r, cut WHERE r.shared >= cut.shared), '[]') AS rejected
         FROM q`,
      [task, chains ?? [], max],
    );
    const row = rows[0];
    if (!row) throw new Error('the rejected-candidates query returned no row');
    return {
      snapshotAt: row.snapshot_at,
      taskTermCount: Number(row.term_count),
      skills: row.rejected.map((r) => ({
        skillId: r.skill_id,
        name: r.name,
        state: r.state,
        chains: r.chains ?? [],
        sharedTerms: r.shared,
        priceUsd: Number(r.price_usd),
        avgLatencyMs: r.avg_latency_ms === null ? null : Number(r.avg_latency_ms),
      })),
    };
  }
}
