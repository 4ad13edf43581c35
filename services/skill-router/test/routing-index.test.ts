import { metricValue, scrape } from '@repo/service-kit/testing';
import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import { buildSkill, translate } from './support/factories';
import { startHarness, waitFor, type Harness } from './support/harness';

// Two replicas on one database: A runs the workers and takes the writes, B only routes. Every
// change A makes must reach B's routing index within a second (README, "Routing and the score").
let a: Harness;
let b: Harness;
let skills: LocalSkills;
let keyA: string;
let keyB: string;

const CONVERGENCE_MS = 1000;

beforeAll(async () => {
  skills = await startLocalSkills();
  a = await startHarness('skill_router_routing_index_test', {
    WORKERS_ENABLED: 'true',
    HEALTH_CHECK_INTERVAL_MS: '100',
    HEALTH_FAILURES_TO_SUSPEND: '2',
  });
  b = await startHarness(
    'skill_router_routing_index_test',
    // No watermark check unless a test runs one (B converges by notifications alone), and a slow
    // reconnection, so that the test sees B while its listener is down.
    { ROUTING_WATERMARK_INTERVAL_MS: '3600000', ROUTING_LISTEN_RETRY_MS: '3000' },
    { resetDb: false },
  );
  keyA = await a.createKey('provider');
  keyB = await b.createKey('router');
  // An established key: a day old, and it has routed calls (only such keys' reports move metrics).
  await a.sql(
    "UPDATE api_keys SET created_at = now() - interval '2 days', first_routed_at = now() WHERE name = 'provider'",
  );
}, 90_000);
afterAll(async () => {
  await b?.close();
  await a?.close();
  await skills?.close();
});

interface Match {
  skill_id: string;
  metrics: { calls_30d: number };
}

/** B's route answer for a task. */
async function routeOnB(task: string): Promise<Match[]> {
  const res = await b.call('POST', '/api/discover/route', { task, limit: 100 }, { 'x-api-key': keyB });
  expect(res.status).toBe(200);
  return res.body.matches as Match[];
}

/** Waits until `skillId`'s status in the database satisfies `ok` (what A's workers decide, in their time). */
const statusBecomes = (skillId: string, ok: (status: string) => boolean, timeoutMs = 30_000) =>
  waitFor(
    `${skillId} to change status`,
    async () => {
      const [row] = await a.sql<{ status: string }>('SELECT status FROM skills WHERE skill_id = $1', skillId);
      return row && ok(row.status);
    },
    timeoutMs,
  );

/** Waits at most {@link CONVERGENCE_MS} from now for replica B's index to satisfy `check`. */
const bConverges = (what: string, check: () => boolean | Promise<boolean>) =>
  waitFor(`replica B's routing index: ${what}`, async () => check(), CONVERGENCE_MS);

describe('The routing index of every replica follows the writes of any replica', () => {
  it('When replica A verifies, reports on, suspends, resumes and re-registers a skill, then replica B follows each change within a second of it', async () => {
    const id = 'okapi-translator';
    const task = 'okapi translation';
    skills.set('okapi', { kind: 'healthy', respond: translate });
    const skill = buildSkill({
      skill_id: id,
      capabilities: ['okapi', 'translation'],
      endpoint: skills.url('okapi'),
    });

    // Registration, then verification by A's worker.
    expect((await a.register(keyA, skill)).status).toBe(201);
    expect(b.service.routing.has(id)).toBe(false);
    await statusBecomes(id, (s) => s === 'active');
    await bConverges('has the verified skill', () => b.service.routing.has(id));
    expect((await routeOnB(task)).map((m) => m.skill_id)).toEqual([id]);

    // A call report of an established key (README, "Reputation": its unpaid reports weigh 1) moves the metrics.
    await a.sql(
      `UPDATE api_keys SET created_at = now() - interval '30 days', first_routed_at = now(), routed_days = 7,
              cohort = 'own-provider' WHERE name = 'provider'`,
    );
    const res = await a.call(
      'POST',
      '/api/discover/report',
      { skill_id: id, caller: 'agent', call_result: 'success', latency_ms: 120, satisfaction: 5 },
      { 'x-api-key': keyA },
    );
    expect(res.status).toBe(200);
    const [stats] = await a.sql<{ calls_30d: number }>(
      'SELECT calls_30d FROM skill_stats WHERE skill_id = $1',
      id,
    );
    expect(stats?.calls_30d).toBe(1);
    await bConverges(
      'ranks with calls_30d = 1',
      async () => (await routeOnB(task))[0]?.metrics.calls_30d === 1,
    );

    // Health checks suspend it, then resume it.
    skills.set('okapi', { kind: 'status', status: 503 });
    await statusBecomes(id, (s) => s === 'suspended');
    await bConverges('dropped the suspended skill', () => !b.service.routing.has(id));
    expect(await routeOnB(task)).toEqual([]);
    skills.set('okapi', { kind: 'healthy', respond: translate });
    await statusBecomes(id, (s) => s === 'active');
    await bConverges('has the resumed skill', () => b.service.routing.has(id));

    // An update by its owner: pending again, then failed against a broken endpoint.
    skills.set('okapi', { kind: 'status', status: 500 });
    const update = { ...skill, description: 'Translates okapi field notes.' };
    expect((await a.register(keyA, update)).status).toBe(200);
    await statusBecomes(id, (s) => s !== 'active');
    await bConverges('dropped the re-registered skill', () => !b.service.routing.has(id));
    await statusBecomes(id, (s) => s === 'verification_failed');
    expect(await routeOnB(task)).toEqual([]);
  }, 90_000);
});

describe('The watermark check finds what no notification announced', () => {
  it('When a skill is activated by hand with its changed_at stamped but no notification, then the watermark check adds it; when it is deleted by hand, the count check drops it', async () => {
    const skill = buildSkill({
      skill_id: 'tapir-tool',
      name: 'Tapir counter',
      description: 'Counts tapir footprints in photos.',
      capabilities: ['tapir'],
    });
    expect((await a.register(keyA, skill)).status).toBe(201);
    const updates = async () =>
      metricValue(await scrape(b.metricsUrl), 'skill_routing_index_updates_total', { cause: 'watermark' }) ??
      0;
    const before = await updates();
    await a.sql(
      `UPDATE skills SET status = 'active', changed_at = clock_timestamp() WHERE skill_id = 'tapir-tool'`,
    );
    expect(b.service.routing.has('tapir-tool')).toBe(false);
    await b.service.routingWorker.kick();
    expect(b.service.routing.has('tapir-tool')).toBe(true);
    expect((await routeOnB('tapir')).map((m) => m.skill_id)).toEqual(['tapir-tool']);
    expect(await updates()).toBeGreaterThan(before);

    await a.sql(`DELETE FROM skills WHERE skill_id = 'tapir-tool'`);
    // The first check that sees fewer active skills than the index could race a notification; the
    // second in a row reloads (the worker's own tick may have been the first, so only the outcome of
    // two checks is asserted).
    await b.service.routingWorker.kick();
    await b.service.routingWorker.kick();
    expect(b.service.routing.has('tapir-tool')).toBe(false);
    expect(await routeOnB('tapir')).toEqual([]);
  });
});

describe('When the change listener loses its connection', () => {
  it('Then routes are ranked in PostgreSQL until it is back, and a change made meanwhile is in the index once it reconnects', async () => {
    const skill = buildSkill({
      skill_id: 'quokka-tool',
      name: 'Quokka finder',
      description: 'Finds quokka burrows on maps.',
      capabilities: ['quokka'],
    });
    expect((await a.register(keyA, skill)).status).toBe(201);
    await a.sql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN skill_router_routing'`,
    );
    await waitFor('replica B to stop trusting its index', async () => !b.service.routing.current, 5000);
    // Written without a notification or a stamp: only a full load can see it.
    await a.sql(`UPDATE skills SET status = 'active' WHERE skill_id = 'quokka-tool'`);
    const metrics = await scrape(b.metricsUrl);
    const fromDatabase = metricValue(metrics, 'skill_route_rankings_total', { source: 'database' }) ?? 0;
    // While B is not current its answers come from PostgreSQL, which already has the change.
    expect(b.service.routing.current).toBe(false);
    expect((await routeOnB('quokka')).map((m) => m.skill_id)).toEqual(['quokka-tool']);
    expect(
      metricValue(await scrape(b.metricsUrl), 'skill_route_rankings_total', { source: 'database' }),
    ).toBe(fromDatabase + 1);
    await waitFor('replica B to reconnect and reload', async () => b.service.routing.current, 10_000);
    expect(b.service.routing.has('quokka-tool')).toBe(true);
    expect((await routeOnB('quokka')).map((m) => m.skill_id)).toEqual(['quokka-tool']);
  });
});
