import type { SkillStatus } from '../schemas';
import type { PrismaDb } from './prisma';
import * as claims from './skill-claims';
import { msInterval } from './sql';

/** A skill due for a periodic health check. */
export interface HealthJob extends claims.ClaimedSkill {
  status: SkillStatus;
  /** The tool of a skill imported from an MCP server (checked over MCP), `null` for an HTTP skill. */
  mcpTool: string | null;
}

/** One endpoint probe, as stored in `health_checks`. */
export interface ProbeRecord {
  ok: boolean;
  /** Milliseconds until the answer; `null` when none came (timeout). */
  latencyMs: number | null;
  /** The HTTP status; `null` when there was no answer. */
  statusCode: number | null;
  error: string | null;
}

/** A skill's run of periodic health checks, this one included. */
export interface HealthCounters {
  consecutiveFailures: number;
  consecutiveSuccesses: number;
}

/**
 * Periodic health checks: the schedule (`skill_stats.next_health_check_at`), the consecutive
 * counters and the `health_checks` rows, and the status change a check decides.
 */
export class HealthChecks {
  constructor(private readonly prisma: PrismaDb) {}

  /**
   * Claims up to `batch` active, suspended or degraded skills whose health check is due, pushing their next
   * check `intervalMs` ahead in the same statement (`FOR UPDATE SKIP LOCKED`: one replica each). Tools
   * of one MCP server claimed together get the same next check, so they stay together.
   * @param intervalMs time to the next check, in milliseconds
   */
  async claimDue(batch: number, intervalMs: number): Promise<HealthJob[]> {
    return claims.claimByStats<HealthJob>(this.prisma, batch, intervalMs, {
      set: `next_health_check_at = now() + ${msInterval(2)}`,
      where: `d.next_health_check_at <= now() AND k.status IN ('active', 'suspended', 'degraded')`,
      orderBy: 'd.next_health_check_at',
      returning: 's.status, s.mcp_tool AS "mcpTool"',
    });
  }

  /**
   * Records a periodic health check in one transaction: counts consecutive failures/successes, asks
   * `decide` for the status after the check and stores it when it changed (only the status change
   * touches `skills`). The skill's metrics are not refreshed here: the caller does it once this
   * returns a status.
   * @param decide the status after the check, from the status before it and the updated counters
   * @returns the status after the check, or `null` when the skill changed meanwhile
   */
  async record(
    job: { skillId: string; revision: number },
    probe: ProbeRecord,
    decide: (before: SkillStatus, counters: HealthCounters) => SkillStatus,
  ): Promise<SkillStatus | null> {
    return this.prisma.$transaction(async (tx) => {
      // Locks the skill row first, so an update (new revision) cannot interleave.
      const before = await claims.lockClaimedSkill(tx, job, ['active', 'suspended', 'degraded']);
      if (!before) return null;
      const counters = await tx.$queryRawUnsafe<
        { consecutive_failures: number; consecutive_successes: number }[]
      >(
        `UPDATE skill_stats SET
           last_health_check_at = now(),
           consecutive_failures = CASE WHEN $2 THEN 0 ELSE consecutive_failures + 1 END,
           consecutive_successes = CASE WHEN $2 THEN consecutive_successes + 1 ELSE 0 END
         WHERE skill_id = $1
         RETURNING consecutive_failures, consecutive_successes`,
        job.skillId,
        probe.ok,
      );
      const c = counters[0];
      const after = c
        ? decide(before, {
            consecutiveFailures: Number(c.consecutive_failures),
            consecutiveSuccesses: Number(c.consecutive_successes),
          })
        : before;
      await claims.changeSkillStatus(tx, job.skillId, before, after);
      await tx.healthCheck.create({ data: { skillId: job.skillId, kind: 'periodic', ...probe } });
      return after;
    });
  }
}
