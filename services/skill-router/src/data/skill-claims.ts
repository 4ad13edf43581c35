import { notifyRouting } from './routing-rows';
import type { SkillStatus } from '../schemas';
import type { PrismaDb } from './prisma';

/** What every job a worker claims carries: the skill, the revision it was claimed at and the endpoint to call. */
export interface ClaimedSkill {
  skillId: string;
  revision: number;
  endpoint: string;
}

/** The raw statements of the Prisma client, or of one of its transactions. */
type RawSql = Pick<PrismaDb, '$queryRawUnsafe' | '$executeRawUnsafe'>;

/**
 * One claim of the health and conformance workers, by the `skill_stats` schedule: up to `batch` rows
 * of `skill_stats` (alias `d`) whose skill (alias `k`) matches `where`, taken in `orderBy` order then
 * by skill id and locked `FOR UPDATE OF d SKIP LOCKED` (replicas never claim the same skill), get
 * `set`, which may use `$2`: `ms`, the lease or the time to the next check. The parts are SQL written
 * in the code, never input: they are pasted in.
 * @param parts.returning the skill's (alias `s`) other columns of the job, named as its fields
 *   (`s.mcp_tool AS "mcpTool"`)
 * @returns one job per claimed row
 */
export async function claimByStats<Job extends ClaimedSkill>(
  prisma: PrismaDb,
  batch: number,
  ms: number,
  parts: { set: string; where: string; orderBy: string; returning: string },
): Promise<Job[]> {
  return prisma.$queryRawUnsafe<Job[]>(
    `UPDATE skill_stats st SET ${parts.set}
       FROM skills s
      WHERE s.skill_id = st.skill_id
        AND st.skill_id IN (
          SELECT d.skill_id FROM skill_stats d JOIN skills k ON k.skill_id = d.skill_id
           WHERE ${parts.where}
           ORDER BY ${parts.orderBy}, d.skill_id
           LIMIT $1
           FOR UPDATE OF d SKIP LOCKED)
      RETURNING s.skill_id AS "skillId", s.revision, s.endpoint, ${parts.returning}`,
    batch,
    ms,
  );
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
