import type { KeyStanding } from '../data/api-keys';
import type { CallReportRecord } from '../data/skill-stats';
import { refreshSkillMetrics, type SkillMetricsStore } from './skill-metrics';

/** Age, in milliseconds, a key must reach before its reports count (one day). */
export const COUNTED_REPORT_KEY_AGE_MS = 86_400_000;

/**
 * Whether a report sent with this key moves the skill's metrics (README, "Security"): the key exists,
 * is at least {@link COUNTED_REPORT_KEY_AGE_MS} old at `nowMs` and has had a route with matches.
 * @param nowMs the current time, milliseconds since the epoch
 */
export function reportCounts(key: KeyStanding | null, nowMs: number): boolean {
  return (
    key !== null && key.firstRoutedAt !== null && key.createdAt.getTime() <= nowMs - COUNTED_REPORT_KEY_AGE_MS
  );
}

/** A validated call report (POST /api/discover/report). */
export type CallReport = Omit<CallReportRecord, 'counted'>;

/** What {@link submitReport} needs: the reporting key's standing, and where reports and metrics go. */
export interface ReportDeps {
  keys: { standing(keyId: string): Promise<KeyStanding | null> };
  stats: SkillMetricsStore & { addReport(report: CallReportRecord): Promise<void> };
}

/**
 * Stores a call report and, when it counts ({@link reportCounts}), refreshes the skill's metrics;
 * other reports are kept but move nothing (README, "Security").
 */
export async function submitReport(deps: ReportDeps, report: CallReport): Promise<void> {
  // Sock-puppet keys are free: only a key a day old that has routed calls moves the metrics.
  const counted = reportCounts(await deps.keys.standing(report.apiKeyId), Date.now());
  await deps.stats.addReport({ ...report, counted });
  if (counted) await refreshSkillMetrics(deps.stats, report.skillId);
}
