/*
 * The statistics of a deployment's verdict (services/signal-feedback/docs/verdicts.md; README,
 * "Deployments and verification"): pure functions, no I/O.
 *
 * Changes to the agreed interface (for the code that composes these functions):
 * - `VerdictDecision['reason']` has a fifth value, `'provisional'`: while the after-window is open the
 *   verdict is `inconclusive` for that reason (only `monitor` may report a regression).
 * - `comparisonWindows` also returns `periodMinutes`, the lag between the before- and the after-window
 *   (whole weeks: the before-window is the after-window one or more weeks earlier).
 * - `DEFAULT_MIXING_VARIANCE` (the mSPRT's default mixing variance), `HOURS_PER_WEEK` (168), `TimeWindow`
 *   and `GroupWindows` are exported; `VerdictInput['types']` is `readonly string[]`.
 */

import chisquareCdf from '@stdlib/stats-base-dists-chisquare-cdf';
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import normalQuantile from '@stdlib/stats-base-dists-normal-quantile';

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

/** Buckets of an hour-of-week array: 7 days × 24 hours. */
export const HOURS_PER_WEEK = 168;

const WEEK_MINUTES = 7 * 24 * 60;
const MINUTE_MS = 60_000;

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`);
}

function checkBuckets(xs: readonly number[], what: string): void {
  if (xs.length !== HOURS_PER_WEEK) {
    throw new RangeError(`${what} must have ${HOURS_PER_WEEK} hour-of-week buckets, got ${xs.length}`);
  }
  for (const x of xs) {
    if (!(Number.isFinite(x) && x >= 0))
      throw new RangeError(`${what} must hold finite counts ≥ 0, got ${x}`);
  }
}

/** The failing signals per bucket of one type (missing: 0) or, without a type, of every type. */
function failingBuckets(counts: HourOfWeekCounts, type?: string): number[] {
  if (type !== undefined) return counts.failing[type] ?? new Array<number>(HOURS_PER_WEEK).fill(0);
  const pooled = new Array<number>(HOURS_PER_WEEK).fill(0);
  for (const xs of Object.values(counts.failing)) {
    checkBuckets(xs, 'failing');
    xs.forEach((x, h) => (pooled[h] = (pooled[h] ?? 0) + x));
  }
  return pooled;
}

/** The counts with only the given types' failing signals, pooled under one key. */
function restrict(counts: HourOfWeekCounts, types: readonly string[]): HourOfWeekCounts {
  const pooled = new Array<number>(HOURS_PER_WEEK).fill(0);
  for (const type of types) {
    const xs = failingBuckets(counts, type);
    checkBuckets(xs, `failing[${JSON.stringify(type)}]`);
    xs.forEach((x, h) => (pooled[h] = (pooled[h] ?? 0) + x));
  }
  checkBuckets(counts.signals, 'signals');
  return { signals: counts.signals, failing: { pooled } };
}

/**
 * The two-proportion z-test of the failing rate before and after a change, with the pooled standard
 * error (the naive before/after figure kept beside the controlled effect):
 * `z = (p_after − p_before) / sqrt(p (1 − p) (1/n_before + 1/n_after))`, `p` the pooled rate.
 * @returns z and the two-sided p-value, unrounded; null when a window is empty or the pooled rate is 0
 *   or 1 (no variance: nothing changed)
 */
export function pooledZTest(before: Cell, after: Cell): { z: number; pValue: number } | null {
  if (before.signals === 0 || after.signals === 0) return null;
  const pooled = (before.failing + after.failing) / (before.signals + after.signals);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / before.signals + 1 / after.signals));
  if (!(se > 0)) return null;
  const z = (after.failing / after.signals - before.failing / before.signals) / se;
  // The lower tail keeps its precision where 1 − Φ(|z|) would round to 0.
  return { z, pValue: Math.min(1, 2 * normalCdf(-Math.abs(z), 0, 1)) };
}

/** A cell's failing and non-failing counts; null when the cell has no signals or is not a count. */
function split(cell: Cell): [number, number] | null {
  if (!(Number.isFinite(cell.signals) && Number.isFinite(cell.failing) && cell.signals > 0)) return null;
  if (cell.failing < 0 || cell.failing > cell.signals) {
    throw new RangeError(`a cell's failing (${cell.failing}) must lie in [0, signals (${cell.signals})]`);
  }
  return [cell.failing, cell.signals - cell.failing];
}

/** The Wald interval, z and two-sided p-value of an estimate with its variance. */
function wald(estimate: number, variance: number, alpha: number): Estimate {
  const standardError = Math.sqrt(variance);
  const q = normalQuantile(1 - alpha / 2, 0, 1);
  const z = estimate / standardError;
  return {
    estimate,
    standardError,
    ciLow: estimate - q * standardError,
    ciHigh: estimate + q * standardError,
    z,
    // The lower tail keeps its precision where 1 − Φ(|z|) would round to 0.
    pValue: Math.min(1, 2 * normalCdf(-Math.abs(z), 0, 1)),
  };
}

/**
 * The log-odds contrast `Σ sign_i (ln f_i − ln (n_i − f_i))` with Woolf's variance over the counts of
 * the given cells, 0.5 added to every count when one is 0 (Haldane–Anscombe).
 */
function logOddsContrast(cells: ReadonlyArray<[Cell, 1 | -1]>, alpha: number): Estimate | null {
  checkAlpha(alpha);
  const counts: Array<[number, number, 1 | -1]> = [];
  for (const [cell, sign] of cells) {
    const c = split(cell);
    if (!c) return null;
    counts.push([c[0], c[1], sign]);
  }
  const add = counts.some(([f, g]) => f === 0 || g === 0) ? 0.5 : 0;
  let estimate = 0;
  let variance = 0;
  for (const [f, g, sign] of counts) {
    estimate += sign * (Math.log(f + add) - Math.log(g + add));
    variance += 1 / (f + add) + 1 / (g + add);
  }
  return wald(estimate, variance, alpha);
}

/**
 * The difference-in-differences of the failing log-odds, treated against control, after against
 * before (services/signal-feedback/docs/verdicts.md, "The effect"). Following Angrist & Pischke, "Mostly
 * Harmless Econometrics", ch. 5, it is the closed form of a logistic model with a group × period term:
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
  return logOddsContrast(
    [
      [cells.treatedAfter, 1],
      [cells.treatedBefore, -1],
      [cells.controlAfter, -1],
      [cells.controlBefore, 1],
    ],
    alpha,
  );
}

/**
 * The change of the failing log-odds after against before, one group without control
 * (services/signal-feedback/docs/verdicts.md, "The effect", "Without controls"): the log odds
 * ratio `θ = logit(p_after) − logit(p_before)` with Woolf's variance `1/f_a + 1/(n_a − f_a) + 1/f_b +
 * 1/(n_b − f_b)` and the Haldane–Anscombe 0.5 when a count is 0 (Woolf 1955; Agresti, "Categorical Data
 * Analysis", §3.1.1). The fallback when there are no usable controls (label `uncontrolled`).
 * @returns the estimate, or null when a window has no signals
 * @throws RangeError when alpha is not in (0, 1)
 */
export function logOddsBeforeAfter(before: Cell, after: Cell, alpha: number): Estimate | null {
  return logOddsContrast(
    [
      [after, 1],
      [before, -1],
    ],
    alpha,
  );
}

/**
 * Post-stratifies the before-window to the after-window's hour-of-week mix
 * (services/signal-feedback/docs/verdicts.md, "Windows", "Reweighting"): with `n_h`, `f_h` the
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
  const bf = failingBuckets(before, type);
  checkBuckets(before.signals, 'before.signals');
  checkBuckets(after.signals, 'after.signals');
  checkBuckets(bf, 'before.failing');
  let covered = 0;
  for (let h = 0; h < HOURS_PER_WEEK; h++) if ((before.signals[h] ?? 0) > 0) covered += after.signals[h] ?? 0;
  if (covered === 0) return { signals: sum(before.signals), failing: sum(bf) };
  let rate = 0;
  let inverseSize = 0;
  for (let h = 0; h < HOURS_PER_WEEK; h++) {
    const n = before.signals[h] ?? 0;
    if (n === 0) continue;
    const w = (after.signals[h] ?? 0) / covered;
    rate += (w * (bf[h] ?? 0)) / n;
    inverseSize += (w * w) / n;
  }
  const signals = 1 / inverseSize;
  // Rounding may push a weighted mean of rates a hair past 1.
  return { signals, failing: Math.min(1, Math.max(0, rate)) * signals };
}

/**
 * The traffic check (services/signal-feedback/docs/verdicts.md, "The traffic check"), SRM-style:
 * Pearson's chi-square test of independence on the 2 × 2 table of signal
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
  const { treatedBefore: tb, treatedAfter: ta, controlBefore: cb, controlAfter: ca } = volumes;
  for (const x of [tb, ta, cb, ca]) {
    if (!(Number.isFinite(x) && x >= 0)) throw new RangeError(`volumes must be finite counts ≥ 0, got ${x}`);
  }
  const n = tb + ta + cb + ca;
  const rows = [tb + ta, cb + ca];
  const cols = [tb + cb, ta + ca];
  if (rows.some((r) => r === 0) || cols.some((c) => c === 0)) return null;
  const observed = [
    [tb, ta],
    [cb, ca],
  ];
  let chiSquare = 0;
  for (let i = 0; i < 2; i++) {
    for (let j = 0; j < 2; j++) {
      const expected = ((rows[i] ?? 0) * (cols[j] ?? 0)) / n;
      chiSquare += ((observed[i]?.[j] ?? 0) - expected) ** 2 / expected;
    }
  }
  return {
    chiSquare,
    pValue: Math.min(1, Math.max(0, 1 - chisquareCdf(chiSquare, 1))),
    expectedTreatedAfter: ((rows[0] ?? 0) * (cols[1] ?? 0)) / n,
    observedTreatedAfter: ta,
  };
}

/**
 * Holm's step-down adjustment (services/signal-feedback/docs/verdicts.md, "Several failing types"),
 * after Holm 1979, "A simple sequentially rejective multiple test procedure":
 * with the m p-values sorted ascending `p_(1) ≤ … ≤ p_(m)`, `p̃_(i) = min(1, max_{j ≤ i} (m − j + 1)
 * p_(j))`. Rejecting where `p̃ < alpha` controls the family-wise error rate at alpha.
 * @returns the adjusted p-values in the input's order
 * @throws RangeError when a p-value is not in [0, 1]
 */
export function holmAdjust(pValues: readonly number[]): number[] {
  for (const p of pValues) {
    if (!(p >= 0 && p <= 1)) throw new RangeError(`p-values must lie in [0, 1], got ${p}`);
  }
  const m = pValues.length;
  const order = pValues.map((p, i) => [p, i] as const).sort((a, b) => a[0] - b[0]);
  const adjusted = new Array<number>(m).fill(1);
  let running = 0;
  order.forEach(([p, i], rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    adjusted[i] = running;
  });
  return adjusted;
}

/**
 * The always-valid monitor of a regression while the window is open (services/signal-feedback/docs/verdicts.md,
 * "While the window is open"): a one-sided normal-mixture
 * sequential probability ratio test (mSPRT; Johari, Koomen, Pekelis & Walsh 2017, "Peeking at A/B
 * Tests"; Robbins 1970) on the estimate θ̂ with variance V = standardError². With a half-normal mixing
 * distribution on the harmful side (θ > 0, scale τ² = `mixingVariance`):
 * `Λ = 2 · sqrt(V / (V + τ²)) · exp(θ̂² τ² / (2 V (V + τ²))) · Φ(θ̂ τ / sqrt(V (V + τ²)))`.
 * Λ is a non-negative supermartingale under "no harm" (θ ≤ 0), so by Ville's inequality checking
 * `Λ ≥ 1/alpha` after every new hour keeps the chance of ever crossing falsely at most alpha. The
 * always-valid p-value is `min(1, 1/Λ)`, and never below the fixed-horizon two-sided p-value `2 Φ(−|θ̂|
 * / se)` of the same estimate (taking the larger keeps it valid; the mixture is above it anyway).
 * Callers that want it monotone keep the running minimum.
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
  checkAlpha(alpha);
  if (!(Number.isFinite(mixingVariance) && mixingVariance > 0)) {
    throw new RangeError(`mixingVariance must be a finite number > 0, got ${mixingVariance}`);
  }
  const { estimate: theta, standardError: se } = estimate;
  if (!(Number.isFinite(theta) && Number.isFinite(se) && se > 0))
    return { alwaysValidPValue: 1, crossed: false };
  const v = se * se;
  const t2 = mixingVariance;
  // In logs: the exponential overflows long before the p-value stops being meaningful.
  const logLambda =
    Math.LN2 +
    0.5 * Math.log(v / (v + t2)) +
    (theta * theta * t2) / (2 * v * (v + t2)) +
    Math.log(normalCdf((theta * Math.sqrt(t2)) / Math.sqrt(v * (v + t2)), 0, 1));
  const mixture = Math.min(1, Math.exp(-logLambda));
  // Never below the fixed-horizon two-sided p-value (the mixture is already above it in practice; a
  // larger p-value stays valid).
  const fixedHorizon = Math.min(1, 2 * normalCdf(-Math.abs(theta / se), 0, 1));
  const alwaysValidPValue = Math.max(mixture, fixedHorizon);
  return { alwaysValidPValue, crossed: theta > 0 && alwaysValidPValue <= alpha };
}

/** A half-open time window `[from, to)`. */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/**
 * The windows of a deployment (services/signal-feedback/docs/verdicts.md, "Windows"): the after-window is `[deployedAt,
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
  if (!(Number.isFinite(windowMinutes) && windowMinutes > 0)) {
    throw new RangeError(`windowMinutes must be a finite number > 0, got ${windowMinutes}`);
  }
  const periodMinutes = Math.ceil(windowMinutes / WEEK_MINUTES) * WEEK_MINUTES;
  const at = (minutesFromDeployment: number) =>
    new Date(deployedAt.getTime() + minutesFromDeployment * MINUTE_MS);
  const window = (start: number): TimeWindow => ({ from: at(start), to: at(start + windowMinutes) });
  const wholeWeeks = windowMinutes % WEEK_MINUTES === 0;
  return {
    before: window(-periodMinutes),
    after: window(0),
    placeboBefore: window(-2 * periodMinutes),
    placeboAfter: window(-periodMinutes),
    periodMinutes,
    wholeWeeks,
    reweighted: !wholeWeeks,
  };
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
