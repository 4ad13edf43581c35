import type { SkillRecord } from '../data/skill-directory';
import type { MetricWindow, StoredMetrics } from '../data/skill-stats';
import { popularity } from './scoring';

/**
 * The reliability model (README, "Reputation"): a Beta prior of mean {@link RELIABILITY_PRIOR_MEAN}
 * worth {@link RELIABILITY_PRIOR_WEIGHT} observations, updated by the weighted, time-decayed
 * observations of the last 24 hours. `halfLifeMs` is the age at which an observation counts half.
 */
export const RELIABILITY_MODEL = {
  /** The success rate a skill is believed to have before anything is observed. */
  priorMean: 0.9,
  /** How many full-weight observations the prior is worth: small samples move the estimate little. */
  priorWeight: 5,
  /** Milliseconds after which an observation counts half (6 hours); older ones decay further. */
  halfLifeMs: 6 * 3_600_000,
  /** Weight of one health check (a GET probe of the endpoint, the service's own observation). */
  healthCheckWeight: 0.1,
} as const;

/** {@link RELIABILITY_MODEL}'s prior mean. */
export const RELIABILITY_PRIOR_MEAN = RELIABILITY_MODEL.priorMean;
/** {@link RELIABILITY_MODEL}'s prior weight, in full-weight observations. */
export const RELIABILITY_PRIOR_WEIGHT = RELIABILITY_MODEL.priorWeight;

/**
 * The reliability estimate (README, "Reputation"): the posterior mean of the success rate,
 * `(priorMean · priorWeight + Σ w·d·ok) / (priorWeight + Σ w·d)`, where each observation of the last
 * 24 hours has its weight `w` (a health check {@link RELIABILITY_MODEL}.healthCheckWeight, a call
 * report its reporter's weight) decayed by its age, `d = 2^(−age / halfLifeMs)`.
 * @param weightedSuccesses Σ w·d over successful observations
 * @param weightedObservations Σ w·d over all observations (≥ weightedSuccesses)
 * @returns 0..1; the prior mean with no observation
 */
export function reliabilityEstimate(weightedSuccesses: number, weightedObservations: number): number {
  const n = Number.isFinite(weightedObservations) ? Math.max(0, weightedObservations) : 0;
  const s = Number.isFinite(weightedSuccesses) ? Math.min(n, Math.max(0, weightedSuccesses)) : 0;
  const { priorMean, priorWeight } = RELIABILITY_MODEL;
  return (priorMean * priorWeight + s) / (priorWeight + n);
}

export type { StoredMetrics };

/** Where a skill's metrics are read and stored (data/skill-stats.ts). */
export interface SkillMetricsStore {
  metricWindow(skillId: string): Promise<MetricWindow>;
  writeMetrics(skillId: string, metrics: StoredMetrics): Promise<void>;
}

/** The metrics {@link refreshSkillMetrics} stores for a window. */
export function storedMetrics(window: MetricWindow): StoredMetrics {
  return {
    reliability: reliabilityEstimate(window.weightedSuccesses24h, window.weightedObservations24h),
    avgLatencyMs: window.avgLatencyMs,
    calls30d: window.calls30d,
    ratingSum: window.ratingSum,
    ratingCount: window.ratingCount,
    popularity: popularity(window.calls30d, window.ratingSum, window.ratingCount, false).value,
  };
}

/**
 * Recomputes the metrics the router and the listing read from the live windows (README, "Reports and
 * metrics" and "Reputation"): the reliability estimate, average latency, calls, ratings and the
 * `popularity` factor, stored in one statement. Called after every applied verification, recorded
 * health check and counted report.
 */
export async function refreshSkillMetrics(store: SkillMetricsStore, skillId: string): Promise<void> {
  await store.writeMetrics(skillId, storedMetrics(await store.metricWindow(skillId)));
}

/** The metrics of a skill that a live window replaces. */
type LiveFields = Pick<
  SkillRecord,
  'successRate24h' | 'avgLatencyMs' | 'calls30d' | 'ratingSum' | 'ratingCount'
>;

/**
 * A skill's stored metrics replaced by the live values of `live`: the reliability estimate as of now
 * (the prior mean once nothing was observed in 24 hours), and the latency when any was observed (else
 * the last known one stays). Popularity is not recomputed.
 */
export function withLiveMetrics<S extends LiveFields>(stored: S, live: MetricWindow): S {
  return {
    ...stored,
    successRate24h: reliabilityEstimate(live.weightedSuccesses24h, live.weightedObservations24h),
    avgLatencyMs: live.avgLatencyMs ?? stored.avgLatencyMs,
    calls30d: live.calls30d,
    ratingSum: live.ratingSum,
    ratingCount: live.ratingCount,
  };
}
