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
 * Refuses a significance level outside (0, 1).
 * @throws RangeError when alpha is not in (0, 1)
 */
export function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`);
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
