import type { SkillStatus } from '../schemas';
import type { PrismaDb } from './prisma';
import * as claims from './skill-claims';
import { msInterval } from './sql';

/** A skill whose conformance call is due, claimed by one replica. */
export interface ConformanceJob extends claims.ClaimedSkill {
  /** The MCP tool called at `endpoint`, or `null` for an HTTP skill (README, "MCP servers as skills"). */
  mcpTool: string | null;
  description: string;
  inputSchema: unknown;
  outputSchema: unknown;
  status: SkillStatus;
}

/** The runs of judged conformance calls as stored in `skill_stats`. */
export interface StoredConformanceCounters {
  failures: number;
  successes: number;
}

/** What one conformance call found, as {@link ConformanceChecks.record} stores it. */
export interface ConformanceRecord {
  /** Whether the answer was judged at all (false: inconclusive, the counters stay). */
  judged: boolean;
  /** Why the answer did not conform; `null` when it did (ignored when not judged). */
  error: string | null;
}

/**
 * Conformance calls (README, "Pinned definitions"): the schedule (`skill_stats.next_conformance_at`),
 * the per-skill lease that keeps at most one call in flight, the runs of (non-)conforming answers and
 * the status change they decide.
 */
export class ConformanceChecks {
  constructor(private readonly prisma: PrismaDb) {}

  /**
   * Claims up to `batch` active or degraded skills whose conformance call is due (or was never
   * scheduled: a skill suspended when the schedule was introduced and resumed since) and not in flight,
   * leasing each for `leaseMs` (`FOR UPDATE SKIP LOCKED`: one replica each; an expired lease, from a
   * replica that died mid-call, is claimed again).
   * @param leaseMs the lease, from now, in milliseconds
   */
  async claimDue(batch: number, leaseMs: number): Promise<ConformanceJob[]> {
    return claims.claimByStats<ConformanceJob>(this.prisma, batch, leaseMs, {
      set: `conformance_lease_until = now() + ${msInterval(2)}`,
      where: `(d.next_conformance_at <= now() OR d.next_conformance_at IS NULL)
              AND k.status IN ('active', 'degraded')
              AND (d.conformance_lease_until IS NULL OR d.conformance_lease_until < now())`,
      orderBy: 'd.next_conformance_at NULLS FIRST',
      returning: `s.mcp_tool AS "mcpTool", s.description, s.input_schema AS "inputSchema",
                  s.output_schema AS "outputSchema", s.status`,
    });
  }

  /**
   * Records a conformance call in one transaction and releases its lease: the next call is due in
   * `nextInMs`; `decide` gets the status before and the counters after and answers the status, which is
   * stored (and announced to the routing index) when it changed.
   * @param count the counters after this call, from those before it
   * @param decide the status after the call
   * @returns the status after the call, or `null` when the skill changed meanwhile (a new revision, or
   *   no longer active or degraded) and only the lease was released
   */
  async record(
    job: { skillId: string; revision: number },
    result: ConformanceRecord,
    nextInMs: number,
    count: (before: StoredConformanceCounters) => StoredConformanceCounters,
    decide: (before: SkillStatus, counters: StoredConformanceCounters) => SkillStatus,
  ): Promise<SkillStatus | null> {
    return this.prisma.$transaction(async (tx) => {
      // Locks the skill row first, so an update (new revision) cannot interleave.
      const before = await claims.lockClaimedSkill(tx, job, ['active', 'degraded']);
      if (!before) {
        await tx.$executeRawUnsafe(
          `UPDATE skill_stats SET conformance_lease_until = NULL WHERE skill_id = $1`,
          job.skillId,
        );
        return null;
      }
      const stored = await tx.$queryRawUnsafe<
        { conformance_failures: number; conformance_successes: number }[]
      >(
        `SELECT conformance_failures, conformance_successes FROM skill_stats WHERE skill_id = $1 FOR UPDATE`,
        job.skillId,
      );
      const counters = count({
        failures: Number(stored[0]?.conformance_failures ?? 0),
        successes: Number(stored[0]?.conformance_successes ?? 0),
      });
      await tx.$executeRawUnsafe(
        `UPDATE skill_stats SET conformance_lease_until = NULL, next_conformance_at = now() + ${msInterval(2)},
           last_conformance_at = now(), conformance_failures = $3, conformance_successes = $4,
           last_conformance_error = CASE WHEN $5 THEN $6 ELSE last_conformance_error END
         WHERE skill_id = $1`,
        job.skillId,
        nextInMs,
        counters.failures,
        counters.successes,
        result.judged,
        result.error,
      );
      const after = decide(before, counters);
      await claims.changeSkillStatus(tx, job.skillId, before, after);
      return after;
    });
  }
}
