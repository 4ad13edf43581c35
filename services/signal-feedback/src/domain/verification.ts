import type { HourOfWeekCells, WindowCounts, WindowSetCounts } from '../data/deployment-windows';
import type { EffectFigures, VerificationResult, WindowFigures } from '../schemas/verification';
import { logOddsBeforeAfter, pooledZTest, type Estimate } from './causal-statistics/estimates';
import { type HourOfWeekCounts } from './causal-statistics/hour-of-week';
import { decideVerdict, type VerdictDecision } from './causal-statistics/verdict';
import { comparisonWindows } from './causal-statistics/windows';

/**
 * The outcome of comparing a deployment's windows: the wire's `VerificationResult` (README,
 * "Deployments and verification").
 */
export type Verification = VerificationResult;

/** The thresholds a verification applies. */
export interface VerificationRules {
  /** Two-sided significance level, 0 < alpha < 1: the deployment's own. */
  alpha: number;
  /** Fewest signals each compared cell needs (each group in each window). */
  minSignals: number;
}

/** A half-open window `[from, to)`. */
export interface Window {
  from: Date;
  to: Date;
}

/** The windows of one verification: `comparisonWindows` of causal-statistics. */
export type VerificationWindows = ReturnType<typeof comparisonWindows>;

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;
const sig = (x: number, digits = 4) => Number(x.toPrecision(digits));
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** The note every provisional verification carries (README, "Deployments and verification"). */
export const PROVISIONAL_NOTE =
  'Not final: the after-window is still open. These figures cover the time elapsed so far and carry no ' +
  'fixed-horizon p-value; only the always-valid monitor (monitor.always_valid_p_value) may be acted on ' +
  'before the window closes.';

/**
 * The two-proportion z-test of the failing rate before and after a change ({@link pooledZTest} over a
 * window's counts): the naive figure kept beside the controlled effect.
 * @returns z and the two-sided p-value, unrounded; null when a window is empty or the pooled rate is 0
 *   or 1 (no variance: nothing changed)
 */
export function twoProportionZTest(
  before: WindowCounts,
  after: WindowCounts,
): { z: number; pValue: number } | null {
  return pooledZTest(
    { signals: before.signals, failing: before.negative },
    { signals: after.signals, failing: after.negative },
  );
}

/** Total signals and failing signals (all covered types) of hour-of-week cells. */
export function totals(cells: HourOfWeekCells): WindowCounts {
  return {
    signals: sum(cells.signals),
    negative: sum(Object.values(cells.failing).map(sum)),
  };
}

/** The wire figures of an estimate (log odds, four decimals; odds ratios, four significant digits). */
function effectFigures(e: Estimate, provisional: boolean): EffectFigures {
  return {
    estimate: round(e.estimate, 4),
    standard_error: round(e.standardError, 4),
    ci_low: round(e.ciLow, 4),
    ci_high: round(e.ciHigh, 4),
    odds_ratio: sig(Math.exp(e.estimate)),
    odds_ratio_ci_low: sig(Math.exp(e.ciLow)),
    odds_ratio_ci_high: sig(Math.exp(e.ciHigh)),
    // A fixed-horizon test read while the window is open is peeking (README, "Deployments and verification").
    z: provisional ? null : round(e.z, 4),
    p_value: provisional ? null : sig(e.pValue),
  };
}

const windowWire = (w: Window) => ({ from: w.from.toISOString(), to: w.to.toISOString() });

/**
 * The verification of a deployment from the counts of its window set (README, "Deployments and
 * verification"): the verdict, label, effect, per-type effects, placebo, traffic check and monitor of
 * `decideVerdict` (causal-statistics), with the naive before/after figures of the treated contexts
 * beside them.
 *
 * The controls are usable when they hold at least `rules.minSignals` signals in both the before- and
 * the after-window together; otherwise the verdict is before/after and labelled `uncontrolled`.
 * While `provisional`, every fixed-horizon p-value (and z) is null and `provisional_note` says so.
 * @param input.counts the hour-of-week counts of the treated and the pooled control contexts
 * @param input.signalTypes the covered failing types; empty: every negative signal (key `''` in counts)
 * @param input.controlSelection whether the deployment named its controls
 * @param now when the figures were computed
 */
export function verify(
  input: {
    windows: VerificationWindows;
    counts: WindowSetCounts;
    signalTypes: readonly string[];
    treatedContextIds: readonly string[];
    controlSelection: 'automatic' | 'explicit';
    rules: VerificationRules;
    provisional: boolean;
  },
  now: Date,
): Verification {
  const { windows, counts, rules, provisional } = input;
  const types = input.signalTypes.length > 0 ? [...input.signalTypes] : [''];
  const controlBefore = totals(counts.control.before);
  const controlAfter = totals(counts.control.after);
  const usableControl =
    counts.controls.length > 0 &&
    controlBefore.signals >= rules.minSignals &&
    controlAfter.signals >= rules.minSignals;
  const decision: VerdictDecision = decideVerdict({
    treated: {
      placeboBefore: asCounts(counts.treated.placeboBefore),
      before: asCounts(counts.treated.before),
      after: asCounts(counts.treated.after),
    },
    control: usableControl
      ? {
          placeboBefore: asCounts(counts.control.placeboBefore),
          before: asCounts(counts.control.before),
          after: asCounts(counts.control.after),
        }
      : null,
    types,
    reweighted: windows.reweighted,
    alpha: rules.alpha,
    minSignals: rules.minSignals,
    provisional,
  });

  const before = totals(counts.treated.before);
  const after = totals(counts.treated.after);
  const naiveTest = provisional ? null : twoProportionZTest(before, after);
  const naive = logOddsBeforeAfter(
    { signals: before.signals, failing: before.negative },
    { signals: after.signals, failing: after.negative },
    rules.alpha,
  );
  const figures = (w: Window, c: WindowCounts): WindowFigures => ({
    ...windowWire(w),
    signals: c.signals,
    negative: c.negative,
    negative_rate: rate(c),
  });
  const adjusted = (p: number | null | undefined) =>
    provisional || p === null || p === undefined ? null : sig(p);
  return {
    verdict: decision.verdict,
    reason: decision.reason,
    provisional,
    provisional_note: provisional ? PROVISIONAL_NOTE : null,
    label: decision.label,
    effect: decision.effect && {
      ...effectFigures(decision.effect, provisional),
      adjusted_p_value: adjusted(decision.effect.adjustedPValue),
    },
    method: {
      estimator: decision.method,
      treated_contexts: [...input.treatedContextIds],
      control_selection: input.controlSelection,
      control_contexts: counts.controls.map((c) => ({
        context_id: c.contextId,
        before_signals: c.beforeSignals,
        after_signals: c.afterSignals,
      })),
      signal_types: [...input.signalTypes],
      windows: {
        before: windowWire(windows.before),
        after: windowWire(windows.after),
        placebo_before: windowWire(windows.placeboBefore),
        placebo_after: windowWire(windows.placeboAfter),
        period_minutes: Math.round(windows.periodMinutes),
        whole_weeks: windows.wholeWeeks,
        reweighted: windows.reweighted,
      },
    },
    control: usableControl
      ? {
          before: { ...controlBefore, negative_rate: rate(controlBefore) },
          after: { ...controlAfter, negative_rate: rate(controlAfter) },
        }
      : null,
    naive: naive && effectFigures(naive, provisional),
    placebo: decision.placebo && {
      ...effectFigures(decision.placebo, provisional),
      significant: decision.placebo.significant,
    },
    traffic: decision.traffic && {
      chi_square: round(decision.traffic.chiSquare, 4),
      p_value: sig(decision.traffic.pValue),
      expected_treated_after: round(decision.traffic.expectedTreatedAfter, 2),
      observed_treated_after: decision.traffic.observedTreatedAfter,
      significant: decision.traffic.significant,
    },
    per_type: decision.perType.map((t) => ({
      signal_type: t.type === '' ? null : t.type,
      effect: t.effect && effectFigures(t.effect, provisional),
      adjusted_p_value: adjusted(t.adjustedPValue),
    })),
    monitor: decision.monitor && {
      always_valid_p_value: sig(decision.monitor.alwaysValidPValue),
      regression_detected: decision.monitor.regressionDetected,
    },
    before: figures(windows.before, before),
    after: figures(windows.after, after),
    z: naiveTest ? round(naiveTest.z, 4) : null,
    p_value: naiveTest ? sig(naiveTest.pValue) : null,
    alpha: rules.alpha,
    min_signals: rules.minSignals,
    computed_at: now.toISOString(),
  };
}

const rate = (c: WindowCounts) => (c.signals > 0 ? round(c.negative / c.signals, 4) : null);

/** The repository's cells as causal-statistics' input (the same shape, copied so neither aliases). */
function asCounts(cells: HourOfWeekCells): HourOfWeekCounts {
  return {
    signals: [...cells.signals],
    failing: Object.fromEntries(Object.entries(cells.failing).map(([t, xs]) => [t, [...xs]])),
  };
}

/**
 * A verification stored before verdicts were controlled (it has no `label`), shown in today's shape:
 * what it was, an uncontrolled before/after z-test over two adjacent windows, nothing else computed.
 * @param treatedContextIds the deployment's treated contexts (its proposal's context)
 */
export function upgradeStoredVerification(
  stored: VerificationResult,
  treatedContextIds: readonly string[],
): VerificationResult {
  if (typeof (stored as Partial<VerificationResult>).label === 'string') return stored;
  const w = (f: WindowFigures) => ({ from: f.from, to: f.to });
  return {
    ...stored,
    provisional_note: null,
    label: 'uncontrolled',
    effect: null,
    method: {
      estimator: 'before_after',
      treated_contexts: [...treatedContextIds],
      control_selection: 'automatic',
      control_contexts: [],
      signal_types: [],
      windows: {
        before: w(stored.before),
        after: w(stored.after),
        placebo_before: null,
        placebo_after: null,
        period_minutes: Math.round((Date.parse(stored.after.from) - Date.parse(stored.before.from)) / 60_000),
        whole_weeks: false,
        reweighted: false,
      },
    },
    control: null,
    naive: null,
    placebo: null,
    traffic: null,
    per_type: [],
    monitor: null,
  };
}
