import { notifyRouting } from './routing-rows';
import type { VerificationStepResult } from '../schemas';
import type { ProbeRecord } from './health-checks';
import type { PrismaDb } from './prisma';
import type { ClaimedSkill } from './skill-claims';
import { msInterval } from './sql';

/** A pending skill claimed by a verification worker. */
export interface VerificationJob extends ClaimedSkill {
  /** The MCP tool verified at `endpoint`, or `null` for an HTTP skill (README, "MCP servers as skills"). */
  mcpTool: string | null;
  description: string;
  inputSchema: unknown;
  outputSchema: unknown;
  /** Hex SHA-256 of the claimed revision's definition (what the result will be bound to). */
  definitionHash: string | null;
  /** Claims of this revision so far, this one included (1 on the first claim). */
  attempts: number;
}

/** What a verification found, as {@link VerificationQueue.complete} stores it. */
export interface VerificationOutcome {
  passed: boolean;
  steps: VerificationStepResult[];
  /** `step: detail` of the first failed step; `null` when every step passed. */
  reason: string | null;
  /** The requests sent to the endpoint, stored as health checks of kind `verification`. */
  probes: ProbeRecord[];
}

/**
 * The verification queue: skills in `pending_verification`, claimed under a lease
 * (`skills.verification_lease_until`, `verification_attempts`) and completed with their result.
 */
export class VerificationQueue {
  constructor(private readonly prisma: PrismaDb) {}

  /**
   * Claims up to `batch` pending skills for verification (`FOR UPDATE SKIP LOCKED`, so replicas never
   * claim the same one) by setting a lease and counting the attempt; a lease that expires (crashed
   * worker) is claimed again, and the returned `attempts` tells the caller how often that happened.
   * @param batch most skills claimed
   * @param leaseMs the lease, from now, in milliseconds
   */
  async claim(batch: number, leaseMs: number): Promise<VerificationJob[]> {
    return this.prisma.$queryRawUnsafe<VerificationJob[]>(
      `UPDATE skills SET verification_lease_until = now() + ${msInterval(2)},
              verification_attempts = verification_attempts + 1
        WHERE skill_id IN (
          SELECT skill_id FROM skills
           WHERE status = 'pending_verification'
             AND (verification_lease_until IS NULL OR verification_lease_until < now())
           ORDER BY updated_at, skill_id
           LIMIT $1
           FOR UPDATE SKIP LOCKED)
        RETURNING skill_id AS "skillId", revision, endpoint, mcp_tool AS "mcpTool", description,
                  input_schema AS "inputSchema", output_schema AS "outputSchema",
                  definition_hash AS "definitionHash", verification_attempts AS attempts`,
      batch,
      leaseMs,
    );
  }

  /**
   * Extends the leases of verifications still in progress on this replica, so that only a replica
   * that died or stalled loses its claims (and has them counted as unfinished attempts).
   * @param jobs the claimed revisions still being verified
   * @param leaseMs the new lease, from now, in milliseconds
   */
  async renewLeases(jobs: readonly { skillId: string; revision: number }[], leaseMs: number): Promise<void> {
    if (jobs.length === 0) return;
    await this.prisma.$executeRawUnsafe(
      `UPDATE skills SET verification_lease_until = now() + ${msInterval(3)}
        FROM unnest($1::text[], $2::int[]) AS j(skill_id, revision)
       WHERE skills.skill_id = j.skill_id AND skills.revision = j.revision
         AND skills.status = 'pending_verification'`,
      jobs.map((j) => j.skillId),
      jobs.map((j) => j.revision),
      leaseMs,
    );
  }

  /**
   * Applies a verification result to the revision that was verified, in one transaction: `active`
   * (first health check due after `schedule.healthIntervalMs`, first conformance call after
   * `schedule.conformanceDelayMs`) or `verification_failed`, with the per-step results and the reason,
   * also on the revision's `skill_versions` row (`passed` / `failed`: the result is bound to that
   * revision's definition hash); the probes are recorded as health checks of kind `verification`. The
   * skill's metrics are not refreshed here: the caller does it once this returns `true`.
   * @param schedule delays after activation, in milliseconds
   * @returns `false` when the skill changed meanwhile (an update re-queued it) and nothing was applied
   */
  async complete(
    job: { skillId: string; revision: number },
    result: VerificationOutcome,
    schedule: { healthIntervalMs: number; conformanceDelayMs: number },
  ): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      const n = await tx.$executeRawUnsafe(
        `UPDATE skills SET
           status = CASE WHEN $3 THEN 'active' ELSE 'verification_failed' END,
           verification = $4::jsonb, verification_reason = $5,
           verified_at = CASE WHEN $3 THEN now() ELSE verified_at END,
           verification_lease_until = NULL, changed_at = clock_timestamp()
         WHERE skill_id = $1 AND revision = $2 AND status = 'pending_verification'
         RETURNING ${notifyRouting('skill_id')}`,
        job.skillId,
        job.revision,
        result.passed,
        JSON.stringify(result.steps),
        result.reason,
      );
      if (n !== 1) return false;
      await tx.$executeRawUnsafe(
        `UPDATE skill_versions SET status = CASE WHEN $3 THEN 'passed' ELSE 'failed' END,
           verification = $4::jsonb, verification_reason = $5, verified_at = now()
         WHERE skill_id = $1 AND revision = $2`,
        job.skillId,
        job.revision,
        result.passed,
        JSON.stringify(result.steps),
        result.reason,
      );
      await tx.$executeRawUnsafe(
        `INSERT INTO skill_stats (skill_id, next_health_check_at, next_conformance_at)
         VALUES ($1, CASE WHEN $2 THEN now() + ${msInterval(3)} END, CASE WHEN $2 THEN now() + ${msInterval(4)} END)
         ON CONFLICT (skill_id) DO UPDATE SET next_health_check_at = EXCLUDED.next_health_check_at,
           consecutive_failures = 0, consecutive_successes = 0, next_conformance_at = EXCLUDED.next_conformance_at,
           conformance_failures = 0, conformance_successes = 0, last_conformance_error = NULL`,
        job.skillId,
        result.passed,
        schedule.healthIntervalMs,
        schedule.conformanceDelayMs,
      );
      if (result.probes.length > 0) {
        await tx.healthCheck.createMany({
          data: result.probes.map((p) => ({ skillId: job.skillId, kind: 'verification', ...p })),
        });
      }
      return true;
    });
  }
}
