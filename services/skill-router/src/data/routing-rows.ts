import { LRUCache } from 'lru-cache';
import type { Pool } from 'pg';
import {
  candidateColumns,
  candidateOf,
  LISTED_SKILLS,
  ROUTE_STATE,
  type CandidateColumns,
  type CandidateRecord,
  type RouteState,
} from './route-candidates';

/**
 * The channel every write of a column routing reads notifies, with the skill's id as payload, in the
 * same transaction (so the notification goes out when, and only if, the write commits).
 */
export const ROUTING_CHANNEL = 'skill_router_routing';

/**
 * The SQL expression that notifies {@link ROUTING_CHANNEL} for a skill id column or parameter, for
 * the `RETURNING` or final `SELECT` of every routing-relevant write. It yields `''` (text), since
 * the driver behind Prisma cannot read `pg_notify`'s `void`.
 */
export const notifyRouting = (skillIdSql: string) =>
  `pg_notify('${ROUTING_CHANNEL}', ${skillIdSql})::text AS notified`;

/**
 * A skill as the routing index holds it: a candidate with all its lexemes, and whether routing may
 * return it (the others are only named among a route's rejected candidates).
 */
export interface RoutableSkill extends CandidateRecord {
  /** `active`, or why routing cannot return it (README, "Routing receipts"). */
  state: RouteState;
  /**
   * The skill's unit embedding of the configured model (README, "Search by meaning"); `null` or absent
   * when it has none (or search by meaning is off).
   */
  embedding?: Float32Array | null;
  /** Stemmed lexemes of the name, capabilities and description (`route_vector`), distinct. */
  routeTerms: string[];
  /** Every stemmed lexeme of the capabilities and description (`match_terms`), distinct. */
  matchTerms: string[];
}

interface RoutableRow extends CandidateColumns {
  route_terms: string[] | null;
  state: RouteState;
  embedding: number[] | null;
}

/** The columns of a {@link RoutableSkill}; `modelParam` is the parameter holding the embeddings model (NULL: none). */
const routableColumns = (modelParam: string) =>
  `${candidateColumns('s.match_terms')}, tsvector_to_array(s.route_vector) AS route_terms,
   ${ROUTE_STATE} AS state, CASE WHEN s.embedding_model = ${modelParam}::text THEN s.embedding END AS embedding`;

function toRoutable(r: RoutableRow): RoutableSkill {
  return {
    ...candidateOf(r),
    routeTerms: r.route_terms ?? [],
    state: r.state,
    embedding: r.embedding && r.embedding.length > 0 ? Float32Array.from(r.embedding) : null,
  };
}

/** What {@link RoutingRows.changedSince} found. */
export interface RoutingChanges {
  /** The database's clock when the check ran: the next check's starting point (minus a margin). */
  checkedAt: Date;
  /** Skills whose routing columns were written after the given instant, in any status. */
  skillIds: string[];
  /** Skills a route may name ({@link LISTED_SKILLS}: active or not) at the time of the check. */
  listedSkills: number;
}

/**
 * The routing index's reads from PostgreSQL (`skills` joined with `skill_stats`): the skills a route
 * may name (active ones, and those listed among its rejected candidates) in pages, chosen skills again after a notification, the ids written since a watermark, and the task's
 * lexemes computed by PostgreSQL's own `english` configuration, so that the index and the SQL ranking
 * stem identically (README, "Routing and the score").
 */
export class RoutingRows {
  /**
   * Lexemes of recent tasks, joined by NUL (which PostgreSQL text cannot hold): agents repeat tasks,
   * and the lexemes of a string never change. One string per task rather than an array of them
   * takes about half the memory.
   */
  private readonly taskTermsCache: LRUCache<string, string>;

  /**
   * @param pool the `pg` pool (plain rows: thousands of them at a full load)
   * @param taskCacheEntries most tasks whose lexemes are kept (each at most 2,000 characters)
   * @param taskCacheBytes most bytes they take, about (a typical task of 70 characters with its
   *   lexemes about 350 bytes, so the entry count binds first; of tasks of 2,000 characters about
   *   3,800 fit in the default 8 MiB)
   * @param embeddingModel the `EMBEDDINGS_MODEL` whose stored embeddings are read (README, "Search by
   *   meaning"); absent: none are
   */
  constructor(
    private readonly pool: Pool,
    taskCacheEntries = 10_000,
    taskCacheBytes = 8 * 2 ** 20,
    private readonly embeddingModel: string | null = null,
  ) {
    this.taskTermsCache = new LRUCache({
      max: taskCacheEntries,
      maxSize: taskCacheBytes,
      sizeCalculation: (terms, task) => 200 + task.length + terms.length,
    });
  }

  /**
   * One page of listed skills ({@link LISTED_SKILLS}) in `skill_id` order (keyset pagination, so a
   * full load never holds more than a page of rows from the driver at once).
   * @param after the last `skill_id` of the previous page, or `null` for the first
   * @param size rows per page
   */
  async listedPage(after: string | null, size: number): Promise<RoutableSkill[]> {
    const { rows } = await this.pool.query<RoutableRow>(
      `SELECT ${routableColumns('$3')}
         FROM skills s JOIN skill_stats st ON st.skill_id = s.skill_id
        WHERE ${LISTED_SKILLS} AND ($1::text IS NULL OR s.skill_id > $1)
        ORDER BY s.skill_id
        LIMIT $2`,
      [after, size, this.embeddingModel],
    );
    return rows.map(toRoutable);
  }

  /**
   * The given skills as they are now.
   * @returns the listed ones ({@link LISTED_SKILLS}); an id not returned is neither routed nor named
   *   (never verified, failed, or gone)
   */
  async listed(skillIds: readonly string[]): Promise<RoutableSkill[]> {
    if (skillIds.length === 0) return [];
    const { rows } = await this.pool.query<RoutableRow>(
      `SELECT ${routableColumns('$2')}
         FROM skills s JOIN skill_stats st ON st.skill_id = s.skill_id
        WHERE ${LISTED_SKILLS} AND s.skill_id = ANY ($1::text[])`,
      [skillIds, this.embeddingModel],
    );
    return rows.map(toRoutable);
  }

  /**
   * The watermark check: skills whose routing columns (`skills.changed_at`, `skill_stats.changed_at`,
   * both indexed) were written after `since`, and the number of listed skills, in one snapshot.
   * @param since an instant of the database's clock; `null` returns no ids (only the clock and count)
   */
  async changedSince(since: Date | null): Promise<RoutingChanges> {
    const { rows } = await this.pool.query<{ checked_at: Date; skill_ids: string[] | null; listed: string }>(
      `SELECT clock_timestamp() AS checked_at,
              CASE WHEN $1::timestamptz IS NULL THEN '{}'::text[] ELSE ARRAY(
                SELECT skill_id FROM skills WHERE changed_at > $1
                UNION SELECT skill_id FROM skill_stats WHERE changed_at > $1) END AS skill_ids,
              (SELECT count(*) FROM skills s WHERE ${LISTED_SKILLS}) AS listed`,
      [since],
    );
    const row = rows[0];
    if (!row) throw new Error('the routing watermark query returned no row');
    return { checkedAt: row.checked_at, skillIds: row.skill_ids ?? [], listedSkills: Number(row.listed) };
  }

  /**
   * The task's distinct lexemes, sorted, exactly as the SQL ranking computes them
   * (`tsvector_to_array(to_tsvector('english', task))`); remembered per task string.
   * @throws whatever PostgreSQL throws
   */
  async taskTerms(task: string): Promise<string[]> {
    const known = this.taskTermsCache.get(task);
    if (known !== undefined) return known === '' ? [] : known.split('\0');
    const { rows } = await this.pool.query<{ terms: string[] | null }>(
      `SELECT tsvector_to_array(to_tsvector('english', $1)) AS terms`,
      [task],
    );
    const terms = rows[0]?.terms ?? [];
    this.taskTermsCache.set(task, terms.join('\0'));
    return terms;
  }
}
