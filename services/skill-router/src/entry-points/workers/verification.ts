import type { Logger, Loop } from '@repo/service-kit';
import type { SkillStats } from '../../data/skill-stats';
import type { VerificationJob, VerificationQueue } from '../../data/verification-queue';
import { VERIFICATION_STEPS } from '../../schemas';
import { jitteredDelay, type ConformanceSchedule } from '../../domain/conformance';
import { refreshSkillMetrics } from '../../domain/skill-metrics';
import { verifySkill, type SchemaChecks, type VerificationResult } from '../../domain/verification';
import { verifyMcpTool, type McpServers } from '../../domain/mcp-tools';
import type { GuardedSkillHttp } from '../../adapters/skill-http';
import { createClaimLoop, type ClaimedWork, type ClaimLoopSettings } from './claim-loop';

/** Settings of the verification worker (config VERIFY_* and HEALTH_CHECK_INTERVAL_MS). */
export interface VerificationWorkerOptions extends ClaimLoopSettings {
  leaseMs: number;
  /** The first periodic health check of a newly active skill is due this long after activation. */
  healthIntervalMs: number;
  /** The first conformance call of a newly active skill is due one interval of this schedule after activation. */
  conformance: ConformanceSchedule;
  /**
   * Claims of one revision that may end without a result (the verifying process crashed or stalled);
   * the next claim fails the skill instead of verifying it again.
   */
  maxAttempts: number;
  /** Called after each applied verification (metrics). */
  onVerified?: (passed: boolean) => void;
}

/**
 * The result recorded for a revision whose verification was claimed `attempts - 1` times without
 * finishing: every step skipped, and a reason saying so.
 */
export function abandonedVerification(unfinished: number): VerificationResult {
  const detail = `not run: verification did not finish in ${unfinished} attempts`;
  return {
    passed: false,
    steps: VERIFICATION_STEPS.map((step) => ({ step, status: 'skipped', detail, duration_ms: 0 })),
    reason: `verification did not finish in ${unfinished} attempts (the verifying process crashed or stalled each time)`,
    probes: [],
  };
}

/** What a verification needs: the queue, the metrics, the outbound clients (HTTP and MCP) and the sandbox. */
export interface VerificationDeps {
  queue: VerificationQueue;
  stats: SkillStats;
  http: GuardedSkillHttp;
  mcp: McpServers;
  schemas: SchemaChecks;
}

/**
 * Verifies one claimed skill and applies the result to the revision that was claimed (and to its
 * `skill_versions` row, bound to its definition hash), then refreshes the skill's metrics; a revision
 * already claimed `maxAttempts` times without a result is failed without running anything.
 * @returns whether the skill passed; `null` when it changed meanwhile and the result was discarded
 * @throws SandboxClosedError when the service shuts down mid-verification (the lease then expires
 *   and another replica verifies it)
 */
export async function verifyJob(
  deps: VerificationDeps,
  job: VerificationJob,
  options: Pick<VerificationWorkerOptions, 'healthIntervalMs' | 'conformance' | 'maxAttempts'>,
): Promise<boolean | null> {
  let result: VerificationResult;
  if (job.attempts > options.maxAttempts) {
    result = abandonedVerification(job.attempts - 1);
  } else {
    const refusal = await deps.http.refusal(job.endpoint);
    result =
      job.mcpTool === null
        ? await verifySkill(deps.http, deps.schemas, job, refusal ?? undefined)
        : await verifyMcpTool(deps.mcp, deps.schemas, { ...job, mcpTool: job.mcpTool }, refusal ?? undefined);
  }
  const applied = await deps.queue.complete(job, result, {
    healthIntervalMs: options.healthIntervalMs,
    conformanceDelayMs: jitteredDelay(options.conformance, Math.random()),
  });
  if (!applied) return null;
  await refreshSkillMetrics(deps.stats, job.skillId);
  return result.passed;
}

/**
 * Claims of pending skills under a lease of `leaseMs`, renewed every third of it while their
 * verifications run: a busy sandbox can make a round outlast the lease, and only a replica that died
 * or stalled should lose its claims (and have them counted as unfinished attempts).
 */
function leasedClaims(
  deps: Pick<VerificationDeps, 'queue'> & { logger: Logger },
  leaseMs: number,
): Pick<ClaimedWork<VerificationJob>, 'claim' | 'whileWorking'> {
  return {
    claim: (batchSize) => deps.queue.claim(batchSize, leaseMs),
    whileWorking: (inProgress) => {
      const renewal = setInterval(
        () => {
          deps.queue.renewLeases([...inProgress], leaseMs).catch((err: unknown) => {
            deps.logger.warn({ err }, 'could not renew verification leases');
          });
        },
        Math.max(250, Math.floor(leaseMs / 3)),
      );
      renewal.unref();
      return () => clearInterval(renewal);
    },
  };
}

/**
 * The verification worker: claims pending skills (`FOR UPDATE SKIP LOCKED` with a lease, safe across
 * replicas), runs the three steps for each claimed skill concurrently (schema work in the sandbox),
 * renews the leases every third of `leaseMs` while it works, and marks each skill `active` or
 * `verification_failed`. Nothing runs until the loop is started or kicked.
 */
export function createVerificationWorker(
  deps: VerificationDeps & { logger: Logger },
  options: VerificationWorkerOptions,
): Loop {
  return createClaimLoop('verification', deps.logger, options, {
    ...leasedClaims(deps, options.leaseMs),
    work: async (job) => {
      const passed = await verifyJob(deps, job, options);
      if (passed !== null) {
        options.onVerified?.(passed);
        deps.logger.info({ skillId: job.skillId, revision: job.revision, passed }, 'skill verified');
      }
    },
    // The lease expires and another round retries it.
    failure: 'verification failed unexpectedly',
  });
}
