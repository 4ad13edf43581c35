// Numbers, times and verdicts as the dashboard writes them.

export const plural = (n, word) => `${n.toLocaleString()} ${word}${n === 1 ? '' : 's'}`;
export const pct = (rate) => (rate === null ? 'n/a' : `${(rate * 100).toFixed(1)} %`);

export const utcHour = (ms) =>
  new Date(ms).toLocaleString('en-GB', {
    timeZone: 'UTC',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  }) + ' UTC';
export const utcDay = (ms) =>
  new Date(ms).toLocaleDateString('en-GB', { timeZone: 'UTC', month: 'short', day: 'numeric' });

/** A deployment's verification in one line: verdict, negative rate before → after, the test's figures. */
export function verdictText(d) {
  const v = d.verification;
  const what = d.signal_type || 'negative signals';
  const reason = v.reason === 'significant' ? '' : ` (${v.reason.replace(/_/g, ' ')})`;
  const test = v.z === null ? '' : `, z = ${v.z}, p = ${v.p_value}`;
  return (
    `${v.provisional ? 'provisional: ' : ''}${v.verdict}${reason}: ${what} ${pct(v.before.negative_rate)} → ` +
    `${pct(v.after.negative_rate)} (${v.before.signals} → ${v.after.signals} signals${test})`
  );
}
