import { z } from 'zod';
import { hashApiKey, hashesEqual } from '@repo/service-kit';
import { signalFeedbackKeys } from '../src/domain/api-keys';
import {
  buildEvidence,
  evidenceHash,
  priorityScore,
  summarizeEvidence,
  textFromEvidence,
} from '../src/domain/evidence';
import { monthKey, nextMonthStart, PLAN_LIMITS } from '../src/domain/plans';
import { ALLOWED_TRANSITIONS, canTransition } from '../src/domain/proposal-status';
import { parseSignalBatch } from '../src/domain/ingest';
import { classify, routeSignals } from '../src/domain/signals';
import { SignalInput } from '../src/schemas/signals';
import type { WindowStats } from '../src/data/analysis';

const stats = (negative: number, positive: number, neutral = 0, failing = 'payment_failed'): WindowStats => ({
  total: negative + positive + neutral,
  negative,
  positive,
  neutral,
  byType: [
    ...(negative ? [{ type: failing, sentiment: 'negative' as const, count: negative }] : []),
    ...(positive ? [{ type: 'done', sentiment: 'positive' as const, count: positive }] : []),
    ...(neutral ? [{ type: 'view', sentiment: 'neutral' as const, count: neutral }] : []),
  ],
});

describe('API keys', () => {
  test('When keys are generated, then they are spk_ + base58 of 32 bytes, distinct, and hash-compared', () => {
    const a = signalFeedbackKeys.generate();
    const b = signalFeedbackKeys.generate();
    expect(a.key).toMatch(/^spk_[1-9A-HJ-NP-Za-km-z]{43,44}$/);
    expect(a.key).not.toBe(b.key);
    expect(a.displayPrefix).toBe(a.key.slice(0, 12));
    expect(signalFeedbackKeys.looksLike(a.key)).toBe(true);
    expect(signalFeedbackKeys.looksLike('spk_0OIl' + 'a'.repeat(40))).toBe(false);
    expect(signalFeedbackKeys.looksLike('sk_router_' + 'a'.repeat(44))).toBe(false);
    expect(hashesEqual(a.hash, hashApiKey(a.key))).toBe(true);
    expect(hashesEqual(a.hash, b.hash)).toBe(false);
    expect(hashesEqual(a.hash, '')).toBe(false);
  });
});

describe('Plans', () => {
  test('When the plan table is read, then the limits match it', () => {
    expect(PLAN_LIMITS.free).toMatchObject({ signalsPerMonth: 500, proposalsPerMonth: 3, products: 1 });
    expect(PLAN_LIMITS.builder).toMatchObject({ signalsPerMonth: 5000, proposalsPerMonth: 10, products: 1 });
    expect(PLAN_LIMITS.growth).toMatchObject({
      signalsPerMonth: 50000,
      proposalsPerMonth: null,
      products: 5,
    });
    expect(PLAN_LIMITS.scale).toMatchObject({
      signalsPerMonth: 500000,
      proposalsPerMonth: null,
      products: null,
    });
  });

  test('When a month key is computed at a month boundary, then it is the UTC month', () => {
    expect(monthKey(new Date('2026-02-28T23:59:59.999Z'))).toBe('2026-02-01');
    expect(monthKey(new Date('2026-03-01T00:00:00Z'))).toBe('2026-03-01');
    expect(nextMonthStart(new Date('2026-12-15T10:00:00Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });
});

describe('Classification and routing', () => {
  const ctx = {
    id: '11111111-1111-4111-8111-111111111111',
    positiveSignals: ['ok'],
    negativeSignals: ['fail'],
  };
  test('When a type is in a list, then it is classed accordingly; otherwise neutral', () => {
    expect(classify('ok', ctx)).toBe('positive');
    expect(classify('fail', ctx)).toBe('negative');
    expect(classify('other', ctx)).toBe('neutral');
    expect(classify('fail', undefined)).toBe('neutral');
  });

  test("When a context_id is not the product's, then routing throws invalid_request naming the signal", () => {
    expect(() =>
      routeSignals([{ type: 'x' }, { type: 'y', context_id: '22222222-2222-4222-8222-222222222222' }], [ctx]),
    ).toThrow(
      expect.objectContaining({
        code: 'invalid_request',
        details: {
          issues: [{ path: 'body.1.context_id', code: 'invalid_value', message: expect.any(String) }],
        },
      }),
    );
    expect(routeSignals([{ type: 'fail', context_id: ctx.id.toUpperCase() }], [ctx])[0]).toMatchObject({
      contextId: ctx.id,
      sentiment: 'negative',
    });
  });
});

describe('Signal payloads', () => {
  /** A payload `levels` deep, objects and arrays alternating below the top-level object. */
  const nested = (levels: number): Record<string, unknown> => {
    let value: unknown = 'leaf';
    for (let level = levels; level > 1; level--) value = level % 2 ? [value] : { k: value };
    return { k: value };
  };
  test.each([
    ['the schema', SignalInput],
    ['its compiled parser', z.compile(SignalInput)],
  ])('When %s reads a payload 64 levels deep, then it is accepted; 65 levels, then refused', (_, schema) => {
    const payload = nested(64);
    expect(parseSignalBatch({ type: 'deep', payload }, schema, 10)).toEqual([{ type: 'deep', payload }]);
    expect(() => parseSignalBatch([{ type: 'deep', payload: nested(65) }], schema, 10)).toThrow(
      expect.objectContaining({
        code: 'invalid_request',
        details: {
          issues: [
            { path: 'body.0.payload', code: 'custom', message: 'must not be nested deeper than 64 levels' },
          ],
        },
      }),
    );
  });
});

describe('Evidence', () => {
  test('When the failure rate rises against the previous window, then the trend is worsening and the score higher', () => {
    const stable = buildEvidence(stats(5, 5), stats(5, 5), []);
    const worse = buildEvidence(stats(8, 2), stats(2, 8), []);
    expect(stable.trend).toBe('stable');
    expect(worse.trend).toBe('worsening');
    expect(worse.negative_rate_delta).toBe(0.6);
    expect(priorityScore(worse)).toBeGreaterThan(priorityScore(stable));
    expect(buildEvidence(stats(1, 9), stats(5, 5), []).trend).toBe('improving');
    expect(buildEvidence(stats(1, 9), stats(0, 0), []).trend).toBe('new');
  });

  test('When scores are computed, then they stay within 0..100 and grow with the negative rate', () => {
    const all = buildEvidence(stats(10_000, 0), stats(0, 10_000), []);
    expect(priorityScore(all)).toBeLessThanOrEqual(100);
    expect(priorityScore(buildEvidence(stats(0, 5), stats(0, 0), []))).toBeGreaterThanOrEqual(0);
    expect(priorityScore(buildEvidence(stats(6, 4), stats(0, 0), []))).toBeGreaterThan(
      priorityScore(buildEvidence(stats(3, 7), stats(0, 0), [])),
    );
  });

  test('When the picture is the same with a few more signals, then the hash is the same; when the failing type changes, then it differs', () => {
    const a = buildEvidence(stats(6, 4), stats(0, 0), [
      { key: 'code', value: 'declined', negative: 5, other: 0 },
    ]);
    const b = buildEvidence(stats(7, 5), stats(0, 0), [
      { key: 'code', value: 'declined', negative: 6, other: 0 },
    ]);
    const c = buildEvidence(stats(7, 5, 0, 'timeout'), stats(0, 0), [
      { key: 'code', value: 'declined', negative: 6, other: 0 },
    ]);
    expect(evidenceHash(a)).toBe(evidenceHash(b));
    expect(evidenceHash(a)).not.toBe(evidenceHash(c));
  });

  test('When a value is as common in successes as in failures, then it does not mark the failures', () => {
    const e = buildEvidence(stats(8, 8), stats(0, 0), [
      { key: 'provider', value: 'stripe', negative: 8, other: 8 },
      { key: 'error_code', value: 'card_declined', negative: 6, other: 0 },
      { key: 'error_code', value: 'timeout', negative: 2, other: 0 },
      { key: 'device', value: 'ios', negative: 5, other: 1 },
    ]);
    expect(e.recurring_values.map((v) => `${v.key}=${v.value}`)).toEqual([
      'error_code=card_declined',
      'device=ios',
      'error_code=timeout',
    ]);
    expect(e.recurring_values[0]).toEqual({
      key: 'error_code',
      value: 'card_declined',
      count: 6,
      share: 0.75,
      share_elsewhere: 0,
    });
  });

  test('When the text is written from the evidence, then it names the failing type and recurring values', () => {
    const e = buildEvidence(stats(6, 4), stats(0, 0), [
      { key: 'error_code', value: 'card_declined', negative: 5, other: 0 },
    ]);
    const t = textFromEvidence({ name: 'Checkout', content: 'Pay' }, e);
    expect(t.diagnosis).toContain('payment_failed');
    expect(t.proposed_change).toContain('error_code is card_declined');
    expect(summarizeEvidence(e)).toContain('6 negative (60%)');
    const calm = textFromEvidence(
      { name: 'Checkout', content: 'Pay' },
      buildEvidence(stats(0, 6), stats(0, 0), []),
    );
    expect(calm.diagnosis).toContain('no failure signals');
  });
});

describe('Proposal transitions', () => {
  test('When the table is read, then only pending and deferred can move and approved/rejected are final', () => {
    expect(canTransition('pending', 'deferred')).toBe(true);
    expect(canTransition('deferred', 'pending')).toBe(true);
    expect(canTransition('pending', 'pending')).toBe(false);
    expect(canTransition('deferred', 'deferred')).toBe(false);
    expect(ALLOWED_TRANSITIONS.approved).toEqual([]);
    expect(ALLOWED_TRANSITIONS.rejected).toEqual([]);
  });
});
