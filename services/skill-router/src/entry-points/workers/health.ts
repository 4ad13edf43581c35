import type { Logger, Loop } from '@repo/service-kit';
import type { HealthChecks } from '../../data/health-checks';
import type { SkillStats } from '../../data/skill-stats';
import { statusAfterHealthCheck } from '../../domain/health';
import { refreshSkillMetrics } from '../../domain/skill-metrics';
import { probeHealth } from '../../domain/verification';
import type { GuardedSkillHttp } from '../../adapters/skill-http';
import { createClaimLoop, type ClaimLoopSettings } from './claim-loop';

/**
 * Settings of the health worker (config HEALTH_*): `intervalMs` between polls for due checks
 * (HEALTH_POLL_INTERVAL_MS), `batchSize` checks claimed per poll.
 */
export interface HealthWorkerOptions extends ClaimLoopSettings {
  /** Time from a claimed check to the skill's next one, in milliseconds (HEALTH_CHECK_INTERVAL_MS). */
  checkIntervalMs: number;
  failuresToSuspend: number;
  successesToResume: number;
  /** Called after each recorded check (metrics). */
  onChecked?: (ok: boolean, status: string) => void;
}

/**
 * The periodic health checker: claims active and suspended skills whose check is due (one replica
 * each), probes them through the SSRF guard, records the result (which feeds success_rate_24h and
 * avg_latency_ms) and suspends or resumes skills after sustained failure or recovery. Nothing runs until the loop is
 * started or kicked.
 */
export function createHealthWorker(
  deps: { healthChecks: HealthChecks; stats: SkillStats; http: GuardedSkillHttp; logger: Logger },
  options: HealthWorkerOptions,
): Loop {
  return createClaimLoop('health', deps.logger, options, {
    claim: (batchSize) => deps.healthChecks.claimDue(batchSize, options.checkIntervalMs),
    work: async (job) => {
      const refusal = await deps.http.refusal(job.endpoint);
      const probe = refusal
        ? { ok: false, latencyMs: null, statusCode: null, error: `endpoint refused: ${refusal}` }
        : await probeHealth(deps.http, job.endpoint).then(({ detail: _detail, ...p }) => p);
      const status = await deps.healthChecks.record(job, probe, (before, counters) =>
        statusAfterHealthCheck(before, probe.ok, counters, options),
      );
      if (status) {
        await refreshSkillMetrics(deps.stats, job.skillId);
        options.onChecked?.(probe.ok, status);
        if (status !== job.status)
          deps.logger.warn(
            { skillId: job.skillId, from: job.status, to: status, error: probe.error },
            'skill status changed by health checks',
          );
      }
    },
    failure: 'health check failed unexpectedly',
  });
}
