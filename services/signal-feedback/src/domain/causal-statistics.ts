/*
 * The statistics of a deployment's verdict (services/signal-feedback/docs/verdicts.md; README,
 * "Deployments and verification"): pure functions, no I/O.
 *
 * Changes to the agreed interface (for the code that composes these functions):
 * - `VerdictDecision['reason']` has a fifth value, `'provisional'`: while the after-window is open the
 *   verdict is `inconclusive` for that reason (only `monitor` may report a regression).
 * - `comparisonWindows` also returns `periodMinutes`, the lag between the before- and the after-window
 *   (whole weeks: the before-window is the after-window one or more weeks earlier).
 * - `DEFAULT_MIXING_VARIANCE` is exported (the mSPRT's default mixing variance).
 */

/** Signals and failing signals of one group in one window; `failing` may be fractional after reweighting. */
export interface Cell {
  /** Every signal of the group in the window (after reweighting: the effective sample size). */
  signals: number;
  /** The signals of the failing type(s) compared, 0 ≤ failing ≤ signals. */
  failing: number;
}

/** The four cells of a difference-in-differences. */
export interface DidCells {
  treatedBefore: Cell;
  treatedAfter: Cell;
  controlBefore: Cell;
  controlAfter: Cell;
}

/**
 * An estimate on the log-odds scale with its normal-approximation (Wald) interval: `ciLow/ciHigh =
 * estimate ∓ z_{1−alpha/2} · standardError`, `z = estimate / standardError`, `pValue = 2 Φ(−|z|)`
 * (two-sided). A positive estimate means the failing odds rose (harm).
 */
export interface Estimate {
  estimate: number;
  standardError: number;
  ciLow: number;
  ciHigh: number;
  z: number;
  pValue: number;
}

/**
 * Counts of one group in one window per hour-of-week bucket: 168 entries, bucket 0 = Monday
 * 00:00–01:00 UTC, bucket 167 = Sunday 23:00–24:00 UTC.
 */
export interface HourOfWeekCounts {
  /** Every signal of the group per bucket (length 168). */
  signals: number[];
  /** Per failing signal type, its signals per bucket (each length 168; types are disjoint). */
  failing: Record<string, number[]>;
}

/** The mSPRT's default mixing variance τ² on the log-odds scale (τ ≈ 0.32: odds ratios around 1.4). */
export const DEFAULT_MIXING_VARIANCE = 0.1;

// Until the implementations land: the arguments are taken so the signatures type-check and lint.
const notImplemented = (..._args: unknown[]): never => {
  throw new Error('not implemented');
};

/**
 * The difference-in-differences of the failing log-odds, treated against control, after against
 * before (Angrist & Pischke, "Mostly Harmless Econometrics", ch. 5; the closed form of a logistic
 * model with a group × period term):
 * `θ = [logit(p_TA) − logit(p_TB)] − [logit(p_CA) − logit(p_CB)]`, `logit(p) = ln(f / (n − f))`, i.e.
 * the log of the ratio of the two groups' odds ratios.
 * Its variance is Woolf's (Woolf 1955; Agresti, "Categorical Data Analysis", 3rd ed., §3.1.1), the sum
 * of the reciprocals of the eight counts: `Var θ = Σ_cells (1/f + 1/(n − f))`. When any of the eight
 * counts is 0, 0.5 is added to all eight (the Haldane–Anscombe correction).
 * The estimate assumes parallel trends on the log-odds scale: without the change, the treated
 * group's failing odds would have moved by the same factor as the control's.
 * @param cells the four cells (counts; `failing` may be fractional after `reweightToAfter`)
 * @param alpha the interval's level is 1 − alpha, 0 < alpha < 1
 * @returns the estimate, or null when a cell has no signals (or a non-finite count)
 * @throws RangeError when alpha is not in (0, 1)
 */
export function logOddsDid(cells: DidCells, alpha: number): Estimate | null {
  return notImplemented(cells, alpha);
}

/**
 * The change of the failing log-odds after against before, one group without control: the log odds
 * ratio `θ = logit(p_after) − logit(p_before)` with Woolf's variance `1/f_a + 1/(n_a − f_a) + 1/f_b +
 * 1/(n_b − f_b)` and the Haldane–Anscombe 0.5 when a count is 0 (Woolf 1955; Agresti, "Categorical Data
 * Analysis", §3.1.1). The fallback when there are no usable controls (label `uncontrolled`).
 * @returns the estimate, or null when a window has no signals
 * @throws RangeError when alpha is not in (0, 1)
 */
export function logOddsBeforeAfter(before: Cell, after: Cell, alpha: number): Estimate | null {
  return notImplemented(before, after, alpha);
}

/**
 * Post-stratifies the before-window to the after-window's hour-of-week mix: with `n_h`, `f_h` the
 * before-window's signals and failing signals in bucket h and `w_h` the after-window's share of
 * signals in h (over the buckets where both windows have signals, renormalised), the reweighted
 * failing rate is `p = Σ_h w_h f_h / n_h` and its effective sample size (Kish) `n_eff = 1 / Σ_h
 * (w_h² / n_h)`, so that `p (1 − p) / n_eff` approximates the post-stratified variance. When the
 * before-window's mix already equals the after-window's, this returns the plain sums.
 * When no bucket has signals in both windows, the plain before sums are returned.
 * @param type the failing type to count; omitted: all types of `before.failing` pooled
 * @returns `{ signals: n_eff, failing: p · n_eff }` (fractional)
 * @throws RangeError when an array does not have 168 entries
 */
export function reweightToAfter(before: HourOfWeekCounts, after: HourOfWeekCounts, type?: string): Cell {
  return notImplemented(before, after, type);
}

/**
 * The traffic check (SRM-style): Pearson's chi-square test of independence on the 2 × 2 table of signal
 * volumes (group × window), 1 degree of freedom, without continuity correction. Under no shift the
 * treated group's share of the volume is the same before and after, and the table's expected count for
 * treated-after is `(TB + TA)(TA + CA) / N`. `χ² = Σ (O − E)² / E`, p-value from the chi-square
 * distribution with 1 df (Pearson 1900; Agresti, "Categorical Data Analysis", §3.2).
 * @param volumes signals per group and window (counts ≥ 0)
 * @returns the statistic, its p-value and treated-after's expected and observed volume; null when a row
 *   or column of the table is empty
 */
export function volumeShiftTest(volumes: {
  treatedBefore: number;
  treatedAfter: number;
  controlBefore: number;
  controlAfter: number;
}): { chiSquare: number; pValue: number; expectedTreatedAfter: number; observedTreatedAfter: number } | null {
  return notImplemented(volumes);
}

/**
 * Holm's step-down adjustment (Holm 1979, "A simple sequentially rejective multiple test procedure"):
 * with the m p-values sorted ascending `p_(1) ≤ … ≤ p_(m)`, `p̃_(i) = min(1, max_{j ≤ i} (m − j + 1)
 * p_(j))`. Rejecting where `p̃ < alpha` controls the family-wise error rate at alpha.
 * @returns the adjusted p-values in the input's order
 * @throws RangeError when a p-value is not in [0, 1]
 */
export function holmAdjust(pValues: readonly number[]): number[] {
  return notImplemented(pValues);
}

/**
 * The always-valid monitor of a regression while the window is open: a one-sided normal-mixture
 * sequential probability ratio test (mSPRT; Johari, Koomen, Pekelis & Walsh 2017, "Peeking at A/B
 * Tests"; Robbins 1970) on the estimate θ̂ with variance V = standardError². With a half-normal mixing
 * distribution on the harmful side (θ > 0, scale τ² = `mixingVariance`):
 * `Λ = 2 · sqrt(V / (V + τ²)) · exp(θ̂² τ² / (2 V (V + τ²))) · Φ(θ̂ τ / sqrt(V (V + τ²)))`.
 * Λ is a non-negative supermartingale under "no harm" (θ ≤ 0), so by Ville's inequality checking
 * `Λ ≥ 1/alpha` after every new hour keeps the chance of ever crossing falsely at most alpha. The
 * always-valid p-value is `min(1, 1/Λ)`, and never below the fixed-horizon one-sided p-value `Φ(−θ̂ /
 * se)` (taking the larger keeps it valid). Callers that want it monotone keep the running minimum.
 * @param estimate the current estimate on the log-odds scale (positive: harm) and its standard error
 * @param alpha the deployment's significance level, 0 < alpha < 1
 * @param mixingVariance τ² > 0, default `DEFAULT_MIXING_VARIANCE`
 * @returns the always-valid p-value and whether the boundary is crossed (`alwaysValidPValue ≤ alpha`,
 *   only on the harmful side)
 * @throws RangeError when alpha or mixingVariance is out of range
 */
export function alwaysValidRegression(
  estimate: { estimate: number; standardError: number },
  alpha: number,
  mixingVariance: number = DEFAULT_MIXING_VARIANCE,
): { alwaysValidPValue: number; crossed: boolean } {
  return notImplemented(estimate, alpha, mixingVariance);
}

/** A half-open time window `[from, to)`. */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/**
 * The windows of a deployment (docs/verdicts.md, "Windows"): the after-window is `[deployedAt,
 * deployedAt + windowMinutes)`; the before-window is the after-window moved back by `periodMinutes`,
 * the smallest whole number of weeks ≥ the window (one week for every window of at most 7 days), so
 * both windows cover the same weekdays and hours of the day. The placebo compares the before-window
 * (as its "after") with the window one more period earlier (a fake deployment at `deployedAt −
 * periodMinutes`). `wholeWeeks`: the window is a whole number of weeks (every hour of the week is
 * equally covered and no reweighting is needed); otherwise `reweighted` is true and the before-windows
 * are post-stratified to their after-window's hour-of-week mix (`reweightToAfter`).
 * @param deployedAt the deployment time
 * @param windowMinutes the window's length in minutes (> 0)
 * @throws RangeError when windowMinutes is not a positive finite number
 */
export function comparisonWindows(
  deployedAt: Date,
  windowMinutes: number,
): {
  before: TimeWindow;
  after: TimeWindow;
  placeboBefore: TimeWindow;
  placeboAfter: TimeWindow;
  periodMinutes: number;
  wholeWeeks: boolean;
  reweighted: boolean;
} {
  return notImplemented(deployedAt, windowMinutes);
}

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
  types: string[];
  /** From `comparisonWindows`: post-stratify each before-window to its after-window. */
  reweighted: boolean;
  /** The deployment's two-sided significance level, 0 < alpha < 1. */
  alpha: number;
  /** Minimum signals in every used cell (raw counts, before reweighting). */
  minSignals: number;
  /** The after-window is still open: only the always-valid monitor decides anything. */
  provisional: boolean;
}

/** The verdict's label, worst first: volume_shift, pre_trend, uncontrolled, observational. */
export type VerdictLabel =
  'observational' | 'uncontrolled' | 'unreliable: pre_trend' | 'unreliable: volume_shift';

/** The decision of `decideVerdict`. */
export interface VerdictDecision {
  verdict: 'improved' | 'regressed' | 'inconclusive';
  reason: 'significant' | 'not_significant' | 'too_few_signals' | 'unreliable' | 'provisional';
  /** The worst that applies: volume_shift, then pre_trend, then uncontrolled, then observational. */
  label: VerdictLabel;
  method: 'did' | 'before_after';
  /** Overall (all covered types pooled); `adjustedPValue` is Holm-adjusted with the per-type tests when there are several types. */
  effect: (Estimate & { oddsRatio: number; adjustedPValue: number }) | null;
  /** Per covered type, Holm across the types and the overall test. */
  perType: Array<{ type: string; effect: Estimate | null; adjustedPValue: number | null }>;
  /** The old two-proportion z-test (pooled standard error) of the treated group, raw before/after counts. */
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
 * The verdict of a deployment (docs/verdicts.md). The overall effect is the log-odds DiD of the pooled
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
  return notImplemented(input);
}
