import type { HealthCounters } from '../data/health-checks';
import type { SkillStatus } from '../schemas';

/** When health checks change a skill's status (config HEALTH_FAILURES_TO_SUSPEND, HEALTH_SUCCESSES_TO_RESUME). */
export interface HealthThresholds {
  /** Failed checks in a row that suspend an active skill. */
  failuresToSuspend: number;
  /** Good checks in a row that make a suspended skill active again. */
  successesToResume: number;
}

/**
 * The status of a skill after a periodic health check (README, "Registration and verification"): an
 * active skill is suspended after `failuresToSuspend` failed checks in a row, a suspended one resumes
 * after `successesToResume` good checks in a row; any other status stays.
 * @param before the status when the check was recorded
 * @param ok whether this check succeeded
 * @param counters the runs of failures and successes, this check included
 */
export function statusAfterHealthCheck(
  before: SkillStatus,
  ok: boolean,
  counters: HealthCounters,
  thresholds: HealthThresholds,
): SkillStatus {
  if (before === 'active' && !ok && counters.consecutiveFailures >= thresholds.failuresToSuspend)
    return 'suspended';
  if (before === 'suspended' && ok && counters.consecutiveSuccesses >= thresholds.successesToResume)
    return 'active';
  return before;
}
