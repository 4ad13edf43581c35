import { statusAfterHealthCheck } from '../src/domain/health';
import { COUNTED_REPORT_KEY_AGE_MS, reportCounts } from '../src/domain/reports';
import { withLiveMetrics } from '../src/domain/skill-metrics';

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

describe('reportCounts', () => {
  const now = Date.parse('2025-06-02T12:00:00Z');
  const dayOld = new Date(now - COUNTED_REPORT_KEY_AGE_MS);

  it('When the key is exactly a day old and has routed a call, then its report counts', () => {
    expect(reportCounts({ createdAt: dayOld, firstRoutedAt: dayOld }, now)).toBe(true);
  });

  it('When the key is younger than a day, never routed a call, or is gone, then its report does not count', () => {
    const younger = new Date(dayOld.getTime() + 1);
    expect(reportCounts({ createdAt: younger, firstRoutedAt: younger }, now)).toBe(false);
    expect(reportCounts({ createdAt: dayOld, firstRoutedAt: null }, now)).toBe(false);
    expect(reportCounts(null, now)).toBe(false);
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

  it('When the window has observations, then they replace the success rate and latency; popularity stays', () => {
    expect(
      withLiveMetrics(stored, { ...window, observations24h: 4, successes24h: 3, avgLatencyMs: 50 }),
    ).toEqual({
      successRate24h: 0.75,
      avgLatencyMs: 50,
      calls30d: 3,
      ratingSum: 9,
      ratingCount: 2,
      popularity: 0.3,
    });
  });

  it('When nothing was observed in 24 hours, then the last known success rate and latency stay', () => {
    expect(
      withLiveMetrics(stored, { ...window, observations24h: 0, successes24h: 0, avgLatencyMs: null }),
    ).toMatchObject({ successRate24h: 0.5, avgLatencyMs: 200, calls30d: 3 });
  });
});
