// How the signal-feedback demo (scripts/demo.ts) prints a final verification.
import type { DemoEffect, DemoVerification } from './demo';

/** A negative rate as a percentage with one decimal, `n/a` when there were no signals. */
export const pct = (rate: number | null) => (rate === null ? 'n/a' : `${(rate * 100).toFixed(1)} %`);

const effectLine = (e: DemoEffect, alpha: number) =>
  `odds ratio ${e.odds_ratio} (${Math.round((1 - alpha) * 100)} % interval ${e.odds_ratio_ci_low} to ${e.odds_ratio_ci_high}; ` +
  `log odds ${e.estimate}, ${e.ci_low} to ${e.ci_high})${e.p_value === null ? '' : `, p = ${e.p_value}`}`;

/**
 * Prints what a final verification found, check by check (README, "Deployments and verification"):
 * verdict and label, both groups' rates, the effect, the per-type effects, the naive z-test, the
 * placebo (or why it was not computed) and the traffic check.
 */
export function printVerification(
  v: DemoVerification & { alpha?: number },
  log: (line: string) => void,
): void {
  const alpha = v.alpha ?? 0.05;
  log(`verification: ${v.verdict.toUpperCase()} (${v.reason.replace(/_/g, ' ')}), label ${v.label}`);
  log(
    `  treated (checkout): ${pct(v.before.negative_rate)} of ${v.before.signals} a week earlier -> ` +
      `${pct(v.after.negative_rate)} of ${v.after.signals} after`,
  );
  if (v.control)
    log(
      `  control (${v.method.control_selection}, ${v.method.control_contexts.length} context(s)): ` +
        `${pct(v.control.before.negative_rate)} of ${v.control.before.signals} -> ` +
        `${pct(v.control.after.negative_rate)} of ${v.control.after.signals}`,
    );
  if (v.effect) log(`  effect (${v.method.estimator}): ${effectLine(v.effect, alpha)}`);
  for (const t of v.per_type)
    log(
      `    ${t.signal_type ?? 'negative signals'}: ` +
        (t.effect
          ? `odds ratio ${t.effect.odds_ratio}, Holm-adjusted p = ${t.adjusted_p_value}`
          : 'no estimate'),
    );
  log(`  naive before/after z-test: z = ${v.z}, p = ${v.p_value}`);
  log(
    v.placebo
      ? `  placebo one week earlier: ${effectLine(v.placebo, alpha)}, ${v.placebo.significant ? 'SIGNIFICANT (pre-trend)' : 'not significant: no pre-trend'}`
      : '  placebo one week earlier: not computed: its windows start two weeks back (the before-window is ' +
          'always whole weeks back, one week for any window up to 7 days), a signal sent through the ' +
          'API may be at most 7 days old, and no history was imported (admin import-signals)',
  );
  if (v.traffic)
    log(
      `  traffic check: ${v.traffic.observed_treated_after} treated signals after, ${v.traffic.expected_treated_after} expected ` +
        `from the control (chi-square ${v.traffic.chi_square}, p = ${v.traffic.p_value}), ` +
        `${v.traffic.significant ? 'SIGNIFICANT (volume shift)' : 'no volume shift'}`,
    );
}
