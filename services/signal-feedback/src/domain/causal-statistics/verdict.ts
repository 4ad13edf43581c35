/*
 * The verdict of a deployment (services/signal-feedback/docs/verdicts.md; README, "Deployments and
 * verification"), composed from the estimators, hour-of-week reweighting, significance tests and
 * windows beside it in this folder: pure functions, no I/O.
 *
 * Changes to the agreed interface (for the code that composes these functions):
 * - `VerdictDecision['reason']` has a fifth value, `'provisional'`: while the after-window is open the
 *   verdict is `inconclusive` for that reason (only `monitor` may report a regression).
 * - `comparisonWindows` also returns `periodMinutes`, the lag between the before- and the after-window
 *   (whole weeks: the before-window is the after-window one or more weeks earlier).
 * - `DEFAULT_MIXING_VARIANCE` (the mSPRT's default mixing variance), `HOURS_PER_WEEK` (168), `TimeWindow`
 *   and `GroupWindows` are exported; `VerdictInput['types']` is `readonly string[]`.
 */

import {
  checkAlpha,
  logOddsBeforeAfter,
  logOddsDid,
  pooledZTest,
  type Cell,
  type Estimate,
} from './estimates';
import { failingBuckets, restrict, reweightToAfter, sum, type HourOfWeekCounts } from './hour-of-week';
import { alwaysValidRegression, holmAdjust, volumeShiftTest } from './significance';
import type { VerificationResult } from '../../schemas/verification';

/** One group's hour-of-week counts in the placebo-before, before and after windows. */
export interface GroupWindows {
  placeboBefore: HourOfWeekCounts;
  before: HourOfWeekCounts;
  after: HourOfWeekCounts;
}

/** Input of the verdict: each group's counts in the placebo-before, before and after windows. */
export interface VerdictInput {
  /** The contexts the deployment touched, summed. */
  treated: GroupWindows;
  /** The control contexts, summed; null: no usable controls (the verdict is `uncontrolled`). */
  control: GroupWindows | null;
  /** The failing types the verdict covers (≥ 1); types missing from `failing` count 0. */
  types: readonly string[];
  /** From `comparisonWindows`: post-stratify each before-window to its after-window. */
  reweighted: boolean;
  /** The deployment's two-sided significance level, 0 < alpha < 1. */
  alpha: number;
  /** Minimum signals in every used cell (raw counts, before reweighting). */
  minSignals: number;
  /** The after-window is still open: only the always-valid monitor decides anything. */
  provisional: boolean;
}

/**
 * The verdict's label, as the wire lists it; from worst to mildest: volume_shift, pre_trend,
 * uncontrolled, observational.
 */
type VerdictLabel = VerificationResult['label'];

/** The decision of `decideVerdict`. */
export interface VerdictDecision {
  verdict: 'improved' | 'regressed' | 'inconclusive';
  reason: 'significant' | 'not_significant' | 'too_few_signals' | 'unreliable' | 'provisional';
  /** The worst that applies: volume_shift, then pre_trend, then uncontrolled, then observational. */
  label: VerdictLabel;
  method: 'did' | 'before_after';
  /**
   * Overall (all covered types pooled); `adjustedPValue` is Holm-adjusted with the per-type tests when
   * there are several types.
   */
  effect: (Estimate & { oddsRatio: number; adjustedPValue: number }) | null;
  /** Per covered type, Holm across the types and the overall test. */
  perType: Array<{ type: string; effect: Estimate | null; adjustedPValue: number | null }>;
  /**
   * The old two-proportion z-test (pooled standard error) of the treated group alone on the raw counts
   * of the same before- and after-windows (covered types pooled): what the verdict said before controls.
   */
  naive: { before: Cell; after: Cell; z: number | null; pValue: number | null };
  /** The same estimate on the before period with a fake deployment one period earlier. */
  placebo: (Estimate & { significant: boolean }) | null;
  /** The traffic check on the signal volumes (null without controls). */
  traffic: {
    chiSquare: number;
    pValue: number;
    expectedTreatedAfter: number;
    observedTreatedAfter: number;
    significant: boolean;
  } | null;
  /** While provisional: the always-valid monitor of the overall estimate (null when final). */
  monitor: { alwaysValidPValue: number; regressionDetected: boolean } | null;
}

/**
 * The verdict of a deployment (services/signal-feedback/docs/verdicts.md, "Labels and reasons"). The
 * overall effect is the log-odds DiD of the pooled
 * covered types (`logOddsDid`; `logOddsBeforeAfter` without controls, label `uncontrolled`), each
 * before-window reweighted when `input.reweighted`. With several types, the per-type tests and the
 * overall test are Holm-adjusted together (`holmAdjust`). The placebo (same estimator on placebo-before
 * against before) and the traffic check (`volumeShiftTest`) are significant at `alpha`; either makes the
 * label `unreliable: …`.
 * - `regressed`/`improved` (reason `significant`) need at least `minSignals` signals in every used
 *   cell, the overall (adjusted) p-value below `alpha` and no `unreliable` label; the sign of the
 *   estimate gives the direction (positive: the failing odds rose, `regressed`).
 * - otherwise `inconclusive` with reason `too_few_signals`, `unreliable` (all figures kept), or
 *   `not_significant`.
 * - while `provisional`, `inconclusive` with reason `provisional` (or `too_few_signals`); `monitor`
 *   reports `regressionDetected` when the always-valid p-value of the overall estimate is ≤ alpha on
 *   the harmful side. The fixed-horizon figures are computed but must not be shown as final.
 * @throws RangeError when alpha is not in (0, 1), `types` is empty, or an array is not 168 long
 */
export function decideVerdict(input: VerdictInput): VerdictDecision {
  const { treated, control, types, alpha, minSignals, provisional } = input;
  checkAlpha(alpha);
  if (types.length === 0) throw new RangeError('types must name at least one failing type');

  const totals = (c: HourOfWeekCounts): Cell => ({
    signals: sum(c.signals),
    failing: sum(failingBuckets(c, 'pooled')),
  });
  // One group's before (reweighted when asked) and after cells for the covered `only` types.
  const cells = (
    g: GroupWindows,
    only: readonly string[],
    placebo: boolean,
  ): { before: Cell; after: Cell } => {
    const before = restrict(placebo ? g.placeboBefore : g.before, only);
    const after = restrict(placebo ? g.before : g.after, only);
    return {
      before: input.reweighted ? reweightToAfter(before, after, 'pooled') : totals(before),
      after: totals(after),
    };
  };
  const estimateOf = (only: readonly string[], placebo: boolean): Estimate | null => {
    const t = cells(treated, only, placebo);
    if (!control) return logOddsBeforeAfter(t.before, t.after, alpha);
    const c = cells(control, only, placebo);
    return logOddsDid(
      { treatedBefore: t.before, treatedAfter: t.after, controlBefore: c.before, controlAfter: c.after },
      alpha,
    );
  };
  const enoughIn = (groups: Array<HourOfWeekCounts>) => groups.every((c) => sum(c.signals) >= minSignals);

  const enough = enoughIn(
    control
      ? [treated.before, treated.after, control.before, control.after]
      : [treated.before, treated.after],
  );
  const overall = estimateOf(types, false);
  const perTypeEstimates = types.length > 1 ? types.map((type) => estimateOf([type], false)) : [overall];
  // Holm over the overall test and, with several types, each type's test.
  const family = types.length > 1 ? [overall, ...perTypeEstimates] : [overall];
  const tested = family.flatMap((e, i) => (e ? [[i, e.pValue] as const] : []));
  const adjusted = new Map<number, number>();
  holmAdjust(tested.map(([, p]) => p)).forEach((p, k) => adjusted.set(tested[k]?.[0] ?? -1, p));
  const offset = types.length > 1 ? 1 : 0;
  const effect = overall
    ? { ...overall, oddsRatio: Math.exp(overall.estimate), adjustedPValue: adjusted.get(0) ?? overall.pValue }
    : null;
  const perType = types.map((type, i) => {
    const e = perTypeEstimates[i] ?? null;
    return { type, effect: e, adjustedPValue: e ? (adjusted.get(i + offset) ?? null) : null };
  });

  const naiveBefore = totals(restrict(treated.before, types));
  const naiveAfter = totals(restrict(treated.after, types));
  const naiveTest = pooledZTest(naiveBefore, naiveAfter);
  const naive = {
    before: naiveBefore,
    after: naiveAfter,
    z: naiveTest?.z ?? null,
    pValue: naiveTest?.pValue ?? null,
  };

  // The placebo needs as many signals in its own windows; without them it is not run.
  const placeboEnough = enoughIn(
    control ? [treated.placeboBefore, control.placeboBefore] : [treated.placeboBefore],
  );
  const placeboEstimate = placeboEnough ? estimateOf(types, true) : null;
  const placebo = placeboEstimate
    ? { ...placeboEstimate, significant: placeboEstimate.pValue < alpha }
    : null;

  const volumes = control
    ? volumeShiftTest({
        treatedBefore: sum(treated.before.signals),
        treatedAfter: sum(treated.after.signals),
        controlBefore: sum(control.before.signals),
        controlAfter: sum(control.after.signals),
      })
    : null;
  const traffic = volumes ? { ...volumes, significant: volumes.pValue < alpha } : null;

  const label: VerdictLabel = traffic?.significant
    ? 'unreliable: volume_shift'
    : placebo?.significant
      ? 'unreliable: pre_trend'
      : control
        ? 'observational'
        : 'uncontrolled';
  const method = control ? 'did' : 'before_after';
  const common = { label, method, effect, perType, naive, placebo, traffic } as const;

  if (provisional) {
    const monitor = enough && overall ? alwaysValidRegression(overall, alpha) : null;
    return {
      verdict: 'inconclusive',
      reason: enough ? 'provisional' : 'too_few_signals',
      ...common,
      monitor: {
        alwaysValidPValue: monitor?.alwaysValidPValue ?? 1,
        regressionDetected: monitor?.crossed ?? false,
      },
    };
  }
  let verdict: VerdictDecision['verdict'] = 'inconclusive';
  let reason: VerdictDecision['reason'] = 'not_significant';
  if (!enough) reason = 'too_few_signals';
  else if (label.startsWith('unreliable')) reason = 'unreliable';
  else if (effect && effect.adjustedPValue < alpha) {
    verdict = effect.estimate > 0 ? 'regressed' : 'improved';
    reason = 'significant';
  }
  return { verdict, reason, ...common, monitor: null };
}
