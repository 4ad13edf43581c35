import { LRUCache } from 'lru-cache';
import type { Pool } from 'pg';
import {
  candidateColumns,
  candidateOf,
  type CandidateColumns,
  type CandidateRecord,
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

/** An active skill as the routing index holds it: a candidate with all its lexemes. */
export interface RoutableSkill extends CandidateRecord {
  /** Stemmed lexemes of the name, capabilities and description (`route_vector`), distinct. */
  routeTerms: string[];
  /** Every stemmed lexeme of the capabilities and description (`match_terms`), distinct. */
  matchTerms: string[];
}

interface RoutableRow extends CandidateColumns {
  route_terms: string[] | null;
}

const ROUTABLE_COLUMNS = `${candidateColumns('s.match_terms')}, tsvector_to_array(s.route_vector) AS route_terms`;

function toRoutable(r: RoutableRow): RoutableSkill {
  return { ...candidateOf(r), routeTerms: r.route_terms ?? [] };
}

/** What {@link RoutingRows.changedSince} found. */
export interface RoutingChanges {
  /** The database's clock when the check ran: the next check's starting point (minus a margin). */
  checkedAt: Date;
  /** Skills whose routing columns were written after the given instant, in any status. */
  skillIds: string[];
  /** Active skills in the database at the time of the check. */
  activeSkills: number;
}

/**
 * The routing index's reads from PostgreSQL (`skills` joined with `skill_stats`): active skills in
 * pages, chosen skills again after a notification, the ids written since a watermark, and the task's
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
   */
  constructor(
    private readonly pool: Pool,
    taskCacheEntries = 10_000,
    taskCacheBytes = 8 * 2 ** 20,
  ) {
    this.taskTermsCache = new LRUCache({
      max: taskCacheEntries,
      maxSize: taskCacheBytes,
      sizeCalculation: (terms, task) => 200 + task.length + terms.length,
    });
  }

  /**
   * One page of active skills in `skill_id` order (keyset pagination, so a full load never holds
   * more than a page of rows from the driver at once).
   * @param after the last `skill_id` of the previous page, or `null` for the first
   * @param size rows per page
   */
  async activePage(after: string | null, size: number): Promise<RoutableSkill[]> {
    const { rows } = await this.pool.query<RoutableRow>(
      `SELECT ${ROUTABLE_COLUMNS}
         FROM skills s JOIN skill_stats st ON st.skill_id = s.skill_id
        WHERE s.status = 'active' AND ($1::text IS NULL OR s.skill_id > $1)
        ORDER BY s.skill_id
        LIMIT $2`,
      [after, size],
    );
    return rows.map(toRoutable);
  }

  /**
   * The given skills as they are now.
   * @returns the active ones; an id not returned is not routable (another status, or gone)
   */
  async active(skillIds: readonly string[]): Promise<RoutableSkill[]> {
    if (skillIds.length === 0) return [];
    const { rows } = await this.pool.query<RoutableRow>(
      `SELECT ${ROUTABLE_COLUMNS}
         FROM skills s JOIN skill_stats st ON st.skill_id = s.skill_id
        WHERE s.status = 'active' AND s.skill_id = ANY ($1::text[])`,
      [skillIds],
    );
    return rows.map(toRoutable);
  }

  /**
   * The watermark check: skills whose routing columns (`skills.changed_at`, `skill_stats.changed_at`,
   * both indexed) were written after `since`, and the number of active skills, in one snapshot.
   * @param since an instant of the database's clock; `null` returns no ids (only the clock and count)
   */
  async changedSince(since: Date | null): Promise<RoutingChanges> {
    const { rows } = await this.pool.query<{ checked_at: Date; skill_ids: string[] | null; active: string }>(
      `SELECT clock_timestamp() AS checked_at,
              CASE WHEN $1::timestamptz IS NULL THEN '{}'::text[] ELSE ARRAY(
                SELECT skill_id FROM skills WHERE changed_at > $1
                UNION SELECT skill_id FROM skill_stats WHERE changed_at > $1) END AS skill_ids,
              (SELECT count(*) FROM skills WHERE status = 'active') AS active`,
      [since],
    );
    const row = rows[0];
    if (!row) throw new Error('the routing watermark query returned no row');
    return { checkedAt: row.checked_at, skillIds: row.skill_ids ?? [], activeSkills: Number(row.active) };
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
