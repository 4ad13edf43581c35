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

/** A p-value for people, three decimals: "p < 0.001" or "p = 0.034". */
const pText = (p) => (p < 0.001 ? 'p < 0.001' : `p = ${p.toFixed(3)}`);

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
  // The verdict's own p-value (the effect's, Holm-adjusted when several types; the naive one on
  // verdicts stored before effects existed), to three decimals; none while provisional.
  const p = v.effect ? (v.effect.adjusted_p_value ?? v.effect.p_value) : v.p_value;
  const chance = p === null || p === undefined ? '' : ` (${pText(p)})`;
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
  if (v.provisional) return v.monitor?.regression_detected ? 'Regression detected' : 'Measuring';
  if (v.verdict === 'improved') return 'Improved';
  if (v.verdict === 'regressed') return 'Got worse';
  return v.reason === 'too_few_signals' ? 'Too few signals' : 'No clear change';
}

/** A verdict's label in words (README, "Deployments and verification"). */
export const LABELS = {
  observational: 'Observational: compared with control contexts, not a randomized test',
  uncontrolled: 'Uncontrolled: no usable control contexts, before/after only',
  'unreliable: pre_trend': 'Unreliable: the groups already drifted apart before the change (pre-trend)',
  'unreliable: volume_shift':
    'Unreliable: the number of signals shifted, rates may not compare (volume shift)',
};

/** A ratio to three significant digits: "1.84", "0.512". */
const ratio = (x) => Number(x.toPrecision(3)).toString();

/** A window "28 Nov 14:05 – 29 Nov 14:05 UTC" (the start's UTC dropped). */
const span = (w) => `${dateTime(Date.parse(w.from)).replace(/ UTC$/, '')} – ${dateTime(Date.parse(w.to))}`;

/**
 * The effect of a verification in words: the odds ratio of a failing signal with its 1 − alpha
 * interval, and its (Holm-adjusted) p-value once final. While provisional: the figures so far and no
 * fixed-horizon p-value.
 */
export function effectText(v) {
  const e = v.effect;
  if (!e) return 'Effect: not estimated yet (no signals on one side).';
  const level = Math.round((1 - v.alpha) * 100);
  const change = e.odds_ratio >= 1 ? 'more' : 'less';
  const p = v.provisional
    ? ''
    : `, ${pText(e.adjusted_p_value ?? e.p_value ?? 1)}${e.adjusted_p_value !== null && v.per_type.length > 1 ? ' (Holm-adjusted)' : ''}`;
  return (
    `Effect${v.provisional ? ' so far' : ''}: the odds of a failing signal × ${ratio(e.odds_ratio)} ` +
    `(${level} % interval ${ratio(e.odds_ratio_ci_low)} – ${ratio(e.odds_ratio_ci_high)}; ${change} likely)${p}.`
  );
}

/** How a verification was computed: the estimator, the controls and the windows. */
export function methodText(v) {
  const m = v.method;
  const how =
    m.estimator === 'did'
      ? `Difference-in-differences against ${plural(m.control_contexts.length, 'control context')} (${m.control_selection === 'explicit' ? 'chosen' : 'picked automatically'})`
      : 'Before/after of the changed context alone';
  const weeks = Math.round(m.windows.period_minutes / 10_080);
  const windows =
    `after ${span(m.windows.after)}, before ${span(m.windows.before)} ` +
    `(${plural(weeks, 'week')} earlier, same weekdays and hours${m.windows.reweighted ? ', reweighted to the same hours of the week' : ''})`;
  return `Method: ${how}; ${windows}.`;
}

/** The placebo and traffic checks in words. */
export function checksText(v) {
  const placebo = !v.placebo
    ? 'placebo not computed (too few signals a period earlier)'
    : v.placebo.significant
      ? 'placebo failed: a difference already existed before the change'
      : 'placebo passed: no difference before the change';
  const traffic = !v.traffic
    ? 'traffic check needs control contexts'
    : `traffic ${v.traffic.significant ? 'shifted' : 'as the controls predict'}: ` +
      `${Math.round(v.traffic.observed_treated_after).toLocaleString('en-GB')} signals after, ` +
      `${Math.round(v.traffic.expected_treated_after).toLocaleString('en-GB')} expected`;
  return `Checks: ${placebo}; ${traffic}.`;
}

/** The open-window monitor in words (always-valid, so safe to read at any time), or null once final. */
export function monitorText(v) {
  if (!v.provisional) return null;
  if (!v.monitor) return 'Monitor: too few signals so far to watch for a regression.';
  return v.monitor.regression_detected
    ? `Monitor: regression detected (always-valid ${pText(v.monitor.always_valid_p_value)} ≤ ${v.alpha}).`
    : 'Monitor: no regression detected so far.';
}

/** What happened to the last change of a proposal's kind, in words; null when none shipped yet. */
export function lastChangeText(p) {
  const c = p.last_change_of_kind;
  if (!c) return null;
  const what = c.version ? `version ${c.version}` : 'a change';
  const when = dateTime(Date.parse(c.deployed_at));
  const outcome = {
    improved: 'it improved',
    regressed: c.verdict === 'pending' ? 'a regression was detected while measuring' : 'it got worse',
    inconclusive: 'no clear change',
    pending: 'still measuring',
  }[c.outcome];
  const priority =
    p.base_priority_score !== undefined && p.base_priority_score !== p.priority_score
      ? ` Priority ${p.priority_score.toFixed(1)} instead of ${p.base_priority_score.toFixed(1)}.`
      : '';
  return `Last change of this kind: ${what} on ${when}: ${outcome}.${priority}`;
}
