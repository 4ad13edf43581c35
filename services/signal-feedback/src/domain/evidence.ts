import { createHash } from 'node:crypto';
import type { RecurringValue, WindowStats } from '../data/analysis';

/** Length of the analysis window and of the previous window it is compared with: 24 hours, in ms. */
export const WINDOW_MS = 24 * 3600 * 1000;

/** Direction of the negative rate against the previous window. */
export type Trend = 'worsening' | 'improving' | 'stable' | 'new';

/** What the analysis found in one context's signals (stored with the proposal). */
export interface Evidence {
  window_hours: number;
  signal_count: number;
  positive: number;
  negative: number;
  neutral: number;
  /** Shares of the window's signals, 0..1, three decimals. */
  negative_rate: number;
  positive_rate: number;
  /** Negative signal types, most frequent first (at most 5). */
  top_failing_types: { type: string; count: number }[];
  /**
   * Payload values that mark the failures: carried by at least two negative signals and by a larger share
   * of the negative signals (`share`) than of the others (`share_elsewhere`), ranked by count × the
   * difference. With no negative signal: the most frequent values of all signals.
   */
  recurring_values: { key: string; value: string; count: number; share: number; share_elsewhere: number }[];
  previous: { signal_count: number; negative_rate: number | null };
  /** Change of the negative rate against the previous window (null without previous signals). */
  negative_rate_delta: number | null;
  trend: Trend;
}

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * The payload values that distinguish the failures (see {@link Evidence.recurring_values}), at most 5.
 * @param values the window's values with their negative and other counts
 */
export function markingValues(current: WindowStats, values: RecurringValue[]): Evidence['recurring_values'] {
  const others = current.total - current.negative;
  if (current.negative === 0) {
    return [...values]
      .sort((a, b) => b.other - a.other)
      .slice(0, 5)
      .map((v) => ({
        key: v.key,
        value: v.value,
        count: v.other,
        share: round(v.other / Math.max(1, current.total)),
        share_elsewhere: 0,
      }));
  }
  return values
    .map((v) => {
      const share = v.negative / current.negative;
      const elsewhere = others > 0 ? v.other / others : 0;
      return {
        key: v.key,
        value: v.value,
        count: v.negative,
        share: round(share),
        share_elsewhere: round(elsewhere),
        weight: v.negative * (share - elsewhere),
      };
    })
    .filter((v) => v.count >= 2 && v.weight > 0)
    .sort((a, b) => b.weight - a.weight || b.count - a.count || a.key.localeCompare(b.key))
    .slice(0, 5)
    .map(({ weight: _weight, ...v }) => v);
}

/**
 * Builds the evidence of a context from its current and previous window (README, "Routing,
 * classification and analysis"): rates, top failing types, payload values marking the failures and
 * the trend.
 * @param values the window's payload values with their negative and other counts
 */
export function buildEvidence(
  current: WindowStats,
  previous: WindowStats,
  values: RecurringValue[],
): Evidence {
  const n = current.total;
  const negativeRate = n > 0 ? current.negative / n : 0;
  const prevRate = previous.total > 0 ? previous.negative / previous.total : null;
  const delta = prevRate === null ? null : negativeRate - prevRate;
  const trend: Trend =
    delta === null ? 'new' : delta > 0.05 ? 'worsening' : delta < -0.05 ? 'improving' : 'stable';
  return {
    window_hours: WINDOW_MS / 3_600_000,
    signal_count: n,
    positive: current.positive,
    negative: current.negative,
    neutral: current.neutral,
    negative_rate: round(negativeRate),
    positive_rate: round(n > 0 ? current.positive / n : 0),
    top_failing_types: current.byType
      .filter((t) => t.sentiment === 'negative')
      .slice(0, 5)
      .map((t) => ({ type: t.type, count: t.count })),
    recurring_values: markingValues(current, values),
    previous: { signal_count: previous.total, negative_rate: prevRate === null ? null : round(prevRate) },
    negative_rate_delta: delta === null ? null : round(delta),
    trend,
  };
}

/**
 * Priority 0..100 (one decimal): up to 50 for the negative rate, 20 for volume (log scale, 1,000
 * signals = full), 20 for a worsening trend (+50 percentage points = full) and 10 for how concentrated
 * the failures are in one type (a single clear failure is the most actionable).
 */
export function priorityScore(e: Evidence): number {
  const rate = e.negative_rate * 50;
  const volume = Math.min(1, Math.log10(Math.max(1, e.signal_count)) / 3) * 20;
  const trend = Math.min(1, Math.max(0, (e.negative_rate_delta ?? 0) * 2)) * 20;
  const top = e.top_failing_types[0];
  const concentration = top && e.negative > 0 ? (top.count / e.negative) * 10 : 0;
  return Math.round((rate + volume + trend + concentration) * 10) / 10;
}

/**
 * SHA-256 of the evidence's substance: the failing types, the leading recurring values, the negative
 * rate in 10-point steps and the trend. A later run that finds the same picture (a few more signals of
 * the same kind) hashes the same and makes no new proposal.
 */
export function evidenceHash(e: Evidence): string {
  const fingerprint = {
    failing: e.top_failing_types.slice(0, 3).map((t) => t.type),
    recurring: e.recurring_values.slice(0, 3).map((r) => `${r.key}=${r.value}`),
    negative_rate_step: Math.round(e.negative_rate * 10),
    trend: e.trend,
  };
  return createHash('sha256').update(JSON.stringify(fingerprint)).digest('hex');
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** One-paragraph summary of the evidence, for `evidence_summary`. */
export function summarizeEvidence(e: Evidence): string {
  const parts = [
    `${e.signal_count} signals in the last ${e.window_hours} h: ${e.negative} negative (${pct(e.negative_rate)}), ${e.positive} positive (${pct(e.positive_rate)}), ${e.neutral} neutral.`,
  ];
  if (e.top_failing_types.length > 0)
    parts.push(`Top failing types: ${e.top_failing_types.map((t) => `${t.type} (${t.count})`).join(', ')}.`);
  if (e.recurring_values.length > 0) {
    const what = e.negative > 0 ? 'Values marking the failures' : 'Recurring values';
    parts.push(
      `${what}: ${e.recurring_values
        .map(
          (r) =>
            `${r.key}=${r.value} (${r.count}×${e.negative > 0 ? `, ${pct(r.share)} of failures vs ${pct(r.share_elsewhere)} of other signals` : ''})`,
        )
        .join(', ')}.`,
    );
  }
  if (e.trend === 'new') parts.push('No signals in the previous 24 h to compare with.');
  else
    parts.push(
      `Negative rate ${e.trend} against the previous 24 h (${pct(e.previous.negative_rate ?? 0)} -> ${pct(e.negative_rate)}, ${e.previous.signal_count} signals then).`,
    );
  return parts.join(' ');
}

/** The four prose fields of a proposal. */
export interface ProposalText {
  diagnosis: string;
  current_state: string;
  proposed_change: string;
  predicted_impact: string;
}

/** The prose fields written from the evidence alone (no LLM configured, or the LLM failed). */
export function textFromEvidence(context: { name: string; content: string }, e: Evidence): ProposalText {
  const top = e.top_failing_types[0];
  const value = e.recurring_values[0];
  const diagnosis = top
    ? `"${context.name}": ${pct(e.negative_rate)} of signals are failures, led by ${top.type} (${top.count} of ${e.negative})` +
      (value ? `, often with ${value.key}=${value.value} (${value.count}×)` : '') +
      (e.trend === 'worsening' ? '; the failure rate is rising.' : '.')
    : `"${context.name}": no failure signals among ${e.signal_count} signals; ${pct(e.positive_rate)} are successes.`;
  const current_state = [
    `Context: ${context.content}`,
    `Signals (last ${e.window_hours} h): ${e.signal_count} total, ${e.negative} negative, ${e.positive} positive, ${e.neutral} neutral.`,
    ...(e.top_failing_types.length
      ? [`Failing types: ${e.top_failing_types.map((t) => `${t.type} ×${t.count}`).join(', ')}.`]
      : []),
    ...(e.recurring_values.length
      ? [
          `${e.negative > 0 ? 'Payload values marking the failures' : 'Recurring payload values'}: ${e.recurring_values.map((r) => `${r.key}=${r.value} ×${r.count}`).join(', ')}.`,
        ]
      : []),
    `Trend: ${e.trend}${e.negative_rate_delta !== null ? ` (${e.negative_rate_delta >= 0 ? '+' : ''}${Math.round(e.negative_rate_delta * 100)} points)` : ''}.`,
  ].join('\n');
  const where = e.recurring_values.slice(0, 2).map((r) => `${r.key} is ${r.value}`);
  const proposed_change = top
    ? `Investigate and fix the cause of ${top.type}` +
      (where.length ? ` where ${where.join(' and ')}` : '') +
      ` in "${context.name}": reproduce it from the recorded payloads, fix the failing step, and add a clearer recovery path for users who hit it.`
    : `Keep "${context.name}" as it is and add signals for the steps not yet measured, so regressions show up early.`;
  const predicted_impact = top
    ? `Removing most ${top.type} failures would cut the negative rate from ${pct(e.negative_rate)} towards ${pct(Math.max(0, e.negative_rate - top.count / Math.max(1, e.signal_count)))}, about ${top.count} fewer failures per day at current volume.`
    : 'Little direct impact; better coverage of the flow.';
  return { diagnosis, current_state, proposed_change, predicted_impact };
}
