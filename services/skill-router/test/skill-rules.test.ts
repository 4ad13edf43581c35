import { statusAfterHealthCheck } from '../src/domain/health';
import { COUNTED_REPORT_KEY_AGE_MS, reportCounts, reportWeight } from '../src/domain/reports';
import { reliabilityEstimate, withLiveMetrics } from '../src/domain/skill-metrics';

describe('statusAfterHealthCheck', () => {
  const thresholds = { failuresToSuspend: 3, successesToResume: 2 };
  const runs = (consecutiveFailures: number, consecutiveSuccesses: number) => ({
    consecutiveFailures,
    consecutiveSuccesses,
  });

  it('When an active skill fails fewer times in a row than the threshold, then it stays active; at the threshold it is suspended', () => {
    expect(statusAfterHealthCheck('active', false, runs(2, 0), thresholds)).toBe('active');
    expect(statusAfterHealthCheck('active', false, runs(3, 0), thresholds)).toBe('suspended');
  });

  it('When a suspended skill succeeds enough times in a row, then it is active again, not before', () => {
    expect(statusAfterHealthCheck('suspended', true, runs(0, 1), thresholds)).toBe('suspended');
    expect(statusAfterHealthCheck('suspended', true, runs(0, 2), thresholds)).toBe('active');
  });

  it('When the check goes the other way (an active skill succeeds, a suspended one fails), then the status stays', () => {
    expect(statusAfterHealthCheck('active', true, runs(5, 5), thresholds)).toBe('active');
    expect(statusAfterHealthCheck('suspended', false, runs(5, 5), thresholds)).toBe('suspended');
  });
});

describe('reportWeight', () => {
  const now = Date.parse('2025-06-02T12:00:00Z');
  const daysAgo = (d: number) => new Date(now - d * 86_400_000);
  const key = (ageDays: number, routedDays: number) => ({
    createdAt: daysAgo(ageDays),
    firstRoutedAt: routedDays > 0 ? daysAgo(ageDays) : null,
    routedDays,
    cohort: 'c',
  });

  it('When the key is exactly a day old and has routed on one day, then its report counts with (1/14)·(1/7)', () => {
    expect(reportWeight(key(1, 1), now)).toBeCloseTo(1 / 14 / 7, 12);
    expect(reportCounts(key(1, 1), now)).toBe(true);
  });

  it('When the key is younger than a day, never routed a call, or is gone, then its report weighs 0', () => {
    expect(
      reportWeight({ ...key(1, 1), createdAt: new Date(now - COUNTED_REPORT_KEY_AGE_MS + 1) }, now),
    ).toBe(0);
    expect(reportWeight(key(30, 0), now)).toBe(0);
    expect(reportWeight(null, now)).toBe(0);
    expect(reportCounts(key(0.5, 3), now)).toBe(false);
  });

  it('When the key grows older and routes on more days, then the weight grows to 1 at 14 days and 7 routed days, not beyond', () => {
    const weights = [key(2, 1), key(7, 1), key(7, 4), key(14, 7)].map((k) => reportWeight(k, now));
    for (let i = 1; i < weights.length; i++) expect(weights[i]).toBeGreaterThan(weights[i - 1] as number);
    expect(weights[3]).toBe(1);
    expect(reportWeight(key(400, 90), now)).toBe(1);
  });
});

describe('reliabilityEstimate', () => {
  it('When nothing is observed, then it is the prior mean 0.9', () => {
    expect(reliabilityEstimate(0, 0)).toBe(0.9);
  });

  it('When one failure is observed, then the estimate moves by a sixth of the way, not to 0', () => {
    expect(reliabilityEstimate(0, 1)).toBeCloseTo(4.5 / 6, 12);
  });

  it('When many observations agree, then the estimate approaches their rate', () => {
    expect(reliabilityEstimate(1000, 1000)).toBeGreaterThan(0.999);
    expect(reliabilityEstimate(0, 1000)).toBeLessThan(0.005);
  });

  it('When the sums are nonsense (negative, NaN, more successes than observations), then the estimate stays in [0, 1]', () => {
    expect(reliabilityEstimate(-5, -5)).toBe(0.9);
    expect(reliabilityEstimate(Number.NaN, 3)).toBeCloseTo(4.5 / 8, 12);
    expect(reliabilityEstimate(10, 2)).toBeCloseTo(6.5 / 7, 12);
  });
});

describe('withLiveMetrics', () => {
  const stored = {
    successRate24h: 0.5,
    avgLatencyMs: 200,
    calls30d: 1,
    ratingSum: 4,
    ratingCount: 1,
    popularity: 0.3,
  };
  const window = { checks24h: 0, calls30d: 3, ratingSum: 9, ratingCount: 2 };

  it('When the window has observations, then the reliability estimate and latency replace the stored ones; popularity stays', () => {
    expect(
      withLiveMetrics(stored, {
        ...window,
        observations24h: 4,
        successes24h: 3,
        weightedObservations24h: 4,
        weightedSuccesses24h: 3,
        avgLatencyMs: 50,
      }),
    ).toEqual({
      successRate24h: (4.5 + 3) / (5 + 4),
      avgLatencyMs: 50,
      calls30d: 3,
      ratingSum: 9,
      ratingCount: 2,
      popularity: 0.3,
    });
  });

  it('When nothing was observed in 24 hours, then the estimate is back at the prior and the last known latency stays', () => {
    expect(
      withLiveMetrics(stored, {
        ...window,
        observations24h: 0,
        successes24h: 0,
        weightedObservations24h: 0,
        weightedSuccesses24h: 0,
        avgLatencyMs: null,
      }),
    ).toMatchObject({ successRate24h: 0.9, avgLatencyMs: 200, calls30d: 3 });
  });
});
