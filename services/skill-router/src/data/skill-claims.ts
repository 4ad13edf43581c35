import { notifyRouting } from './routing-rows';
import type { SkillStatus } from '../schemas';
import type { PrismaDb } from './prisma';

/** The columns every claim of a skill returns: the skill, the revision claimed and its endpoint. */
export interface ClaimedSkillRow {
  skill_id: string;
  revision: number;
  endpoint: string;
}

/** What every job a worker claims carries: the skill, the revision it was claimed at and the endpoint to call. */
export interface ClaimedSkill {
  skillId: string;
  revision: number;
  endpoint: string;
}

/** The raw statements of the Prisma client, or of one of its transactions. */
type RawSql = Pick<PrismaDb, '$queryRawUnsafe' | '$executeRawUnsafe'>;

/**
 * Runs one claim of the verification, health and conformance workers: `sql` is an `UPDATE …
 * RETURNING` (`FOR UPDATE SKIP LOCKED` in its subquery, so replicas never claim the same skill) whose
 * `$1` is the batch size and `$2` a duration in milliseconds (the lease, or the time to the next
 * check), returning at least the {@link ClaimedSkillRow} columns.
 * @param more the job's other fields, from the row's other columns
 * @returns one job per claimed row
 */
export async function claimSkills<Row extends ClaimedSkillRow, Job extends object>(
  prisma: PrismaDb,
  sql: string,
  batch: number,
  ms: number,
  more: (row: Row) => Job,
): Promise<(ClaimedSkill & Job)[]> {
  const rows = await prisma.$queryRawUnsafe<Row[]>(sql, batch, ms);
  return rows.map((r) => ({
    skillId: r.skill_id,
    revision: Number(r.revision),
    endpoint: r.endpoint,
    ...more(r),
  }));
}

/**
 * The `UPDATE … RETURNING` of a claim by the `skill_stats` schedule, for {@link claimSkills}: up to
 * `$1` rows of `skill_stats` (alias `d`) whose skill (alias `k`) matches `where`, taken in `orderBy`
 * order then by skill id and locked `FOR UPDATE OF d SKIP LOCKED` (one replica each), get `set` (which
 * may use `$2`); the statement returns the {@link ClaimedSkillRow} columns and the skill's (alias
 * `s`) columns in `returning`. The parts are SQL written in the code, never input: they are pasted in.
 */
export function statsClaimSql(parts: {
  set: string;
  where: string;
  orderBy: string;
  returning: string;
}): string {
  return `UPDATE skill_stats st SET ${parts.set}
     FROM skills s
    WHERE s.skill_id = st.skill_id
      AND st.skill_id IN (
        SELECT d.skill_id FROM skill_stats d JOIN skills k ON k.skill_id = d.skill_id
         WHERE ${parts.where}
         ORDER BY ${parts.orderBy}, d.skill_id
         LIMIT $1
         FOR UPDATE OF d SKIP LOCKED)
    RETURNING s.skill_id, s.revision, s.endpoint, ${parts.returning}`;
}

/**
 * Locks a claimed skill's row inside a transaction, so that an update (a new revision) cannot
 * interleave with the result being recorded.
 * @param statuses the statuses in which the result still counts
 * @returns the skill's status, or `undefined` when it is no longer at the claimed revision or in
 *   one of `statuses`
 */
export async function lockClaimedSkill(
  tx: RawSql,
  job: { skillId: string; revision: number },
  statuses: readonly SkillStatus[],
): Promise<SkillStatus | undefined> {
  const current = await tx.$queryRawUnsafe<{ status: SkillStatus }[]>(
    `SELECT status FROM skills WHERE skill_id = $1 AND revision = $2 AND status = ANY($3::text[]) FOR UPDATE`,
    job.skillId,
    job.revision,
    statuses,
  );
  return current[0]?.status;
}

/**
 * Stores the status a run of checks decided (README, "Pinned definitions") when it differs from
 * the one before, and announces the change to the routing index (`notifyRouting`).
 */
export async function changeSkillStatus(
  tx: RawSql,
  skillId: string,
  before: SkillStatus,
  after: SkillStatus,
): Promise<void> {
  if (after === before) return;
  await tx.$executeRawUnsafe(
    `UPDATE skills SET status = $2, changed_at = clock_timestamp() WHERE skill_id = $1
     RETURNING ${notifyRouting('skill_id')}`,
    skillId,
    after,
  );
}
