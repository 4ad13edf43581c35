import type { SkillRecord } from '../data/skill-directory';
import type { MetricWindow } from '../data/skill-stats';
import { popularity } from './scoring';

/** Where a skill's metrics are read and stored (data/skill-stats.ts). */
export interface SkillMetricsStore {
  metricWindow(skillId: string): Promise<MetricWindow>;
  writeMetrics(skillId: string, window: MetricWindow, popularity: number): Promise<void>;
}

/**
 * Recomputes the metrics the router and the listing read from the live windows (README, "Reports and
 * metrics"): success rate, average latency, calls, ratings and the `popularity` factor. Called after
 * every applied verification, recorded health check and counted report.
 */
export async function refreshSkillMetrics(store: SkillMetricsStore, skillId: string): Promise<void> {
  const window = await store.metricWindow(skillId);
  const pop = popularity(window.calls30d, window.ratingSum, window.ratingCount, false).value;
  await store.writeMetrics(skillId, window, pop);
}

/** The metrics of a skill that a live window replaces. */
type LiveFields = Pick<
  SkillRecord,
  'successRate24h' | 'avgLatencyMs' | 'calls30d' | 'ratingSum' | 'ratingCount'
>;

/**
 * A skill's stored metrics replaced by the live values of `live`; with no observation in 24 hours the
 * last known success rate and latency stay (as when they are stored). Popularity is not recomputed.
 */
export function withLiveMetrics<S extends LiveFields>(stored: S, live: MetricWindow): S {
  return {
    ...stored,
    successRate24h:
      live.observations24h > 0 ? live.successes24h / live.observations24h : stored.successRate24h,
    avgLatencyMs: live.avgLatencyMs ?? stored.avgLatencyMs,
    calls30d: live.calls30d,
    ratingSum: live.ratingSum,
    ratingCount: live.ratingCount,
  };
}
