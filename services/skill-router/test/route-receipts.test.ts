import type { RegisterSkillRequest } from '../src/schemas';
import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
let key: string;

/** Registers a skill through the API, then sets its status and metrics as verification and checks would. */
async function seed(
  skill: Partial<RegisterSkillRequest> & { skill_id: string },
  m: { status?: string; avg_latency_ms?: number | null } = {},
): Promise<void> {
  const res = await h.register(
    key,
    buildSkill({ name: skill.skill_id, chains: [], pricing: { model: 'per_call', price_usd: 0 }, ...skill }),
  );
  expect(res.status).toBe(201);
  await h.sql(`UPDATE skills SET status = $2 WHERE skill_id = $1`, skill.skill_id, m.status ?? 'active');
  await h.sql(
    `UPDATE skill_stats SET success_rate_24h = 1, avg_latency_ms = $2 WHERE skill_id = $1`,
    skill.skill_id,
    m.avg_latency_ms === undefined ? 100 : m.avg_latency_ms,
  );
}

interface Receipt {
  matches: { skill_id: string }[];
  total_matches: number;
  routed_at: string;
  rejected: { skill_id: string; name: string; capability_match: number; reasons: string[] }[];
  snapshot_at: string;
}

async function route(body: unknown): Promise<Receipt> {
  const res = await h.call('POST', '/api/discover/route', body, { 'x-api-key': key });
  expect(res.status).toBe(200);
  // Ranked from the index exactly when it is on (routing.ts falls back to SQL while it is not current).
  expect(h.service.routing.current).toBe(h.config.ROUTING_INDEX);
  return res.body;
}

/** Makes the seeded rows visible to the index (a full load, as the notifications would one by one). */
async function seeded(): Promise<void> {
  if (h.config.ROUTING_INDEX) await h.reloadRouting();
}

// The same receipts from the in-memory routing index and from PostgreSQL alone (README, "Routing receipts").
describe.each([true, false])('Routing receipts with ROUTING_INDEX=%s', (routingIndex) => {
  beforeAll(async () => {
    h = await startHarness(routingIndex ? 'skill_router_receipts_test' : 'skill_router_receipts_sql_test', {
      ROUTING_INDEX: String(routingIndex),
    });
    key = await h.createKey('receipts-test');
  });
  afterAll(() => h.close());

  it('When chains are required, then the skills the chain filter removed are listed nearest first with every requirement they fail, and skills never verified are not', async () => {
    await seed({ skill_id: 'quokka-sol', capabilities: ['quokka', 'wombat'], chains: ['solana'] });
    // Off-chain, both task words, over both budgets.
    await seed(
      {
        skill_id: 'quokka-eth-near',
        capabilities: ['quokka', 'wombat'],
        chains: ['ethereum'],
        pricing: { model: 'per_call', price_usd: 0.05 },
      },
      { avg_latency_ms: 2500 },
    );
    // Off-chain, one task word, within both budgets; no chains at all; unknown latency over no budget.
    await seed({ skill_id: 'quokka-eth-far', capabilities: ['quokka'], chains: ['ethereum'] });
    await seed(
      { skill_id: 'quokka-nochain', capabilities: ['quokka'], chains: [] },
      { avg_latency_ms: null },
    );
    // Near but never verified: never listed, whatever their chains.
    for (const status of ['pending_verification', 'verification_failed'])
      await seed(
        { skill_id: `quokka-${status}`, capabilities: ['quokka', 'wombat'], chains: ['ethereum'] },
        { status },
      );
    await seed({ skill_id: 'unrelated-eth', capabilities: ['translate'], chains: ['ethereum'] });
    const seededAt = Date.now();
    await seeded();

    const body = await route({
      task: 'quokka wombat',
      requirements: { chains: ['solana'], max_price_usd: 0.01, max_latency_ms: 1000 },
    });
    expect(body.matches.map((m) => m.skill_id)).toEqual(['quokka-sol']);
    expect(body.total_matches).toBe(1);
    expect(body.rejected).toEqual([
      {
        skill_id: 'quokka-eth-near',
        name: 'quokka-eth-near',
        capability_match: 1,
        reasons: ['chain', 'over_max_price', 'over_max_latency'],
      },
      { skill_id: 'quokka-eth-far', name: 'quokka-eth-far', capability_match: 0.5, reasons: ['chain'] },
      { skill_id: 'quokka-nochain', name: 'quokka-nochain', capability_match: 0.5, reasons: ['chain'] },
    ]);
    // The data read is no older than the seeding (the index's load, or the SQL ranking's reads), and
    // not from the future (the same machine's clock; a second of slack for rounding).
    const snapshot = Date.parse(body.snapshot_at);
    expect(snapshot).toBeGreaterThanOrEqual(seededAt - 1000);
    expect(snapshot).toBeLessThanOrEqual(Date.parse(body.routed_at) + 1000);

    // Only the price budget: the far skill is within it, the near one is not.
    const priceOnly = await route({
      task: 'quokka wombat',
      requirements: { chains: ['solana'], max_price_usd: 0.01 },
    });
    expect(priceOnly.rejected.map((r) => [r.skill_id, r.reasons])).toEqual([
      ['quokka-eth-near', ['chain', 'over_max_price']],
      ['quokka-eth-far', ['chain']],
      ['quokka-nochain', ['chain']],
    ]);
    // Only the latency budget: unknown latency is not over it.
    const latencyOnly = await route({
      task: 'quokka wombat',
      requirements: { chains: ['solana'], max_latency_ms: 1000 },
    });
    expect(latencyOnly.rejected.map((r) => [r.skill_id, r.reasons])).toEqual([
      ['quokka-eth-near', ['chain', 'over_max_latency']],
      ['quokka-eth-far', ['chain']],
      ['quokka-nochain', ['chain']],
    ]);
  });

  it('When no chain is required, then the chain filter removes nothing: over-budget and slow skills stay in the matches with that factor at 0', async () => {
    await seed(
      { skill_id: 'numbat-dear', capabilities: ['numbat'], pricing: { model: 'per_call', price_usd: 0.5 } },
      { avg_latency_ms: 9000 },
    );
    await seeded();
    const body = await route({ task: 'numbat', requirements: { max_price_usd: 0.01, max_latency_ms: 100 } });
    expect(body.matches.map((m) => m.skill_id)).toEqual(['numbat-dear']);
    expect(body.rejected).toEqual([]);
    expect(Number.isNaN(Date.parse(body.snapshot_at))).toBe(false);
  });

  it('When near skills are suspended, degraded or updated and awaiting verification, then each is listed with its reason (and chain when it also fails it), and leaves when it is routable again', async () => {
    await seed({ skill_id: 'echidna-ok', capabilities: ['echidna'], chains: ['solana'] });
    await seed(
      { skill_id: 'echidna-down', capabilities: ['echidna', 'platypus'], chains: ['solana'] },
      {
        status: 'suspended',
      },
    );
    await seed(
      { skill_id: 'echidna-drift', capabilities: ['echidna'], chains: ['ethereum'] },
      {
        status: 'degraded',
      },
    );
    // A verified skill updated by its owner: the update itself makes it pending (README, "Pinned definitions").
    await seed({ skill_id: 'echidna-new', capabilities: ['echidna'], chains: ['solana'] });
    await h.sql(`UPDATE skill_versions SET status = 'passed' WHERE skill_id = 'echidna-new'`);
    const update = await h.register(
      key,
      buildSkill({
        skill_id: 'echidna-new',
        name: 'echidna-new',
        capabilities: ['echidna'],
        chains: ['solana'],
        pricing: { model: 'per_call', price_usd: 0.5 },
      }),
    );
    expect(update.status).toBe(200);
    const [row] = await h.sql<{ status: string }>(`SELECT status FROM skills WHERE skill_id = 'echidna-new'`);
    expect(row?.status).toBe('pending_verification');
    // Never verified: not named.
    await seed({ skill_id: 'echidna-fresh', capabilities: ['echidna'] }, { status: 'pending_verification' });
    await seeded();

    const body = await route({ task: 'echidna platypus', requirements: { max_price_usd: 0.01 } });
    expect(body.matches.map((m) => m.skill_id)).toEqual(['echidna-ok']);
    expect(body.total_matches).toBe(1);
    expect(body.rejected).toEqual([
      { skill_id: 'echidna-down', name: 'echidna-down', capability_match: 1, reasons: ['unhealthy'] },
      { skill_id: 'echidna-drift', name: 'echidna-drift', capability_match: 0.5, reasons: ['degraded'] },
      {
        skill_id: 'echidna-new',
        name: 'echidna-new',
        capability_match: 0.5,
        reasons: ['unverified_version', 'over_max_price'],
      },
    ]);
    const onSolana = await route({ task: 'echidna', requirements: { chains: ['solana'] } });
    expect(onSolana.rejected.map((r) => [r.skill_id, r.reasons])).toEqual([
      ['echidna-down', ['unhealthy']],
      ['echidna-drift', ['degraded', 'chain']],
      ['echidna-new', ['unverified_version']],
    ]);

    // Back in routing: out of the receipts (the index hears of it as of any write).
    await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = 'echidna-down'`);
    await seeded();
    const again = await route({ task: 'echidna platypus' });
    expect(again.matches.map((m) => m.skill_id)).toContain('echidna-down');
    expect(again.rejected.map((r) => r.skill_id)).toEqual(['echidna-drift', 'echidna-new']);
  });

  it('When more than 10 skills are removed by the chain filter, then the nearest 10 are listed, ties by skill_id', async () => {
    for (let i = 0; i < 12; i++)
      await seed({
        skill_id: `bilby-${String(i).padStart(2, '0')}`,
        // Every third one covers both task words.
        capabilities: i % 3 === 0 ? ['bilby', 'dingo'] : ['bilby'],
        chains: ['base'],
      });
    await seeded();
    const body = await route({ task: 'bilby dingo', requirements: { chains: ['solana'] } });
    expect(body.matches).toEqual([]);
    expect(body.total_matches).toBe(0);
    expect(body.rejected.map((r) => [r.skill_id, r.capability_match])).toEqual([
      ['bilby-00', 1],
      ['bilby-03', 1],
      ['bilby-06', 1],
      ['bilby-09', 1],
      ['bilby-01', 0.5],
      ['bilby-02', 0.5],
      ['bilby-04', 0.5],
      ['bilby-05', 0.5],
      ['bilby-07', 0.5],
      ['bilby-08', 0.5],
    ]);
  });
});
