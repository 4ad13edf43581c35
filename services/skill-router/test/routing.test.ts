import { metricValue, scrape } from '@repo/service-kit/testing';
import type { RegisterSkillRequest } from '../src/schemas';
import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
let key: string;

interface Metrics {
  success_rate_24h?: number;
  avg_latency_ms?: number | null;
  calls_30d?: number;
  rating_sum?: number;
  rating_count?: number;
  status?: string;
}

/** Registers a skill through the API, then sets its status and metrics as verification and checks would. */
async function seed(
  skill: Partial<RegisterSkillRequest> & { skill_id: string },
  m: Metrics = {},
): Promise<void> {
  const res = await h.register(
    key,
    buildSkill({ name: skill.skill_id, chains: [], pricing: { model: 'per_call', price_usd: 0 }, ...skill }),
  );
  expect(res.status).toBe(201);
  await h.sql(`UPDATE skills SET status = $2 WHERE skill_id = $1`, skill.skill_id, m.status ?? 'active');
  await h.sql(
    `UPDATE skill_stats SET success_rate_24h = $2, avg_latency_ms = $3, calls_30d = $4, rating_sum = $5, rating_count = $6
      WHERE skill_id = $1`,
    skill.skill_id,
    m.success_rate_24h ?? 1,
    m.avg_latency_ms === undefined ? 100 : m.avg_latency_ms,
    m.calls_30d ?? 0,
    m.rating_sum ?? 0,
    m.rating_count ?? 0,
  );
  // Off, the index stays unloaded: every route is ranked in PostgreSQL.
  if (h.config.ROUTING_INDEX) await h.reloadRouting();
}

interface Match {
  skill_id: string;
  name: string;
  match_score: number;
  match_reasons: string[];
  pricing: { per_call_usd: number };
  metrics: { success_rate_24h: number; avg_latency_ms: number; calls_30d: number };
  endpoint: string;
}

async function route(body: unknown): Promise<{ matches: Match[]; total_matches: number; routed_at: string }> {
  const res = await h.call('POST', '/api/discover/route', body, { 'x-api-key': key });
  expect(res.status).toBe(200);
  // Ranked from the index exactly when it is on (routing.ts falls back to SQL while it is not current).
  expect(h.service.routing.current).toBe(h.config.ROUTING_INDEX);
  return res.body;
}

const ids = (r: { matches: Match[] }) => r.matches.map((m) => m.skill_id);
const reason = (m: Match | undefined, factor: string) =>
  m?.match_reasons.find((r) => r.startsWith(`${factor} `));

// The same routing behaviour ranked from the in-memory routing index and in PostgreSQL alone
// (docs/architecture.md, "Fast paths"); past ROUTE_CANDIDATE_LIMIT matches they differ, below.
describe.each([true, false])('Routing with ROUTING_INDEX=%s', (routingIndex) => {
  beforeAll(async () => {
    h = await startHarness(routingIndex ? 'skill_router_routing_test' : 'skill_router_routing_sql_test', {
      ROUTING_INDEX: String(routingIndex),
    });
    key = await h.createKey('router-test');
  });
  afterAll(() => h.close());

  describe('POST /api/discover/route: each factor moves the order', () => {
    // Every pair is identical except for one factor; "-a" wins the skill_id tie-break, so "-b" ranks
    // first only because of that factor.
    it('When skill b covers more of the task terms (capability_match), then b ranks first', async () => {
      await seed({
        skill_id: 'cap-a',
        description: 'Reads quokka invoices and little else.',
        capabilities: ['quokka'],
      });
      await seed({
        skill_id: 'cap-b',
        description: 'Reads quokka invoices and exports spreadsheet rows.',
        capabilities: ['quokka', 'spreadsheet'],
      });
      const r = await route({ task: 'export quokka invoices to a spreadsheet' });
      expect(ids(r)).toEqual(['cap-b', 'cap-a']);
      // task lexemes: export, quokka, invoic, spreadsheet -> b matches 4/4, a matches 2/4
      const [b, a] = r.matches;
      expect(b!.match_score - a!.match_score).toBeCloseTo(0.35 * (4 / 4 - 2 / 4), 6);
      expect(reason(b, 'capability_match')).toMatch(/\(4 of 4\)/);
      expect(reason(a, 'capability_match')).toMatch(/\(2 of 4\)/);
    });

    it('When skill b supports more of the requested chains (chain_match), then b ranks first and a skill on none of them is filtered out', async () => {
      await seed({
        skill_id: 'chain-a',
        description: 'Narwhal token swaps on one chain.',
        capabilities: ['narwhal'],
        chains: ['solana'],
      });
      await seed({
        skill_id: 'chain-b',
        description: 'Narwhal token swaps on two chains.',
        capabilities: ['narwhal'],
        chains: ['solana', 'base'],
      });
      await seed({
        skill_id: 'chain-c',
        description: 'Narwhal token swaps elsewhere.',
        capabilities: ['narwhal'],
        chains: ['ethereum'],
      });
      const r = await route({ task: 'narwhal', requirements: { chains: ['Solana', 'base'] } });
      expect(ids(r)).toEqual(['chain-b', 'chain-a']);
      expect(r.total_matches).toBe(2);
      expect(r.matches[0]!.match_score - r.matches[1]!.match_score).toBeCloseTo(0.2 * (1 - 0.5), 6);
      expect(reason(r.matches[1], 'chain_match')).toMatch(/supports solana \(1 of 2 requested\)/);
      // without a chain requirement all three qualify and chain_match is 1 for each
      const all = await route({ task: 'narwhal' });
      expect(ids(all)).toEqual(['chain-a', 'chain-b', 'chain-c']);
    });

    it('When skill b is cheaper within the budget (price_fit), then b ranks first; free scores 1', async () => {
      await seed({
        skill_id: 'price-a',
        description: 'Axolotl image labelling service.',
        capabilities: ['axolotl'],
        pricing: { model: 'per_call', price_usd: 0.009 },
      });
      await seed({
        skill_id: 'price-b',
        description: 'Axolotl image labelling service.',
        capabilities: ['axolotl'],
        pricing: { model: 'per_call', price_usd: 0.001 },
      });
      const r = await route({ task: 'axolotl', requirements: { max_price_usd: 0.01 } });
      expect(ids(r)).toEqual(['price-b', 'price-a']);
      expect(r.matches[0]!.match_score - r.matches[1]!.match_score).toBeCloseTo(
        0.15 * (1 - 0.001 / 0.02 - (1 - 0.009 / 0.02)),
        6,
      );
      expect(r.matches[0]!.pricing).toEqual({ per_call_usd: 0.001 });
      await seed({
        skill_id: 'price-c',
        description: 'Axolotl image labelling service.',
        capabilities: ['axolotl'],
        pricing: { model: 'free', price_usd: 0 },
      });
      const withFree = await route({ task: 'axolotl', requirements: { max_price_usd: 0.01 } });
      expect(ids(withFree)[0]).toBe('price-c');
      expect(reason(withFree.matches[0], 'price_fit')).toBe('price_fit 1.00: free');
    });

    it('When skill b has the higher success rate (reliability), then b ranks first', async () => {
      await seed(
        { skill_id: 'rel-a', description: 'Pangolin weather forecasts.', capabilities: ['pangolin'] },
        { success_rate_24h: 0.5 },
      );
      await seed(
        { skill_id: 'rel-b', description: 'Pangolin weather forecasts.', capabilities: ['pangolin'] },
        { success_rate_24h: 0.99 },
      );
      const r = await route({ task: 'pangolin' });
      expect(ids(r)).toEqual(['rel-b', 'rel-a']);
      expect(r.matches[0]!.match_score - r.matches[1]!.match_score).toBeCloseTo(0.15 * (0.99 - 0.5), 6);
      expect(r.matches[0]!.metrics.success_rate_24h).toBe(0.99);
    });

    it('When skill b is faster within the latency limit (latency_fit), then b ranks first; above the limit scores 0', async () => {
      await seed(
        { skill_id: 'lat-a', description: 'Okapi address geocoding.', capabilities: ['okapi'] },
        { avg_latency_ms: 400 },
      );
      await seed(
        { skill_id: 'lat-b', description: 'Okapi address geocoding.', capabilities: ['okapi'] },
        { avg_latency_ms: 50 },
      );
      await seed(
        { skill_id: 'lat-c', description: 'Okapi address geocoding.', capabilities: ['okapi'] },
        { avg_latency_ms: 900 },
      );
      const r = await route({ task: 'okapi', requirements: { max_latency_ms: 500 } });
      expect(ids(r)).toEqual(['lat-b', 'lat-a', 'lat-c']);
      expect(r.matches[0]!.match_score - r.matches[1]!.match_score).toBeCloseTo(
        0.1 * (1 - 50 / 1000 - (1 - 400 / 1000)),
        6,
      );
      expect(reason(r.matches[2], 'latency_fit')).toBeUndefined();
    });

    it('When skill b has more calls and better ratings (popularity), then b ranks first', async () => {
      await seed({ skill_id: 'pop-a', description: 'Tapir sentiment analysis.', capabilities: ['tapir'] });
      await seed(
        { skill_id: 'pop-b', description: 'Tapir sentiment analysis.', capabilities: ['tapir'] },
        { calls_30d: 1000, rating_sum: 450, rating_count: 100 },
      );
      const r = await route({ task: 'tapir' });
      expect(ids(r)).toEqual(['pop-b', 'pop-a']);
      expect(reason(r.matches[0], 'popularity')).toMatch(/1000 calls in 30 days, rated 4\.5\/5 by 100/);
    });

    it('When two skills are identical, then the lower skill_id ranks first', async () => {
      await seed({
        skill_id: 'tie-b',
        description: 'Wombat ledger reconciliation.',
        capabilities: ['wombat'],
      });
      await seed({
        skill_id: 'tie-a',
        description: 'Wombat ledger reconciliation.',
        capabilities: ['wombat'],
      });
      const r = await route({ task: 'wombat reconciliation' });
      expect(ids(r)).toEqual(['tie-a', 'tie-b']);
      expect(r.matches[0]!.match_score).toBe(r.matches[1]!.match_score);
    });
  });

  describe('POST /api/discover/route: the score and the answer', () => {
    it('When a task is routed, then match_score is the weighted sum (services/skill-router/README.md, "Routing and the score") and the answer has every field', async () => {
      await seed(
        {
          skill_id: 'full-1',
          name: 'Ibex translator',
          description: 'Translates ibex manuals into Spanish.',
          capabilities: ['ibex', 'translation'],
          chains: ['solana'],
          pricing: { model: 'per_call', price_usd: 0.004 },
          endpoint: 'http://127.0.0.1:9/ibex',
        },
        { success_rate_24h: 0.9, avg_latency_ms: 250, calls_30d: 9, rating_sum: 12, rating_count: 3 },
      );
      const r = await route({
        task: 'translate ibex manuals to French',
        requirements: { chains: ['solana'], max_price_usd: 0.01, max_latency_ms: 1000 },
        context: { caller_agent: 'tester', urgency: 'low' },
      });
      expect(r.total_matches).toBe(1);
      expect(Number.isNaN(Date.parse(r.routed_at))).toBe(false);
      // task lexemes: translat, ibex, manual, french -> 3 of 4 in capabilities+description
      const popularity = 0.5 * (Math.log10(10) / Math.log10(10_001)) + 0.5 * (((12 + 15) / (3 + 5) - 1) / 4);
      const expected =
        0.35 * (3 / 4) +
        0.2 * 1 +
        0.15 * (1 - 0.004 / 0.02) +
        0.15 * 0.9 +
        0.1 * (1 - 250 / 2000) +
        0.05 * popularity;
      expect(r.matches).toEqual([
        {
          skill_id: 'full-1',
          name: 'Ibex translator',
          match_score: Math.round(expected * 1e6) / 1e6,
          match_reasons: [
            expect.stringMatching(/^capability_match 0\.75/),
            expect.stringMatching(/^chain_match 1\.00/),
            expect.stringMatching(/^price_fit 0\.80/),
            expect.stringMatching(/^reliability 0\.90/),
            expect.stringMatching(/^latency_fit 0\.88/),
            expect.stringMatching(/^popularity /),
          ],
          pricing: { per_call_usd: 0.004 },
          metrics: { success_rate_24h: 0.9, avg_latency_ms: 250, calls_30d: 9 },
          endpoint: 'http://127.0.0.1:9/ibex',
          call: { transport: 'http', method: 'POST', url: 'http://127.0.0.1:9/ibex' },
        },
      ]);
    });

    it('When a skill is not active (pending, failed or suspended), then it is never routed', async () => {
      await seed({
        skill_id: 'state-active',
        description: 'Gecko dataset cleaning.',
        capabilities: ['gecko'],
      });
      await seed(
        { skill_id: 'state-pending', description: 'Gecko dataset cleaning.', capabilities: ['gecko'] },
        { status: 'pending_verification' },
      );
      await seed(
        { skill_id: 'state-failed', description: 'Gecko dataset cleaning.', capabilities: ['gecko'] },
        { status: 'verification_failed' },
      );
      await seed(
        { skill_id: 'state-suspended', description: 'Gecko dataset cleaning.', capabilities: ['gecko'] },
        { status: 'suspended' },
      );
      const r = await route({ task: 'gecko' });
      expect(ids(r)).toEqual(['state-active']);
      expect(r.total_matches).toBe(1);
    });

    it('When more skills match than the limit, then limit matches and the full total', async () => {
      for (let i = 0; i < 4; i++)
        await seed({ skill_id: `many-${i}`, description: 'Lemur chart rendering.', capabilities: ['lemur'] });
      const r = await route({ task: 'lemur', limit: 2 });
      expect(ids(r)).toEqual(['many-0', 'many-1']);
      expect(r.total_matches).toBe(4);
    });

    it('When the task shares no term with any skill or has only stop words, then no matches', async () => {
      expect(await route({ task: 'xylophone zeppelin' })).toMatchObject({ matches: [], total_matches: 0 });
      expect(await route({ task: 'the and of to it' })).toMatchObject({ matches: [], total_matches: 0 });
    });

    it('When the task contains tsquery syntax, then it is treated as plain words', async () => {
      for (const id of ['tsq-a', 'tsq-b'])
        await seed({ skill_id: id, description: 'Dugong map tiling.', capabilities: ['dugong'] });
      const r = await route({ task: "dugong & ! ( ' :* <-> |" });
      expect(ids(r)).toEqual(['tsq-a', 'tsq-b']);
      expect(r.total_matches).toBe(2);
    });

    it.each([
      ['no task', 'body.task', {}],
      ['an empty task', 'body.task', { task: '  ' }],
      ['chains not an array', 'body.requirements.chains', { task: 'x', requirements: { chains: 'solana' } }],
      [
        'a negative budget',
        'body.requirements.max_price_usd',
        { task: 'x', requirements: { max_price_usd: -1 } },
      ],
      [
        'a fractional latency',
        'body.requirements.max_latency_ms',
        { task: 'x', requirements: { max_latency_ms: 1.5 } },
      ],
      ['a limit over 100', 'body.limit', { task: 'x', limit: 101 }],
    ])('When the body has %s, then 400 invalid_request naming %s', async (_what, field, body) => {
      const res = await h.call('POST', '/api/discover/route', body, { 'x-api-key': key });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.issues.map((d: { path: string }) => d.path)).toContain(field);
    });
  });
});

describe('POST /api/discover/route: the candidate cut and the routing index', () => {
  /**
   * Starts a service with `env`, seeds 12 chart tools and one skill that matches the task best by
   * text rank (all active by hand, the routing index reloaded), routes the task and stops it.
   * @returns the route's answer and the ranking counters by source
   */
  async function routeCut(env: Record<string, string>) {
    const target = await startHarness('skill_router_routing_cut_test', {
      ROUTE_CANDIDATE_LIMIT: '10',
      ...env,
    });
    try {
      const targetKey = await target.createKey();
      for (let i = 0; i < 12; i++) {
        const s = buildSkill({
          skill_id: `cut-${String(i).padStart(2, '0')}`,
          name: `Tool ${i}`,
          description: 'Renders charts for dashboards quickly.',
          capabilities: ['charts'],
          chains: [],
        });
        expect((await target.register(targetKey, s)).status).toBe(201);
      }
      // The strongest text match: the task's terms in its name, capabilities and description.
      const best = buildSkill({
        skill_id: 'cut-zz',
        name: 'Iguana dashboards',
        description: 'Iguana dashboards and iguana reports for iguana data.',
        capabilities: ['iguana', 'dashboards'],
        chains: [],
      });
      await target.register(targetKey, best);
      await target.sql(`UPDATE skills SET status = 'active'`);
      if (target.config.ROUTING_INDEX) await target.reloadRouting();
      const res = await target.call(
        'POST',
        '/api/discover/route',
        { task: 'iguana dashboards', limit: 100 },
        { 'x-api-key': targetKey },
      );
      expect(res.status).toBe(200);
      const metrics = await scrape(target.metricsUrl);
      return {
        body: res.body as { total_matches: number; matches: { skill_id: string }[] },
        current: target.service.routing.current,
        ranked: (source: string) => metricValue(metrics, 'skill_route_rankings_total', { source }),
      };
    } finally {
      await target.close();
    }
  }

  it('When routes are ranked in PostgreSQL and more skills match than ROUTE_CANDIDATE_LIMIT, then the best by text rank are scored and total_matches counts all', async () => {
    const { body, current, ranked } = await routeCut({ ROUTING_INDEX: 'false' });
    expect(body.total_matches).toBe(13);
    expect(body.matches).toHaveLength(10);
    expect(body.matches[0]?.skill_id).toBe('cut-zz');
    expect(current).toBe(false);
    expect(ranked('database')).toBe(1);
  });

  it('When routes are ranked from the routing index, then every match is scored whatever ROUTE_CANDIDATE_LIMIT says', async () => {
    const { body, ranked } = await routeCut({});
    expect(body.total_matches).toBe(13);
    expect(body.matches).toHaveLength(13);
    expect(body.matches[0]?.skill_id).toBe('cut-zz');
    expect(ranked('index')).toBe(1);
    expect(ranked('database')).toBe(0);
  });
});
