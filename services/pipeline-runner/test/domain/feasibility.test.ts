import fc from 'fast-check';
import { Budget, Profile, RevenueThreshold, Timeline, type SessionConfig } from '@repo/schemas';
import {
  BUDGET_USD,
  CAPACITY_FACTOR,
  REVENUE_THRESHOLD_USD,
  STRETCH_BUDGET_FACTOR,
  STRETCH_TIMELINE_FACTOR,
  TIMELINE_WEEKS,
  assessFeasibility,
  classify,
  tagsFor,
} from '../../src/domain/feasibility';

const config = fc.record({
  profile: fc.constantFrom(...Profile.options),
  budget: fc.constantFrom(...Budget.options),
  timeline: fc.constantFrom(...Timeline.options),
  revenue_threshold: fc.constantFrom(...RevenueThreshold.options),
  founder_signal: fc.constant(null),
}) as fc.Arbitrary<SessionConfig>;
const estimates = fc.record({
  estimated_build_cost_usd: fc.double({ min: 0, max: 5_000_000, noNaN: true }),
  estimated_build_weeks: fc.double({ min: 0.1, max: 520, noNaN: true }),
  projected_annual_revenue_usd: fc.double({ min: 0, max: 50_000_000, noNaN: true }),
});
const RANK = { LEAN_FIT: 0, STRETCH: 1, NOT_LEAN: 2 } as const;
const base: SessionConfig = {
  profile: 'Small Team (2-3)',
  budget: '$10K',
  timeline: '4-8 weeks',
  revenue_threshold: '$100K/year',
  founder_signal: null,
};

describe('lean feasibility', () => {
  it('When the enums are read as numbers, then every member has a value and larger members are larger', () => {
    const ascending = (values: number[]) => values.every((v, i) => i === 0 || v > values[i - 1]!);
    expect(ascending(Budget.options.map((b) => BUDGET_USD[b]))).toBe(true);
    expect(ascending(Timeline.options.map((t) => TIMELINE_WEEKS[t]))).toBe(true);
    expect(ascending(RevenueThreshold.options.map((r) => REVENUE_THRESHOLD_USD[r]))).toBe(true);
    expect(ascending(Profile.options.map((p) => CAPACITY_FACTOR[p]))).toBe(true);
  });

  it('When cost and time are within budget and timeline, then LEAN_FIT; within 2x budget and 1.5x time, STRETCH; else NOT_LEAN (band edges included)', () => {
    expect(classify(1, 1)).toBe('LEAN_FIT');
    expect(classify(0, 0)).toBe('LEAN_FIT');
    expect(classify(1.0001, 1)).toBe('STRETCH');
    expect(classify(1, 1.0001)).toBe('STRETCH');
    expect(classify(STRETCH_BUDGET_FACTOR, STRETCH_TIMELINE_FACTOR)).toBe('STRETCH');
    expect(classify(STRETCH_BUDGET_FACTOR + 0.001, 1)).toBe('NOT_LEAN');
    expect(classify(1, STRETCH_TIMELINE_FACTOR + 0.001)).toBe('NOT_LEAN');
  });

  it('When the default config meets typical estimates, then the documented examples hold', () => {
    expect(
      assessFeasibility(
        { estimated_build_cost_usd: 10_000, estimated_build_weeks: 8, projected_annual_revenue_usd: 100_000 },
        base,
      ),
    ).toMatchObject({
      lean_feasibility: 'LEAN_FIT',
      low_roi: false,
      cost_ratio: 1,
      time_ratio: 1,
    });
    expect(
      assessFeasibility(
        { estimated_build_cost_usd: 20_000, estimated_build_weeks: 12, projected_annual_revenue_usd: 99_999 },
        base,
      ),
    ).toMatchObject({
      lean_feasibility: 'STRETCH',
      low_roi: true,
    });
    expect(
      assessFeasibility(
        { estimated_build_cost_usd: 20_001, estimated_build_weeks: 1, projected_annual_revenue_usd: 0 },
        base,
      ).lean_feasibility,
    ).toBe('NOT_LEAN');
  });

  it('When the budget is larger, then the band is never worse for the same estimates', () => {
    fc.assert(
      fc.property(estimates, config, fc.constantFrom(...Budget.options), (e, c, other) => {
        const bigger = BUDGET_USD[other] >= BUDGET_USD[c.budget] ? other : c.budget;
        expect(RANK[assessFeasibility(e, { ...c, budget: bigger }).lean_feasibility]).toBeLessThanOrEqual(
          RANK[assessFeasibility(e, c).lean_feasibility],
        );
      }),
    );
  });

  it('When the team has more capacity or the timeline is longer, then the band is never worse', () => {
    fc.assert(
      fc.property(
        estimates,
        config,
        fc.constantFrom(...Profile.options),
        fc.constantFrom(...Timeline.options),
        (e, c, profile, timeline) => {
          const before = RANK[assessFeasibility(e, c).lean_feasibility];
          if (CAPACITY_FACTOR[profile] >= CAPACITY_FACTOR[c.profile])
            expect(RANK[assessFeasibility(e, { ...c, profile }).lean_feasibility]).toBeLessThanOrEqual(
              before,
            );
          if (TIMELINE_WEEKS[timeline] >= TIMELINE_WEEKS[c.timeline])
            expect(RANK[assessFeasibility(e, { ...c, timeline }).lean_feasibility]).toBeLessThanOrEqual(
              before,
            );
        },
      ),
    );
  });

  it('When the cost or the build time grows, then the band is never better', () => {
    fc.assert(
      fc.property(estimates, config, fc.double({ min: 1, max: 10, noNaN: true }), (e, c, factor) => {
        const before = RANK[assessFeasibility(e, c).lean_feasibility];
        expect(
          RANK[
            assessFeasibility({ ...e, estimated_build_cost_usd: e.estimated_build_cost_usd * factor }, c)
              .lean_feasibility
          ],
        ).toBeGreaterThanOrEqual(before);
        expect(
          RANK[
            assessFeasibility({ ...e, estimated_build_weeks: e.estimated_build_weeks * factor }, c)
              .lean_feasibility
          ],
        ).toBeGreaterThanOrEqual(before);
      }),
    );
  });

  it('When any estimates meet any config, then the assessment matches its definition', () => {
    fc.assert(
      fc.property(estimates, config, (e, c) => {
        const a = assessFeasibility(e, c);
        const costRatio = e.estimated_build_cost_usd / BUDGET_USD[c.budget];
        const timeRatio = e.estimated_build_weeks / CAPACITY_FACTOR[c.profile] / TIMELINE_WEEKS[c.timeline];
        expect(a.lean_feasibility).toBe(classify(costRatio, timeRatio));
        expect(a.low_roi).toBe(e.projected_annual_revenue_usd < REVENUE_THRESHOLD_USD[c.revenue_threshold]);
        expect(a.capacity_factor).toBe(CAPACITY_FACTOR[c.profile]);
        expect(a.cost_ratio).toBeCloseTo(costRatio, 2);
      }),
    );
  });

  it('When tags are normalised, then LOW_ROI is present exactly when the assessment says so, once, and other tags keep their order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant('LOW_ROI'), fc.constant('low_roi'), fc.string())),
        fc.boolean(),
        (tags, lowRoi) => {
          const out = tagsFor(tags, { low_roi: lowRoi });
          expect(out.filter((t) => t.toUpperCase() === 'LOW_ROI')).toEqual(lowRoi ? ['LOW_ROI'] : []);
          expect(new Set(out).size).toBe(out.length);
          expect(out.every((t) => t.trim() === t && t.length > 0)).toBe(true);
        },
      ),
    );
    expect(tagsFor([' b2b ', 'LOW_ROI', 'saas', 'b2b'], { low_roi: false })).toEqual(['b2b', 'saas']);
  });
});
