import {
  FACTORS,
  WEIGHTS,
  capabilityMatch,
  chainMatch,
  latencyFit,
  popularity,
  priceFit,
  rankSkills,
  reliability,
  scoreSkill,
  type ScoringSkill,
} from '../src/domain/scoring';

const skill = (overrides: Partial<ScoringSkill> = {}): ScoringSkill => ({
  skillId: 'a',
  matchTerms: ['translat', 'text', 'languag'],
  chains: ['solana'],
  priceUsd: 0,
  successRate24h: 1,
  avgLatencyMs: 100,
  calls30d: 0,
  ratingSum: 0,
  ratingCount: 0,
  ...overrides,
});

describe('weights', () => {
  it('When the weights are summed, then they are the six weights of the score (services/skill-router/README.md, "Routing and the score") and total 1', () => {
    expect(WEIGHTS).toEqual({
      capability_match: 0.35,
      chain_match: 0.2,
      price_fit: 0.15,
      reliability: 0.15,
      latency_fit: 0.1,
      popularity: 0.05,
    });
    expect(FACTORS.reduce((s, f) => s + WEIGHTS[f], 0)).toBeCloseTo(1, 12);
  });
});

describe('capability_match', () => {
  it('When 2 of 3 task terms are among the skill terms, then 2/3 and the matched terms', () => {
    const r = capabilityMatch(['translat', 'spanish', 'text'], ['text', 'translat', 'languag']);
    expect(r.value).toBeCloseTo(2 / 3);
    expect(r.matched).toEqual(['text', 'translat']);
    expect(r.reason).toMatch(/^capability_match 0\.67: .*"text", "translat".*\(2 of 3\)/);
  });
  it('When no term overlaps or the task has no terms, then 0 and no reason', () => {
    expect(capabilityMatch(['swap'], ['text'])).toEqual({ value: 0, matched: [], reason: undefined });
    expect(capabilityMatch([], ['text']).value).toBe(0);
  });
  it('When task terms repeat, then they count once', () => {
    expect(capabilityMatch(['text', 'text', 'swap'], ['text']).value).toBeCloseTo(1 / 2);
  });
});

describe('chain_match', () => {
  it('When no chain is requested, then 1 for every skill', () => {
    expect(chainMatch(undefined, [])?.value).toBe(1);
    expect(chainMatch([], ['base'])?.value).toBe(1);
  });
  it('When chains are requested, then the share supported, and null (filtered out) when none is', () => {
    expect(chainMatch(['solana', 'base'], ['solana'])?.value).toBe(0.5);
    expect(chainMatch(['solana', 'base'], ['base', 'solana'])?.value).toBe(1);
    expect(chainMatch(['ethereum'], ['solana'])).toBeNull();
  });
});

describe('price_fit', () => {
  it('When the skill is free, then 1 with or without a budget', () => {
    expect(priceFit(0).value).toBe(1);
    expect(priceFit(0, 0.001).value).toBe(1);
  });
  it('When within the budget, then 1 - p/(2B), i.e. 0.5..1; above the budget 0', () => {
    expect(priceFit(0.005, 0.01).value).toBeCloseTo(0.75);
    expect(priceFit(0.01, 0.01).value).toBeCloseTo(0.5);
    expect(priceFit(0.011, 0.01)).toEqual({ value: 0 });
  });
  it('When no budget is given, then 1/(1 + p/0.01): cheaper is better', () => {
    expect(priceFit(0.01).value).toBeCloseTo(0.5);
    expect(priceFit(0.001).value).toBeGreaterThan(priceFit(0.002).value);
  });
});

describe('reliability', () => {
  it('When the success rate is 0.9, then 0.9; a rate of 0 gives no reason', () => {
    expect(reliability(0.9).value).toBe(0.9);
    expect(reliability(0.9).reason).toMatch(/90\.0%/);
    expect(reliability(0)).toEqual({ value: 0 });
    expect(reliability(1.5).value).toBe(1);
  });
});

describe('latency_fit', () => {
  it('When within the limit, then 1 - L/(2M); above it 0; unknown 0.5', () => {
    expect(latencyFit(100, 400).value).toBeCloseTo(0.875);
    expect(latencyFit(401, 400)).toEqual({ value: 0 });
    expect(latencyFit(null, 400).value).toBe(0.5);
  });
  it('When no limit is given, then 1/(1 + L/1000): faster is better', () => {
    expect(latencyFit(1000).value).toBeCloseTo(0.5);
    expect(latencyFit(50).value).toBeGreaterThan(latencyFit(500).value);
  });
});

describe('popularity', () => {
  it('When unused and unrated, then 0.25 (no volume, neutral rating)', () => {
    expect(popularity(0, 0, 0).value).toBeCloseTo(0.25);
  });
  it('When 10,000 calls rated 5 by many, then close to 1; volume is logarithmic', () => {
    expect(popularity(10_000, 5000, 1000).value).toBeGreaterThan(0.99);
    const v100 = popularity(100, 0, 0).value - 0.25;
    const v10000 = popularity(10_000, 0, 0).value - 0.25;
    expect(v100 / v10000).toBeCloseTo(Math.log10(101) / Math.log10(10_001));
  });
  it('When a skill has one 5-star rating, then the Bayesian average moves it only a little', () => {
    expect(popularity(0, 5, 1).value).toBeCloseTo(0.5 * (((5 + 15) / 6 - 1) / 4));
    expect(popularity(0, 5, 1).value).toBeLessThan(popularity(0, 500, 100).value);
  });
});

describe('scoreSkill and rankSkills', () => {
  it('When scored, then the score is exactly the weighted sum of the six factors, with a reason for each factor above 0', () => {
    const s = skill({
      priceUsd: 0.005,
      successRate24h: 0.8,
      avgLatencyMs: 200,
      calls30d: 99,
      ratingSum: 8,
      ratingCount: 2,
    });
    const r = scoreSkill(s, {
      taskTerms: ['translat', 'spanish'],
      chains: ['solana'],
      maxPriceUsd: 0.01,
      maxLatencyMs: 400,
    })!;
    const expected =
      0.35 * 0.5 + 0.2 * 1 + 0.15 * 0.75 + 0.15 * 0.8 + 0.1 * 0.75 + 0.05 * popularity(99, 8, 2).value;
    expect(r.score).toBeCloseTo(expected, 6);
    expect(r.factors).toEqual({
      capability_match: 0.5,
      chain_match: 1,
      price_fit: 0.75,
      reliability: 0.8,
      latency_fit: 0.75,
      popularity: popularity(99, 8, 2).value,
    });
    expect(r.reasons.map((x) => x.split(' ')[0])).toEqual([
      'capability_match',
      'chain_match',
      'price_fit',
      'reliability',
      'latency_fit',
      'popularity',
    ]);
  });
  it('When a factor is 0, then it has no reason', () => {
    const r = scoreSkill(skill({ priceUsd: 1 }), { taskTerms: ['swap'], maxPriceUsd: 0.1 })!;
    expect(r.reasons.some((x) => x.startsWith('capability_match'))).toBe(false);
    expect(r.reasons.some((x) => x.startsWith('price_fit'))).toBe(false);
  });
  it('When the chain filter excludes a skill, then it is not ranked', () => {
    expect(rankSkills([skill({ chains: ['base'] })], { taskTerms: ['text'], chains: ['solana'] })).toEqual(
      [],
    );
  });
  it('When scores tie, then skill_id ascending breaks the tie', () => {
    const ranked = rankSkills([skill({ skillId: 'c' }), skill({ skillId: 'a' }), skill({ skillId: 'b' })], {
      taskTerms: ['text'],
    });
    expect(ranked.map((r) => r.skill.skillId)).toEqual(['a', 'b', 'c']);
  });
});

describe('rankSkills with a limit', () => {
  it('When a limit is given, then only the best that many are returned, each with its reasons', () => {
    const ranked = rankSkills(
      [
        skill({ skillId: 'x', successRate24h: 0.2 }),
        skill({ skillId: 'y', successRate24h: 0.9 }),
        skill({ skillId: 'z', successRate24h: 0.5 }),
      ],
      { taskTerms: ['text'] },
      2,
    );
    expect(ranked.map((r) => r.skill.skillId)).toEqual(['y', 'z']);
    expect(ranked[0]!.reasons.length).toBe(6);
    expect(ranked[0]!.score).toBe(scoreSkill(ranked[0]!.skill, { taskTerms: ['text'] })!.score);
  });
});
