import cdf from '@stdlib/stats-base-dists-normal-cdf';
import type { WindowCounts } from '../data/deployments';
import type { VerificationResult, WindowFigures } from '../schemas';

/**
 * The outcome of comparing the two windows of a deployment: the wire's `VerificationResult` (README,
 * "Deployments and verification").
 */
export type Verification = VerificationResult;

/** The thresholds a verification applies. */
export interface VerificationRules {
  /** Two-sided significance level, 0 < alpha < 1. */
  alpha: number;
  /** Minimum signals in each window. */
  minSignals: number;
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * The two-proportion z-test of the failing rate before and after a change, with the pooled standard
 * error: `z = (p_after - p_before) / sqrt(p (1 - p) (1/n_before + 1/n_after))`, `p` the pooled rate.
 * @returns z and the two-sided p-value, unrounded; null for both when a window is empty or the pooled
 *   rate is 0 or 1 (no variance: nothing changed)
 */
export function twoProportionZTest(
  before: WindowCounts,
  after: WindowCounts,
): { z: number; pValue: number } | null {
  if (before.signals === 0 || after.signals === 0) return null;
  const pooled = (before.negative + after.negative) / (before.signals + after.signals);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / before.signals + 1 / after.signals));
  if (!(se > 0)) return null;
  const z = (after.negative / after.signals - before.negative / before.signals) / se;
  // The lower tail keeps its precision where 1 - cdf(|z|) would round to 0.
  return { z, pValue: Math.min(1, 2 * cdf(-Math.abs(z), 0, 1)) };
}

/**
 * The verdict of a deployment from the counts of its two windows (README, "Deployments and
 * verification"): `inconclusive` (`too_few_signals`) when either window has fewer than
 * `rules.minSignals` signals, `inconclusive` (`not_significant`) when the z-test's p-value is not
 * below `rules.alpha`, else `improved` when the failing rate fell and `regressed` when it rose.
 * @param windows the counts with their bounds
 * @param provisional whether the after-window is still open
 * @param now when the figures were computed
 */
export function verify(
  windows: {
    before: WindowCounts & { from: Date; to: Date };
    after: WindowCounts & { from: Date; to: Date };
  },
  rules: VerificationRules,
  provisional: boolean,
  now: Date,
): Verification {
  const figures = (w: WindowCounts & { from: Date; to: Date }): WindowFigures => ({
    from: w.from.toISOString(),
    to: w.to.toISOString(),
    signals: w.signals,
    negative: w.negative,
    negative_rate: w.signals > 0 ? round(w.negative / w.signals, 4) : null,
  });
  const test = twoProportionZTest(windows.before, windows.after);
  const enough = windows.before.signals >= rules.minSignals && windows.after.signals >= rules.minSignals;
  let verdict: Verification['verdict'] = 'inconclusive';
  let reason: Verification['reason'] = enough ? 'not_significant' : 'too_few_signals';
  if (enough && test && test.pValue < rules.alpha) {
    verdict = test.z < 0 ? 'improved' : 'regressed';
    reason = 'significant';
  }
  return {
    verdict,
    reason,
    provisional,
    before: figures(windows.before),
    after: figures(windows.after),
    z: test ? round(test.z, 4) : null,
    p_value: test ? Number(test.pValue.toPrecision(4)) : null,
    alpha: rules.alpha,
    min_signals: rules.minSignals,
    computed_at: now.toISOString(),
  };
}
