import type { KeyStanding } from '../data/api-keys';
import type { CallReportRecord } from '../data/skill-stats';
import { refreshSkillMetrics, type SkillMetricsStore } from './skill-metrics';

/** Age, in milliseconds, a key must reach before its unpaid reports weigh anything (one day). */
export const COUNTED_REPORT_KEY_AGE_MS = 86_400_000;

/**
 * How much an unpaid report weighs (README, "Reputation"): a key's weight grows linearly with its
 * age up to `fullWeightAgeDays` and with the UTC days on which it got routed matches up to
 * `fullWeightRoutedDays`; the two shares multiply. A paid report weighs 1.
 */
export const REPORT_WEIGHT_MODEL = {
  /** Key age in days at which the age share reaches 1. */
  fullWeightAgeDays: 14,
  /** Days with routed matches at which the history share reaches 1. */
  fullWeightRoutedDays: 7,
} as const;

const DAY_MS = 86_400_000;

/**
 * The weight of an unpaid report sent with this key (README, "Reputation"), 0..1:
 * `min(1, age / 14 days) · min(1, routedDays / 7)`, and 0 for a key younger than
 * {@link COUNTED_REPORT_KEY_AGE_MS}, a key that never got a route with matches, or no key.
 * @param nowMs the current time, milliseconds since the epoch
 */
export function reportWeight(key: KeyStanding | null, nowMs: number): number {
  if (!key || key.firstRoutedAt === null || key.routedDays <= 0) return 0;
  const ageMs = nowMs - key.createdAt.getTime();
  if (ageMs < COUNTED_REPORT_KEY_AGE_MS) return 0;
  const age = Math.min(1, ageMs / (REPORT_WEIGHT_MODEL.fullWeightAgeDays * DAY_MS));
  const history = Math.min(1, key.routedDays / REPORT_WEIGHT_MODEL.fullWeightRoutedDays);
  return age * history;
}

/**
 * Whether an unpaid report sent with this key can move the skill's metrics at all: its
 * {@link reportWeight} is above 0.
 * @param nowMs the current time, milliseconds since the epoch
 */
export function reportCounts(key: KeyStanding | null, nowMs: number): boolean {
  return reportWeight(key, nowMs) > 0;
}

/** A validated call report (POST /api/discover/report). */
export type CallReport = Omit<CallReportRecord, 'weight' | 'reporters' | 'paymentSignature'>;

/** A verified proof that the reporter paid for the call (an x402 payment into the skill's `payTo`). */
export interface PaidCall {
  signature: string;
  /** The paying wallet (the transfer authority, base58). */
  payer: string;
}

/** What {@link submitReport} needs: the reporting key's standing, and where reports and metrics go. */
export interface ReportDeps {
  keys: { standing(keyId: string): Promise<KeyStanding | null> };
  stats: SkillMetricsStore & { addReport(report: CallReportRecord): Promise<boolean> };
  now: () => Date;
}

/** How a report was taken: whether it moves the skill's metrics, and with which weight. */
export interface ReportOutcome {
  counted: boolean;
  /** 0..1; 0 when it does not count. */
  weight: number;
}

/**
 * Stores a call report with its weight and, when it counts, refreshes the skill's metrics (README,
 * "Reputation"). A paid report weighs 1 and speaks for its key and its payer wallet; an unpaid one
 * weighs {@link reportWeight} and speaks for its key and its cohort (keys created from one network on
 * one day). Per skill and UTC hour only the first report of each of those reporters counts; the
 * others are kept but move nothing.
 * @param paid the verified payment proof, if the report carried one
 */
export async function submitReport(
  deps: ReportDeps,
  report: CallReport,
  paid?: PaidCall,
): Promise<ReportOutcome> {
  const standing = await deps.keys.standing(report.apiKeyId);
  const weight = paid ? 1 : reportWeight(standing, deps.now().getTime());
  const reporters = paid
    ? [`key:${report.apiKeyId}`, `payer:${paid.payer}`]
    : [`key:${report.apiKeyId}`, `cohort:${standing?.cohort ?? report.apiKeyId}`];
  const counted = await deps.stats.addReport({
    ...report,
    weight,
    reporters,
    ...(paid ? { paymentSignature: paid.signature } : {}),
  });
  if (counted) await refreshSkillMetrics(deps.stats, report.skillId);
  return { counted, weight: counted ? weight : 0 };
}
