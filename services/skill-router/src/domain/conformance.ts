import type { CallVerdict } from './verification';
import type { SkillStatus } from '../schemas';

/** When conformance calls change a skill's status (config CONFORMANCE_FAILURES_TO_DEGRADE, CONFORMANCE_SUCCESSES_TO_RECOVER). */
export interface ConformanceThresholds {
  /** Non-conforming answers in a row that make an active skill `degraded`. */
  failuresToDegrade: number;
  /** Conforming answers in a row that make a degraded skill `active` again. */
  successesToRecover: number;
}

/** A skill's runs of judged conformance calls, the latest included. */
export interface ConformanceCounters {
  /** Non-conforming answers in a row. */
  failures: number;
  /** Conforming answers in a row. */
  successes: number;
}

/**
 * The counters after a conformance call: a conforming answer ends the run of failures, a
 * non-conforming one the run of successes, an inconclusive call (no answer, 429/503) changes neither.
 */
export function countConformance(before: ConformanceCounters, verdict: CallVerdict): ConformanceCounters {
  if (verdict === 'conforms') return { failures: 0, successes: before.successes + 1 };
  if (verdict === 'nonconforming') return { failures: before.failures + 1, successes: 0 };
  return before;
}

/**
 * The status of a skill after a conformance call (README, "Pinned definitions"): an active skill
 * whose answers stopped conforming `failuresToDegrade` times in a row becomes `degraded` (out of
 * routing); a degraded one whose answers conform `successesToRecover` times in a row is `active`
 * again. Any other status stays.
 * @param before the status when the call was recorded
 * @param counters the runs after this call ({@link countConformance})
 */
export function statusAfterConformance(
  before: SkillStatus,
  counters: ConformanceCounters,
  thresholds: ConformanceThresholds,
): SkillStatus {
  if (before === 'active' && counters.failures >= thresholds.failuresToDegrade) return 'degraded';
  if (before === 'degraded' && counters.successes >= thresholds.successesToRecover) return 'active';
  return before;
}

/**
 * When a skill's conformance calls come due (config CONFORMANCE_INTERVAL_MS, CONFORMANCE_JITTER_PERCENT):
 * the first one after the skill is verified, then one after each call, each {@link jitteredDelay} of
 * the interval.
 */
export interface ConformanceSchedule {
  /** Time between two conformance calls of one skill, in milliseconds. */
  intervalMs: number;
  /** How far each interval is moved at random either way, in percent (0–90). */
  jitterPercent: number;
}

/**
 * The time to a skill's next conformance call: the schedule's interval moved by up to its jitter
 * either way, so that skills verified together (one provider's batch) are not called together again.
 * @param random a number in [0, 1) (Math.random in production)
 * @returns milliseconds, at least 1
 */
export function jitteredDelay(schedule: ConformanceSchedule, random: number): number {
  const spread = (schedule.intervalMs * schedule.jitterPercent) / 100;
  return Math.max(1, Math.round(schedule.intervalMs - spread + 2 * spread * random));
}
