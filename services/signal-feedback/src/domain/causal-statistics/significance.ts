import chisquareCdf from '@stdlib/stats-base-dists-chisquare-cdf';
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import { checkAlpha } from './estimates';

/** The mSPRT's default mixing variance τ² on the log-odds scale (τ ≈ 0.32: odds ratios around 1.4). */
export const DEFAULT_MIXING_VARIANCE = 0.1;

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
