// Numbers, times and verdicts as the dashboard writes them. Every time on the page is UTC in one
// format, "28 Nov 14:05 UTC" (a day alone: "28 Nov"), with the year only when it is not this year's.

export const plural = (n, word) => `${n.toLocaleString('en-GB')} ${word}${n === 1 ? '' : 's'}`;
export const pct = (rate) => (rate === null ? 'n/a' : `${(rate * 100).toFixed(1)} %`);

const sameYear = (ms) => new Date(ms).getUTCFullYear() === new Date().getUTCFullYear();

/** A day, "28 Nov" (or "28 Nov 2024" in another year). */
export function day(ms) {
  return new Date(ms).toLocaleDateString('en-GB', {
    timeZone: 'UTC',
    day: 'numeric',
    month: 'short',
    ...(sameYear(ms) ? {} : { year: 'numeric' }),
  });
}

/** Hours and minutes in UTC, "14:05". */
export function clock(ms) {
  return new Date(ms).toLocaleTimeString('en-GB', {
    timeZone: 'UTC',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  });
}

/** The one date-time format of the page: "28 Nov 14:05 UTC". */
export const dateTime = (ms) => `${day(ms)} ${clock(ms)} UTC`;

/** "<type>" quoted, or "negative signals" when the deployment compares every negative type. */
const subject = (d) => (d.signal_type ? `“${d.signal_type}”` : 'negative signals');

/**
 * A deployment's verification in words for people: what was compared, what happened, and when the
 * verdict is final (README, "Deployments and verification").
 */
export function verdictText(d) {
  const v = d.verification;
  const before = `${pct(v.before.negative_rate)} of ${plural(v.before.signals, 'signal')} before`;
  const after = `${pct(v.after.negative_rate)} of ${plural(v.after.signals, 'signal')} after`;
  // The p-value to three decimals: smaller ones read "p < 0.001" rather than in scientific notation.
  const chance =
    v.p_value === null ? '' : v.p_value < 0.001 ? ' (p < 0.001)' : ` (p = ${v.p_value.toFixed(3)})`;
  if (v.provisional) {
    const end = dateTime(Date.parse(d.deployed_at) + d.window_minutes * 60_000);
    if (v.reason === 'too_few_signals')
      return (
        `Measuring until ${end}. So far ${plural(v.after.signals, 'signal')} since the deployment and ` +
        `${plural(v.before.signals, 'signal')} in the same time before it; a verdict needs ${v.min_signals} on each side.`
      );
    return `Measuring until ${end}. So far ${subject(d)} was ${before} and ${after}${chance}.`;
  }
  if (v.verdict === 'improved') return `Improved: ${subject(d)} fell from ${before} to ${after}${chance}.`;
  if (v.verdict === 'regressed')
    return (
      `Got worse: ${subject(d)} rose from ${before} to ${after}${chance}.` +
      (d.regression_proposal_id ? ' A new proposal was raised.' : '')
    );
  if (v.reason === 'too_few_signals')
    return (
      `Not enough signals to tell: ${plural(v.before.signals, 'signal')} before and ` +
      `${plural(v.after.signals, 'signal')} after; a verdict needs ${v.min_signals} on each side.`
    );
  return `No clear change: ${subject(d)} went from ${before} to ${after}, which chance alone could explain${chance}.`;
}

/** The verdict's short label: Measuring, Improved, Got worse, No clear change, Too few signals. */
export function verdictLabel(d) {
  const v = d.verification;
  if (v.provisional) return 'Measuring';
  if (v.verdict === 'improved') return 'Improved';
  if (v.verdict === 'regressed') return 'Got worse';
  return v.reason === 'too_few_signals' ? 'Too few signals' : 'No clear change';
}
