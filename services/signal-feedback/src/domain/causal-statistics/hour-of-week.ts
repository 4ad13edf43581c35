import type { Cell } from './estimates';

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

/** Buckets of an hour-of-week array: 7 days × 24 hours. */
export const HOURS_PER_WEEK = 168;

/** The sum of counts. */
export const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

function checkBuckets(xs: readonly number[], what: string): void {
  if (xs.length !== HOURS_PER_WEEK) {
    throw new RangeError(`${what} must have ${HOURS_PER_WEEK} hour-of-week buckets, got ${xs.length}`);
  }
  for (const x of xs) {
    if (!(Number.isFinite(x) && x >= 0))
      throw new RangeError(`${what} must hold finite counts ≥ 0, got ${x}`);
  }
}

/**
 * The failing signals per bucket of one type (missing: 0) or, without a type, of every type.
 * @throws RangeError when a pooled array is not 168 finite counts ≥ 0
 */
export function failingBuckets(counts: HourOfWeekCounts, type?: string): number[] {
  if (type !== undefined) return counts.failing[type] ?? new Array<number>(HOURS_PER_WEEK).fill(0);
  const pooled = new Array<number>(HOURS_PER_WEEK).fill(0);
  for (const xs of Object.values(counts.failing)) {
    checkBuckets(xs, 'failing');
    xs.forEach((x, h) => (pooled[h] = (pooled[h] ?? 0) + x));
  }
  return pooled;
}

/**
 * The counts with only the given types' failing signals, pooled under the key `pooled`.
 * @throws RangeError when an array is not 168 finite counts ≥ 0
 */
export function restrict(counts: HourOfWeekCounts, types: readonly string[]): HourOfWeekCounts {
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
