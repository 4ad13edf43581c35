import type { Logger } from '@repo/service-kit';
import type { SkillRepository, VerificationJob } from '../data/skills';
import { verifySkill } from '../domain/verification';
import type { GuardedSkillHttp } from './http';
import { startLoop, type Loop } from './loop';

/** Settings of the verification worker (config VERIFY_* and HEALTH_CHECK_INTERVAL_MS). */
export interface VerificationWorkerOptions {
  intervalMs: number;
  batchSize: number;
  leaseMs: number;
  /** The first periodic health check of a newly active skill is due this long after activation. */
  healthIntervalMs: number;
  /** Called after each applied verification (metrics). */
  onVerified?: (passed: boolean) => void;
}

/**
 * Verifies one claimed skill and applies the result to the revision that was claimed.
 * @returns whether the skill passed; `null` when it changed meanwhile and the result was discarded
 */
export async function verifyJob(
  skills: SkillRepository,
  http: GuardedSkillHttp,
  job: VerificationJob,
  healthIntervalMs: number,
): Promise<boolean | null> {
  const refusal = await http.refusal(job.endpoint);
  const result = await verifySkill(http, job, refusal ?? undefined);
  const applied = await skills.completeVerification(job, result, healthIntervalMs);
  return applied ? result.passed : null;
}

/**
 * The verification worker: claims pending skills (`FOR UPDATE SKIP LOCKED` with a lease, safe across
 * replicas), runs the three steps for each claimed skill concurrently and marks it `active` or
 * `verification_failed`.
 */
export function startVerificationWorker(
  deps: { skills: SkillRepository; http: GuardedSkillHttp; logger: Logger },
  options: VerificationWorkerOptions,
): Loop {
  return startLoop(
    'verification',
    options.intervalMs,
    async () => {
      const jobs = await deps.skills.claimPendingVerification(options.batchSize, options.leaseMs);
      await Promise.all(
        jobs.map(async (job) => {
          try {
            const passed = await verifyJob(deps.skills, deps.http, job, options.healthIntervalMs);
            if (passed !== null) {
              options.onVerified?.(passed);
              deps.logger.info({ skillId: job.skillId, revision: job.revision, passed }, 'skill verified');
            }
          } catch (err) {
            // The lease expires and another round retries it.
            deps.logger.error({ err, skillId: job.skillId }, 'verification failed unexpectedly');
          }
        }),
      );
      return jobs.length === options.batchSize;
    },
    deps.logger,
  );
}
