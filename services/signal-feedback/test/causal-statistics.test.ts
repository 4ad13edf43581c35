import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import { logOddsBeforeAfter, logOddsDid, type Cell } from '../src/domain/causal-statistics/estimates';
import {
  HOURS_PER_WEEK,
  reweightToAfter,
  type HourOfWeekCounts,
} from '../src/domain/causal-statistics/hour-of-week';
import {
  alwaysValidRegression,
  holmAdjust,
  volumeShiftTest,
} from '../src/domain/causal-statistics/significance';
import { decideVerdict, type GroupWindows, type VerdictInput } from '../src/domain/causal-statistics/verdict';
import { comparisonWindows } from '../src/domain/causal-statistics/windows';
import { twoProportionZTest } from '../src/domain/verification';

/** Hour-of-week counts from `{ bucket: [signals, { type: failing }] }`; other buckets are empty. */
function week(spec: Record<number, [number, Record<string, number>]>): HourOfWeekCounts {
  const signals = new Array<number>(HOURS_PER_WEEK).fill(0);
  const failing: Record<string, number[]> = {};
  for (const [bucket, [n, byType]] of Object.entries(spec)) {
    signals[Number(bucket)] = n;
    for (const [type, f] of Object.entries(byType)) {
      (failing[type] ??= new Array<number>(HOURS_PER_WEEK).fill(0))[Number(bucket)] = f;
    }
  }
  return { signals, failing };
}

/** One bucket (Monday 09:00) with `signals` signals of which `failing` are `payment_failed`. */
const one = (signals: number, failing: number) => week({ 9: [signals, { payment_failed: failing }] });

const group = (
  placeboBefore: HourOfWeekCounts,
  before: HourOfWeekCounts,
  after: HourOfWeekCounts,
): GroupWindows => ({
  placeboBefore,
  before,
  after,
});

const input = (over: Partial<VerdictInput>): VerdictInput => ({
  treated: group(one(1000, 100), one(1000, 100), one(1000, 100)),
  control: group(one(5000, 500), one(5000, 500), one(5000, 500)),
  types: ['payment_failed'],
  reweighted: false,
  alpha: 0.05,
  minSignals: 30,
  provisional: false,
  ...over,
});

/**
 * The interaction coefficient of a logistic regression `logit P(fail) = b0 + b1 treated + b2 after +
 * b3 treated·after` on the four cells, fitted by Newton–Raphson (IRLS), with its standard error from the
 * inverse Fisher information: an independent computation of the log-odds DiD and its Woolf variance
 * (the model is saturated, so both must agree exactly; Agresti, "Categorical Data Analysis", §5.4).
 */
function logisticInteraction(cells: Array<{ treated: 0 | 1; after: 0 | 1; cell: Cell }>): {
  b3: number;
  se: number;
} {
  const rows = cells.map(({ treated, after, cell }) => ({
    x: [1, treated, after, treated * after],
    ...cell,
  }));
  let beta = [0, 0, 0, 0];
  let inverse: number[][] = [];
  for (let iteration = 0; iteration < 50; iteration++) {
    const info = [0, 1, 2, 3].map(() => [0, 0, 0, 0]);
    const score = [0, 0, 0, 0];
    for (const { x, signals, failing } of rows) {
      const eta = x.reduce((a, xi, i) => a + xi * (beta[i] ?? 0), 0);
      const p = 1 / (1 + Math.exp(-eta));
      for (let i = 0; i < 4; i++) {
        score[i] = (score[i] ?? 0) + (x[i] ?? 0) * (failing - signals * p);
        for (let j = 0; j < 4; j++)
          info[i]![j] = (info[i]![j] ?? 0) + (x[i] ?? 0) * (x[j] ?? 0) * signals * p * (1 - p);
      }
    }
    inverse = invert(info);
    const step = inverse.map((row) => row.reduce((a, v, j) => a + v * (score[j] ?? 0), 0));
    beta = beta.map((b, i) => b + (step[i] ?? 0));
    if (Math.max(...step.map(Math.abs)) < 1e-12) break;
  }
  return { b3: beta[3] ?? NaN, se: Math.sqrt(inverse[3]?.[3] ?? NaN) };
}

/** Gauss–Jordan inverse of a small symmetric positive-definite matrix. */
function invert(m: number[][]): number[][] {
  const n = m.length;
  const a = m.map((row, i) => [...row, ...row.map((_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < n; c++) {
    const pivot = a[c]![c]!;
    a[c] = a[c]!.map((v) => v / pivot);
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = a[r]![c]!;
      a[r] = a[r]!.map((v, j) => v - f * a[c]![j]!);
    }
  }
  return a.map((row) => row.slice(n));
}

/** Every number anywhere in a value (for the NaN-free property). */
function numbersIn(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(numbersIn);
  return [];
}

describe('logOddsBeforeAfter (Woolf)', () => {
  it('reproduces the aspirin and heart attack example of Agresti, "Categorical Data Analysis", §2.3', () => {
    // Physicians' Health Study: placebo 189 of 11,034 had a myocardial infarction, aspirin 104 of
    // 11,037. Agresti gives the sample odds ratio 1.832, log 0.605, ASE 0.123 and the 95% interval
    // (1.44, 2.33) for the odds ratio.
    const e = logOddsBeforeAfter({ signals: 11037, failing: 104 }, { signals: 11034, failing: 189 }, 0.05)!;
    expect(Math.exp(e.estimate)).toBeCloseTo(1.832, 3);
    expect(e.estimate).toBeCloseTo(0.605, 3);
    expect(e.standardError).toBeCloseTo(0.123, 3);
    expect(Math.exp(e.ciLow)).toBeCloseTo(1.44, 2);
    expect(Math.exp(e.ciHigh)).toBeCloseTo(2.33, 2);
    expect(e.z).toBeCloseTo(e.estimate / e.standardError, 12);
    expect(e.pValue).toBeCloseTo(2 * normalCdf(-e.z, 0, 1), 15);
  });

  it('adds 0.5 to every count when one is 0 (Haldane–Anscombe) and stays finite', () => {
    const e = logOddsBeforeAfter({ signals: 50, failing: 0 }, { signals: 50, failing: 5 }, 0.05)!;
    // By hand: ln((5.5 / 45.5) / (0.5 / 50.5)), variance 1/5.5 + 1/45.5 + 1/0.5 + 1/50.5.
    expect(e.estimate).toBeCloseTo(Math.log((5.5 * 50.5) / (45.5 * 0.5)), 12);
    expect(e.standardError).toBeCloseTo(Math.sqrt(1 / 5.5 + 1 / 45.5 + 1 / 0.5 + 1 / 50.5), 12);
    const none = logOddsBeforeAfter({ signals: 40, failing: 0 }, { signals: 60, failing: 0 }, 0.05)!;
    expect(none.estimate).toBeCloseTo(Math.log(40.5 / 60.5), 12);
    expect(numbersIn(none).every(Number.isFinite)).toBe(true);
  });

  it('is null for an empty window and refuses a bad alpha or a cell with more failing than signals', () => {
    expect(logOddsBeforeAfter({ signals: 0, failing: 0 }, { signals: 10, failing: 1 }, 0.05)).toBeNull();
    expect(() => logOddsBeforeAfter({ signals: 10, failing: 1 }, { signals: 10, failing: 1 }, 0)).toThrow(
      RangeError,
    );
    expect(() => logOddsBeforeAfter({ signals: 10, failing: 1 }, { signals: 10, failing: 1 }, 1)).toThrow(
      RangeError,
    );
    expect(() => logOddsBeforeAfter({ signals: 10, failing: 11 }, { signals: 10, failing: 1 }, 0.05)).toThrow(
      RangeError,
    );
  });
});

describe('logOddsDid', () => {
  const cells = {
    treatedBefore: { signals: 1200, failing: 96 },
    treatedAfter: { signals: 1100, failing: 143 },
    controlBefore: { signals: 5400, failing: 378 },
    controlAfter: { signals: 5000, failing: 400 },
  };

  it("equals a logistic regression's group × period coefficient and its standard error", () => {
    const e = logOddsDid(cells, 0.05)!;
    const fit = logisticInteraction([
      { treated: 1, after: 0, cell: cells.treatedBefore },
      { treated: 1, after: 1, cell: cells.treatedAfter },
      { treated: 0, after: 0, cell: cells.controlBefore },
      { treated: 0, after: 1, cell: cells.controlAfter },
    ]);
    expect(e.estimate).toBeCloseTo(fit.b3, 9);
    expect(e.standardError).toBeCloseTo(fit.se, 9);
  });

  it('is the difference of the two groups’ log odds ratios, variances added', () => {
    const t = logOddsBeforeAfter(cells.treatedBefore, cells.treatedAfter, 0.1)!;
    const c = logOddsBeforeAfter(cells.controlBefore, cells.controlAfter, 0.1)!;
    const e = logOddsDid(cells, 0.1)!;
    expect(e.estimate).toBeCloseTo(t.estimate - c.estimate, 12);
    expect(e.standardError ** 2).toBeCloseTo(t.standardError ** 2 + c.standardError ** 2, 12);
    // 90% interval: z_{0.95} = 1.6449.
    expect(e.ciHigh - e.estimate).toBeCloseTo(1.644854 * e.standardError, 5);
  });

  it('is 0 when both groups move by the same odds factor, and null when a cell is empty', () => {
    const e = logOddsDid(
      {
        treatedBefore: { signals: 1000, failing: 100 },
        treatedAfter: { signals: 1000, failing: 150 },
        controlBefore: { signals: 5000, failing: 500 },
        controlAfter: { signals: 5000, failing: 750 },
      },
      0.05,
    )!;
    expect(e.estimate).toBeCloseTo(0, 12);
    expect(e.pValue).toBeCloseTo(1, 12);
    expect(logOddsDid({ ...cells, controlAfter: { signals: 0, failing: 0 } }, 0.05)).toBeNull();
  });
});

describe('reweightToAfter', () => {
  it("post-stratifies the before-window to the after-window's hour mix with Kish's effective size", () => {
    // Before: 5% failing at 09:00, 20% at 21:00, equal volumes; after: 20% / 80% of the volume. The
    // reweighted rate is 0.2 · 0.05 + 0.8 · 0.2 = 0.17; n_eff = 1 / (0.2²/500 + 0.8²/500) = 735.29.
    const before = week({ 9: [500, { a: 25 }], 21: [500, { a: 100 }] });
    const after = week({ 9: [200, { a: 10 }], 21: [800, { a: 160 }] });
    const cell = reweightToAfter(before, after, 'a');
    expect(cell.failing / cell.signals).toBeCloseTo(0.17, 12);
    expect(cell.signals).toBeCloseTo(1 / (0.04 / 500 + 0.64 / 500), 9);
  });

  it('returns the plain sums when the mixes already match, pools the types without a type', () => {
    const before = week({ 9: [100, { a: 5, b: 5 }], 10: [300, { a: 30 }] });
    const after = week({ 9: [50, { a: 1 }], 10: [150, { a: 2 }] });
    expect(reweightToAfter(before, after).signals).toBeCloseTo(400, 9);
    expect(reweightToAfter(before, after).failing).toBeCloseTo(40, 9);
    expect(reweightToAfter(before, after, 'b').failing).toBeCloseTo(5, 9);
    expect(reweightToAfter(before, after, 'missing').failing).toBe(0);
  });

  it('drops after-buckets the before-window never saw, and falls back to the sums without overlap', () => {
    const before = week({ 9: [100, { a: 10 }] });
    expect(reweightToAfter(before, week({ 9: [10, {}], 10: [990, {}] }), 'a')).toEqual({
      signals: 100,
      failing: 10,
    });
    expect(reweightToAfter(before, week({ 11: [10, {}] }), 'a')).toEqual({ signals: 100, failing: 10 });
    expect(() => reweightToAfter({ signals: [1, 2], failing: {} }, before)).toThrow(RangeError);
  });
});

describe('volumeShiftTest (Pearson chi-square, 1 df)', () => {
  it('reproduces X² = 25.01 of the aspirin table (Agresti, "Categorical Data Analysis", §3.2)', () => {
    const t = volumeShiftTest({
      treatedBefore: 189,
      treatedAfter: 10845,
      controlBefore: 104,
      controlAfter: 10933,
    })!;
    expect(t.chiSquare).toBeCloseTo(25.01, 2);
    // Second formula: N (ad − bc)² / (row and column totals), and with 1 df p = 2 Φ(−√X²).
    const n = 189 + 10845 + 104 + 10933;
    const closed = (n * (189 * 10933 - 10845 * 104) ** 2) / (11034 * 11037 * 293 * 21778);
    expect(t.chiSquare).toBeCloseTo(closed, 9);
    expect(t.pValue).toBeCloseTo(2 * normalCdf(-Math.sqrt(closed), 0, 1), 9);
    expect(t.expectedTreatedAfter).toBeCloseTo((11034 * 21778) / n, 9);
    expect(t.observedTreatedAfter).toBe(10845);
  });

  it('is 0 when the treated share holds, null for an empty margin, and refuses negative counts', () => {
    const t = volumeShiftTest({
      treatedBefore: 100,
      treatedAfter: 200,
      controlBefore: 1000,
      controlAfter: 2000,
    })!;
    expect(t.chiSquare).toBeCloseTo(0, 12);
    expect(t.pValue).toBeCloseTo(1, 12);
    expect(
      volumeShiftTest({ treatedBefore: 0, treatedAfter: 0, controlBefore: 10, controlAfter: 10 }),
    ).toBeNull();
    expect(() =>
      volumeShiftTest({ treatedBefore: -1, treatedAfter: 0, controlBefore: 10, controlAfter: 10 }),
    ).toThrow(RangeError);
  });
});

describe('holmAdjust', () => {
  it('follows Holm 1979 step-down on the textbook example', () => {
    // The worked example of the encyclopedia article "Holm–Bonferroni method": four hypotheses with
    // p-values 0.01, 0.04, 0.03 and 0.005 at alpha 0.05; H1 and H4 are rejected, H2 and H3 are not.
    // Adjusted by hand (sorted 0.005, 0.01, 0.03, 0.04, m = 4): 4·0.005 = 0.02, 3·0.01 = 0.03,
    // 2·0.03 = 0.06, max(0.06, 1·0.04) = 0.06; returned in the input's order.
    const adjusted = holmAdjust([0.01, 0.04, 0.03, 0.005]);
    [0.03, 0.06, 0.06, 0.02].forEach((p, i) => expect(adjusted[i]).toBeCloseTo(p, 12));
    expect(adjusted.map((p) => p < 0.05)).toEqual([true, false, false, true]);
  });

  it('caps at 1, keeps one p-value and refuses values outside [0, 1]', () => {
    expect(holmAdjust([0.5, 0.9])).toEqual([1, 1]);
    expect(holmAdjust([0.02])).toEqual([0.02]);
    expect(holmAdjust([])).toEqual([]);
    expect(() => holmAdjust([NaN])).toThrow(RangeError);
    expect(() => holmAdjust([1.5])).toThrow(RangeError);
  });
});

describe('alwaysValidRegression (one-sided normal-mixture mSPRT)', () => {
  /** Λ by numerical integration of the likelihood ratio over the half-normal mixture (Simpson). */
  function lambdaByIntegration(theta: number, se: number, tau2: number): number {
    const v = se * se;
    const tau = Math.sqrt(tau2);
    const upper = Math.max(theta, 0) + 12 * tau;
    const steps = 20_000;
    const h = upper / steps;
    const f = (t: number) =>
      Math.exp((t * theta) / v - (t * t) / (2 * v)) *
      (2 / (tau * Math.sqrt(2 * Math.PI))) *
      Math.exp(-(t * t) / (2 * tau2));
    let s = f(0) + f(upper);
    for (let i = 1; i < steps; i++) s += (i % 2 ? 4 : 2) * f(i * h);
    return (s * h) / 3;
  }

  it('equals 1/Λ of the mixture computed by numerical integration', () => {
    for (const [theta, se, tau2] of [
      [0.3, 0.1, 0.1],
      [0.1, 0.05, 0.1],
      [0.5, 0.2, 0.05],
    ] as const) {
      const { alwaysValidPValue } = alwaysValidRegression({ estimate: theta, standardError: se }, 0.05, tau2);
      expect(alwaysValidPValue).toBeCloseTo(Math.min(1, 1 / lambdaByIntegration(theta, se, tau2)), 6);
    }
  });

  it('is never below the fixed-horizon p-value of the same estimate', () => {
    for (const se of [0.005, 0.02, 0.1, 0.5, 2]) {
      for (let z = -6; z <= 12; z += 0.25) {
        for (const tau2 of [0.001, 0.1, 10]) {
          const fixed = Math.min(1, 2 * normalCdf(-Math.abs(z), 0, 1));
          const { alwaysValidPValue } = alwaysValidRegression(
            { estimate: z * se, standardError: se },
            0.05,
            tau2,
          );
          expect(alwaysValidPValue).toBeGreaterThanOrEqual(fixed);
        }
      }
    }
  });

  it('crosses only on harm: never for an improvement however clear, and at alpha', () => {
    expect(alwaysValidRegression({ estimate: -2, standardError: 0.05 }, 0.05).crossed).toBe(false);
    expect(alwaysValidRegression({ estimate: -2, standardError: 0.05 }, 0.05).alwaysValidPValue).toBe(1);
    expect(alwaysValidRegression({ estimate: 0.5, standardError: 0.05 }, 0.05).crossed).toBe(true);
    // A fixed-horizon z of 2.5 (p = 0.012) is not enough evidence for an always-valid test at 0.05.
    const peek = alwaysValidRegression({ estimate: 0.25, standardError: 0.1 }, 0.05);
    expect(peek.crossed).toBe(false);
    expect(peek.alwaysValidPValue).toBeGreaterThan(0.05);
    const p = alwaysValidRegression({ estimate: 0.4, standardError: 0.1 }, 0.05).alwaysValidPValue;
    expect(alwaysValidRegression({ estimate: 0.4, standardError: 0.1 }, p * 1.01).crossed).toBe(true);
    expect(alwaysValidRegression({ estimate: 0.4, standardError: 0.1 }, p * 0.99).crossed).toBe(false);
  });

  it('is 1 without a usable standard error and refuses a bad alpha or mixing variance', () => {
    expect(alwaysValidRegression({ estimate: 1, standardError: 0 }, 0.05)).toEqual({
      alwaysValidPValue: 1,
      crossed: false,
    });
    expect(alwaysValidRegression({ estimate: NaN, standardError: 1 }, 0.05)).toEqual({
      alwaysValidPValue: 1,
      crossed: false,
    });
    expect(() => alwaysValidRegression({ estimate: 1, standardError: 1 }, 1.2)).toThrow(RangeError);
    expect(() => alwaysValidRegression({ estimate: 1, standardError: 1 }, 0.05, 0)).toThrow(RangeError);
  });
});

describe('comparisonWindows', () => {
  const at = new Date('2026-11-25T10:00:00Z'); // a Wednesday

  it('puts the before-window one week earlier for a window shorter than a week, reweighted', () => {
    const w = comparisonWindows(at, 1440);
    expect(w.after).toEqual({ from: at, to: new Date('2026-11-26T10:00:00Z') });
    expect(w.before).toEqual({
      from: new Date('2026-11-18T10:00:00Z'),
      to: new Date('2026-11-19T10:00:00Z'),
    });
    expect(w.placeboAfter).toEqual(w.before);
    expect(w.placeboBefore).toEqual({
      from: new Date('2026-11-11T10:00:00Z'),
      to: new Date('2026-11-12T10:00:00Z'),
    });
    expect(w).toMatchObject({ periodMinutes: 10080, wholeWeeks: false, reweighted: true });
  });

  it('makes whole weeks adjacent and unweighted, and longer windows whole weeks apart', () => {
    const w = comparisonWindows(at, 10080);
    expect(w.before).toEqual({ from: new Date('2026-11-18T10:00:00Z'), to: at });
    expect(w).toMatchObject({ wholeWeeks: true, reweighted: false });
    const two = comparisonWindows(at, 10081);
    expect(two.periodMinutes).toBe(20160);
    expect(two.before.to.getTime()).toBeLessThanOrEqual(at.getTime());
    expect(() => comparisonWindows(at, 0)).toThrow(RangeError);
    expect(() => comparisonWindows(at, Number.NaN)).toThrow(RangeError);
  });
});

describe('decideVerdict', () => {
  it("uses the deployment's alpha: p ≈ 0.03 is inconclusive at 0.01 and 0.025, regressed at 0.03 and 0.05", () => {
    const near = (alpha: number) =>
      decideVerdict(
        input({
          alpha,
          treated: group(one(2000, 200), one(2000, 200), one(2000, 246)),
          control: group(one(20000, 2000), one(20000, 2000), one(20000, 2000)),
        }),
      );
    expect(near(0.05).effect!.pValue).toBeCloseTo(0.0285, 4);
    expect(near(0.01)).toMatchObject({ verdict: 'inconclusive', reason: 'not_significant' });
    expect(near(0.025)).toMatchObject({ verdict: 'inconclusive', reason: 'not_significant' });
    expect(near(0.03)).toMatchObject({ verdict: 'regressed', reason: 'significant' });
    expect(near(0.05)).toMatchObject({ verdict: 'regressed', reason: 'significant', label: 'observational' });
  });

  it('drift in every context and no effect: inconclusive, while the naive test calls it significant', () => {
    const d = decideVerdict(
      input({
        treated: group(one(1000, 100), one(1000, 100), one(1000, 150)),
        control: group(one(5000, 500), one(5000, 500), one(5000, 750)),
      }),
    );
    expect(d).toMatchObject({
      verdict: 'inconclusive',
      reason: 'not_significant',
      method: 'did',
      label: 'observational',
    });
    expect(d.effect!.estimate).toBeCloseTo(0, 12);
    expect(d.naive.pValue!).toBeLessThan(0.01);
    expect(d.monitor).toBeNull();
  });

  it('an effect in the treated context only: regressed with the interval above 0; a fall: improved', () => {
    const worse = decideVerdict(input({ treated: group(one(1000, 100), one(1000, 100), one(1000, 200)) }));
    expect(worse).toMatchObject({ verdict: 'regressed', reason: 'significant' });
    expect(worse.effect!.ciLow).toBeGreaterThan(0);
    expect(worse.effect!.oddsRatio).toBeCloseTo(Math.exp(worse.effect!.estimate), 12);
    const better = decideVerdict(input({ treated: group(one(1000, 100), one(1000, 100), one(1000, 50)) }));
    expect(better).toMatchObject({ verdict: 'improved', reason: 'significant' });
    expect(better.effect!.ciHigh).toBeLessThan(0);
  });

  it('without controls: before/after, labelled uncontrolled, no traffic check', () => {
    const d = decideVerdict(
      input({ control: null, treated: group(one(1000, 100), one(1000, 100), one(1000, 200)) }),
    );
    expect(d).toMatchObject({
      verdict: 'regressed',
      method: 'before_after',
      label: 'uncontrolled',
      traffic: null,
    });
    expect(d.effect!.estimate).toBeCloseTo(
      logOddsBeforeAfter({ signals: 1000, failing: 100 }, { signals: 1000, failing: 200 }, 0.05)!.estimate,
      12,
    );
  });

  it('a volume shift in the treated context: unreliable, inconclusive, figures kept', () => {
    const d = decideVerdict(input({ treated: group(one(1000, 100), one(1000, 100), one(2000, 400)) }));
    expect(d).toMatchObject({
      verdict: 'inconclusive',
      reason: 'unreliable',
      label: 'unreliable: volume_shift',
    });
    expect(d.traffic).toMatchObject({ significant: true, observedTreatedAfter: 2000 });
    expect(d.traffic!.expectedTreatedAfter).toBeCloseTo((3000 * 7000) / 13000, 9);
    expect(d.effect!.pValue).toBeLessThan(0.05);
  });

  it('a rising pre-period: the placebo is significant and the verdict unreliable: pre_trend', () => {
    const d = decideVerdict(input({ treated: group(one(1000, 50), one(1000, 100), one(1000, 200)) }));
    expect(d).toMatchObject({
      verdict: 'inconclusive',
      reason: 'unreliable',
      label: 'unreliable: pre_trend',
    });
    expect(d.placebo).toMatchObject({ significant: true });
    expect(d.placebo!.estimate).toBeGreaterThan(0);
    // A placebo whose windows hold too few signals is not run.
    expect(
      decideVerdict(input({ treated: group(one(10, 5), one(1000, 100), one(1000, 200)) })).placebo,
    ).toBeNull();
  });

  it('too few signals in a used cell: inconclusive, too_few_signals', () => {
    const d = decideVerdict(
      input({ minSignals: 2000, treated: group(one(3000, 100), one(3000, 100), one(1000, 300)) }),
    );
    expect(d).toMatchObject({ verdict: 'inconclusive', reason: 'too_few_signals' });
    expect(decideVerdict(input({ control: group(one(5000, 500), one(20, 2), one(5000, 500)) })).reason).toBe(
      'too_few_signals',
    );
  });

  it('reweights the before-window to the after-window’s hour mix when asked', () => {
    // The treated context's traffic moves to its worse hour; the rate within each hour is unchanged.
    const before = week({ 9: [500, { payment_failed: 25 }], 21: [500, { payment_failed: 100 }] });
    const after = week({ 9: [200, { payment_failed: 10 }], 21: [800, { payment_failed: 160 }] });
    const treated = group(before, before, after);
    const plain = decideVerdict(input({ treated }));
    const matched = decideVerdict(input({ treated, reweighted: true }));
    expect(plain.verdict).toBe('regressed');
    expect(matched.verdict).toBe('inconclusive');
    expect(matched.effect!.estimate).toBeCloseTo(0, 9);
  });

  it('Holm-adjusts the overall and the per-type tests together', () => {
    const byType = (n: number, a: number, b: number) => week({ 9: [n, { a, b }] });
    const d = decideVerdict(
      input({
        types: ['a', 'b'],
        treated: group(byType(2000, 100, 100), byType(2000, 100, 100), byType(2000, 150, 100)),
        control: group(byType(8000, 400, 400), byType(8000, 400, 400), byType(8000, 400, 400)),
      }),
    );
    const raw = [d.effect!.pValue, d.perType[0]!.effect!.pValue, d.perType[1]!.effect!.pValue];
    const holm = holmAdjust(raw);
    expect(d.effect!.adjustedPValue).toBeCloseTo(holm[0]!, 12);
    expect(d.perType.map((t) => t.adjustedPValue)).toEqual([holm[1], holm[2]]);
    expect(d.perType[0]!.effect!.estimate).toBeGreaterThan(0);
    expect(d.perType[1]!.effect!.estimate).toBeCloseTo(0, 12);
    // The overall effect pools the covered types: 250 of 2000 against 200 of 2000.
    expect(d.naive.after).toEqual({ signals: 2000, failing: 250 });
  });

  it('naive is the pooled two-proportion z-test (verification.ts twoProportionZTest) on the treated counts', () => {
    const d = decideVerdict(input({ treated: group(one(1000, 100), one(1000, 100), one(900, 120)) }));
    const old = twoProportionZTest({ signals: 1000, negative: 100 }, { signals: 900, negative: 120 })!;
    expect(d.naive.z).toBeCloseTo(old.z, 12);
    expect(d.naive.pValue).toBeCloseTo(old.pValue, 12);
  });

  it('while provisional: inconclusive, and only the always-valid monitor reports a regression', () => {
    const harm = decideVerdict(
      input({ provisional: true, treated: group(one(1000, 100), one(1000, 100), one(1000, 300)) }),
    );
    expect(harm).toMatchObject({
      verdict: 'inconclusive',
      reason: 'provisional',
      monitor: { regressionDetected: true },
    });
    expect(harm.monitor!.alwaysValidPValue).toBeGreaterThanOrEqual(harm.effect!.pValue);
    // Significant at the fixed horizon (p ≈ 0.02) but not enough for the monitor.
    const peek = decideVerdict(
      input({ provisional: true, treated: group(one(1000, 100), one(1000, 100), one(1000, 135)) }),
    );
    expect(peek.effect!.pValue).toBeLessThan(0.05);
    expect(peek.monitor).toMatchObject({ regressionDetected: false });
    const better = decideVerdict(
      input({ provisional: true, treated: group(one(1000, 100), one(1000, 100), one(1000, 10)) }),
    );
    expect(better.monitor).toEqual({ alwaysValidPValue: 1, regressionDetected: false });
    const early = decideVerdict(
      input({ provisional: true, treated: group(one(1000, 100), one(1000, 100), one(5, 5)) }),
    );
    expect(early).toMatchObject({
      reason: 'too_few_signals',
      monitor: { alwaysValidPValue: 1, regressionDetected: false },
    });
  });

  it('refuses an alpha outside (0, 1), no types, or arrays that are not 168 long', () => {
    expect(() => decideVerdict(input({ alpha: 0 }))).toThrow(RangeError);
    expect(() => decideVerdict(input({ types: [] }))).toThrow(RangeError);
    const short = { signals: [1], failing: {} };
    expect(() => decideVerdict(input({ treated: group(short, short, short) }))).toThrow(RangeError);
  });

  it('never returns NaN or an infinity, whatever the counts (zero cells, empty windows)', () => {
    const counts = fc
      .array(
        fc.tuple(fc.integer({ min: 0, max: 167 }), fc.integer({ min: 0, max: 60 }), fc.nat(60), fc.nat(60)),
        {
          maxLength: 4,
        },
      )
      .map((cells) => {
        const spec: Record<number, [number, Record<string, number>]> = {};
        for (const [bucket, n, a, b] of cells)
          spec[bucket] = [n, { a: Math.min(a, n), b: Math.min(b, n - Math.min(a, n)) }];
        return week(spec);
      });
    const groupArb = fc.tuple(counts, counts, counts).map(([p, b, a]) => group(p, b, a));
    fc.assert(
      fc.property(
        groupArb,
        fc.option(groupArb, { nil: null }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom(['a'], ['a', 'b'], ['b', 'missing']),
        (treated, control, reweighted, provisional, types) => {
          const d = decideVerdict({
            treated,
            control,
            types,
            reweighted,
            provisional,
            alpha: 0.05,
            minSignals: 0,
          });
          expect(numbersIn(d).filter((x) => !Number.isFinite(x))).toEqual([]);
          if (d.effect) expect(d.effect.pValue).toBeGreaterThanOrEqual(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the worked example of the verdicts page', () => {
  // services/signal-feedback/docs/verdicts.md, "Worked example": every figure it prints must be what the code computes.
  const page = readFileSync(join(__dirname, '..', 'docs', 'verdicts.md'), 'utf8');
  // Whitespace normalised: reflowing the paragraphs must not break the test.
  const section = page
    .slice(page.indexOf('## Worked example'), page.indexOf('## What the simulation shows'))
    .replace(/\s+/g, ' ');
  const fixed = (x: number, digits = 4) => x.toFixed(digits).replace('-', '−');
  const significant = (x: number, digits = 4) => Number(x.toPrecision(digits)).toString();
  const counts = {
    treated: group(one(3900, 190), one(4100, 205), one(4050, 284)),
    control: group(one(20000, 1000), one(20400, 1020), one(20200, 1212)),
  };

  it('prints the figures of decideVerdict', () => {
    const d = decideVerdict(input({ ...counts }));
    const treated = logOddsBeforeAfter(
      { signals: 4100, failing: 205 },
      { signals: 4050, failing: 284 },
      0.05,
    )!;
    const control = logOddsBeforeAfter(
      { signals: 20400, failing: 1020 },
      { signals: 20200, failing: 1212 },
      0.05,
    )!;
    const e = d.effect!;
    const expected = [
      `z = ${fixed(d.naive.z!)}, p = ${significant(d.naive.pValue!)}`,
      `= ${fixed(treated.estimate)}. Control:`,
      `= ${fixed(control.estimate)}.`,
      `θ = ${fixed(treated.estimate)} − ${fixed(control.estimate)} = ${fixed(e.estimate)} (odds ratio ${significant(e.oddsRatio)})`,
      `= ${fixed(e.standardError)}, 95% interval (${fixed(e.ciLow)}, ${fixed(e.ciHigh)}), z = ${fixed(e.z)},`,
      `p = ${fixed(e.pValue)}.`,
      `**Placebo**: ${fixed(d.placebo!.estimate)}, p = ${fixed(d.placebo!.pValue)}`,
      `χ² = ${fixed(d.traffic!.chiSquare)}, p = ${fixed(d.traffic!.pValue)}`,
      `expected ${d.traffic!.expectedTreatedAfter.toLocaleString('en-US', { maximumFractionDigits: 1 })} signals, observed ${d.traffic!.observedTreatedAfter.toLocaleString('en-US')}`,
      `\`${d.verdict}\` (\`${d.reason}\`), label \`${d.label}\``,
    ];
    for (const text of expected) expect(section).toContain(text);
    expect(d).toMatchObject({ verdict: 'inconclusive', reason: 'not_significant', label: 'observational' });
  });

  it('prints the regression variant and its monitor', () => {
    const worse = { ...counts, treated: group(one(3900, 190), one(4100, 205), one(4050, 360)) };
    const d = decideVerdict(input(worse));
    const e = d.effect!;
    expect(d.verdict).toBe('regressed');
    expect(section).toContain(
      `θ = ${fixed(e.estimate)}, 95% interval (${fixed(e.ciLow)}, ${fixed(e.ciHigh)}), p = ${fixed(e.pValue, 7)}: \`regressed\``,
    );
    const open = decideVerdict(input({ ...worse, provisional: true }));
    expect(open.monitor!.regressionDetected).toBe(true);
    expect(section).toContain(
      `always-valid p-value would be ${significant(open.monitor!.alwaysValidPValue)}`,
    );
  });
});
