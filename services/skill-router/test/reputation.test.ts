import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// README, "Reputation": how far sock-puppet keys can move a skill's score.
jest.setTimeout(180_000);

/** Failure reports each puppet sends about the skill (all within the per key and skill limit). */
const REPORTS_PER_KEY = 8;

let h: Harness;
let owner: string;

beforeAll(async () => {
  h = await startHarness('skill_router_reputation_test', {
    TRUST_PROXY: '1',
    REPORT_LIMIT_PER_KEY_SKILL: '30',
  });
  owner = await h.createKey('owner', { 'x-forwarded-for': '192.0.2.1' });
});
afterAll(() => h.close());

/** An active skill with its own vocabulary, so that `task` routes to it and nothing else. */
async function activeSkill(word: string): Promise<{ id: string; task: string }> {
  const skill = buildSkill({
    name: `${word} service`,
    description: `Answers questions about ${word} for agents.`,
    capabilities: [word],
  });
  expect((await h.register(owner, skill)).status).toBe(201);
  await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = $1`, skill.skill_id);
  await h.reloadRouting();
  return { id: skill.skill_id, task: `${word} questions` };
}

/** The skill's match_score and reliability as a route request sees them. */
async function scoreOf(
  task: string,
  id: string,
  key: string,
): Promise<{ score: number; reliability: number }> {
  const res = await h.call('POST', '/api/discover/route', { task }, { 'x-api-key': key });
  expect(res.status).toBe(200);
  const match = (res.body.matches as { skill_id: string; match_score: number }[]).find(
    (m) => m.skill_id === id,
  );
  if (!match) throw new Error(`${id} not routed for "${task}"`);
  const [stats] = await h.sql<{ success_rate_24h: number }>(
    'SELECT success_rate_24h FROM skill_stats WHERE skill_id = $1',
    id,
  );
  return { score: match.match_score, reliability: stats?.success_rate_24h ?? Number.NaN };
}

/** Creates `count` keys through the API, key i from the address `ipOf(i)`. */
async function puppets(prefix: string, count: number, ipOf: (i: number) => string): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < count; i++)
    keys.push(await h.createKey(`${prefix}-${i}`, { 'x-forwarded-for': ipOf(i) }));
  return keys;
}

/** Every key routes `task` once (so each has had a routed match) and then floods failure reports. */
async function attack(keys: string[], id: string, task: string, reportsPerKey: number): Promise<void> {
  for (const key of keys) {
    const routed = await h.call('POST', '/api/discover/route', { task }, { 'x-api-key': key });
    expect(routed.body.matches.length).toBeGreaterThan(0);
  }
  // Ten keys at a time, each sending its reports in order.
  for (let i = 0; i < keys.length; i += 10) {
    await Promise.all(
      keys.slice(i, i + 10).map(async (key) => {
        for (let r = 0; r < reportsPerKey; r++) {
          const res = await h.call(
            'POST',
            '/api/discover/report',
            { skill_id: id, caller: 'puppet', call_result: 'failure', satisfaction: 1, latency_ms: 60_000 },
            { 'x-api-key': key },
          );
          expect(res.status).toBe(200);
        }
      }),
    );
  }
}

describe('sock-puppet keys (README, "Reputation")', () => {
  it('When 50 keys created today from 50 networks each route once and send 8 failure reports each, then the skill score does not move at all', async () => {
    const { id, task } = await activeSkill('heliograph');
    const observer = await h.createKey('observer-a', { 'x-forwarded-for': '192.0.2.2' });
    const before = await scoreOf(task, id, observer);
    expect(before.reliability).toBe(0.9);

    const keys = await puppets('fresh', 50, (i) => `198.18.${i}.7`);
    await attack(keys, id, task, REPORTS_PER_KEY);

    expect(
      await h.sql(
        'SELECT count(*)::int AS n, count(*) FILTER (WHERE counted)::int AS counted FROM call_reports WHERE skill_id = $1',
        id,
      ),
    ).toEqual([{ n: 50 * REPORTS_PER_KEY, counted: 0 }]);
    const after = await scoreOf(task, id, observer);
    expect(after).toEqual(before);
  });

  it('When 50 keys a day old from five /24s each route once and send 8 failure reports each, then they count as five reporters and move reliability by < 0.01 and match_score by < 0.0015', async () => {
    const { id, task } = await activeSkill('semaphore');
    const observer = await h.createKey('observer-b', { 'x-forwarded-for': '192.0.2.3' });
    const before = await scoreOf(task, id, observer);

    const keys = await puppets('aged', 50, (i) => `203.0.${113 + (i % 5)}.${10 + Math.floor(i / 5)}`);
    // A day and an hour old: past the old rules' one-day threshold, where each report weighed 1.
    await h.sql("UPDATE api_keys SET created_at = now() - interval '25 hours' WHERE name LIKE 'aged-%'");
    await attack(keys, id, task, REPORTS_PER_KEY);

    const [rows] = await h.sql<{ n: number; counted: number; weight: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE counted)::int AS counted, sum(weight) AS weight
         FROM call_reports WHERE skill_id = $1`,
      id,
    );
    expect(rows).toMatchObject({ n: 50 * REPORTS_PER_KEY, counted: 5 });
    // Each counted report: (25 h / 14 days) · (1 routed day / 7).
    expect(rows?.weight).toBeCloseTo(5 * (25 / (14 * 24)) * (1 / 7), 4);

    const after = await scoreOf(task, id, observer);
    expect(before.reliability - after.reliability).toBeGreaterThan(0);
    expect(before.reliability - after.reliability).toBeLessThan(0.01);
    expect(before.score - after.score).toBeLessThan(0.0015);
    // Under the old rules all 400 reports counted fully: a success rate of 0, reliability 0, and a
    // score 0.15 · 0.9 lower than now.
  });
});
