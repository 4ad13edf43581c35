import path from 'node:path';
import { Client } from 'pg';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import {
  judgeShutdown,
  metricValue,
  readinessWhileHung,
  readyStatus,
  scrape,
  spawnService,
  startLoad,
  TcpProxy,
  testDatabaseUrl,
  waitFor,
  type ServiceProcess,
} from '@repo/service-kit/testing';
import { buildSkill } from './support/factories';

// Real skill-router processes (src/main.ts) whose PostgreSQL goes through a cuttable proxy: one shared
// by the tests, and one of its own for the test that shuts it down.
jest.setTimeout(90_000);

const databaseUrl = testDatabaseUrl('skill_router_operate_test');
let pg: { proxy: TcpProxy; url: string };
let svc: ServiceProcess;
let key: string;

function startService(): Promise<ServiceProcess> {
  return spawnService({
    cwd: path.join(__dirname, '..'),
    env: {
      DATABASE_URL: pg.url,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      WORKERS_ENABLED: 'false',
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      KEY_CREATION_LIMIT_PER_MINUTE: '1000',
      SHUTDOWN_TIMEOUT_MS: '15000',
      SHUTDOWN_DRAIN_DELAY_MS: '300',
    },
  });
}

async function post(
  pathname: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(svc.baseUrl + pathname, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  await resetDatabase(databaseUrl);
  await applyMigrations({
    databaseUrl,
    migrationsDir: path.join(__dirname, '../prisma/migrations'),
    log: { info: () => undefined, warn: () => undefined },
  });
  pg = await TcpProxy.forUrl(databaseUrl, 5432);
  svc = await startService();
  const created = await post('/api/auth/key', { name: 'ops-test' });
  expect(created.status).toBe(201);
  key = ((await created.json()) as { api_key: string }).api_key;
  // One active translator, as verification would leave it.
  const skill = buildSkill({
    skill_id: 'ops-translator',
    chains: [],
    pricing: { model: 'per_call', price_usd: 0 },
  });
  expect((await post('/api/discover/register', skill, { 'x-api-key': key })).status).toBe(201);
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  // Written as the service writes it, so the routing index of the service process hears it.
  await client.query(
    `UPDATE skills SET status = 'active', changed_at = clock_timestamp() WHERE skill_id = $1
     RETURNING pg_notify('skill_router_routing', skill_id)::text`,
    [skill.skill_id],
  );
  await client.end();
  await waitFor('the translator to be routed', async () => {
    const res = await post('/api/discover/route', { task: 'translate text' }, { 'x-api-key': key });
    return ((await res.json()) as { matches?: unknown[] }).matches?.length === 1;
  });
});
afterAll(async () => {
  await svc?.stop();
  await pg?.proxy.close();
});

describe('/metrics', () => {
  it('When route requests match, match nothing or are refused, then skill_routes_served_total counts each outcome and the latency histogram has the route', async () => {
    expect((await fetch(`${svc.baseUrl}/metrics`)).status).toBe(404); // only on the metrics port
    const before = await scrape(svc.metricsUrl);
    expect(
      (await post('/api/discover/route', { task: 'translate this text to french' }, { 'x-api-key': key }))
        .status,
    ).toBe(200);
    const none = await post(
      '/api/discover/route',
      { task: 'translate text', requirements: { chains: ['ethereum'] } },
      { 'x-api-key': key },
    );
    expect(((await none.json()) as { matches: unknown[] }).matches).toEqual([]);
    expect((await post('/api/discover/route', { task: 'translate' })).status).toBe(401);
    expect((await post('/api/discover/route', { nope: true }, { 'x-api-key': key })).status).toBe(400);
    const after = await scrape(svc.metricsUrl);
    const moved = (name: string, labels: Record<string, string>) =>
      (metricValue(after, name, labels) ?? 0) - (metricValue(before, name, labels) ?? 0);
    expect(moved('skill_routes_served_total', { outcome: 'matched' })).toBe(1);
    expect(moved('skill_routes_served_total', { outcome: 'no_match' })).toBe(1);
    expect(moved('skill_routes_served_total', { outcome: 'rejected' })).toBe(2);
    expect(metricValue(after, 'skill_routes_served_total', { outcome: 'failed' })).toBe(0);
    expect(moved('skill_route_matches_count', {})).toBe(2);
    expect(
      moved('http_request_duration_seconds_count', { route: '/api/discover/route', status: '200' }),
    ).toBe(2);
  });
});

describe('/readyz on dependency loss', () => {
  it('When PostgreSQL becomes unreachable, then /readyz answers 503; once it is back, 200 and routing works', async () => {
    await pg.proxy.cut();
    try {
      await waitFor('503 without PostgreSQL', async () => (await readyStatus(svc.baseUrl)) === 503, 10_000);
      expect((await fetch(`${svc.baseUrl}/livez`)).status).toBe(200);
    } finally {
      await pg.proxy.restore();
    }
    await waitFor('200 with PostgreSQL back', async () => (await readyStatus(svc.baseUrl)) === 200, 15_000);
    expect((await post('/api/discover/route', { task: 'translate text' }, { 'x-api-key': key })).status).toBe(
      200,
    );
  });

  it('When PostgreSQL hangs (connections accepted, never answered), then /readyz answers 503 within its 2 s timeout', async () => {
    expect(await readinessWhileHung(svc.baseUrl, pg.proxy)).toBeLessThan(5000);
  });
});

describe('Graceful shutdown', () => {
  // The test ends this process; the other tests keep the shared one.
  let dying: ServiceProcess;
  // A key of its own: the load spends hundreds of route requests in seconds, which would leave the
  // shared key over ROUTES_PER_KEY_PER_MINUTE for the tests that run after this one.
  let loadKey: string;
  beforeAll(async () => {
    dying = await startService();
    const created = await post('/api/auth/key', { name: 'ops-load' });
    loadKey = ((await created.json()) as { api_key: string }).api_key;
  });
  afterAll(() => dying?.stop());

  it('When SIGTERM arrives under routing load, then every request sent while ready is answered and the process exits 0', async () => {
    const load = startLoad(dying.baseUrl, 8, () => ({
      method: 'POST',
      path: '/api/discover/route',
      headers: { 'x-api-key': loadKey },
      body: { task: 'translate this text to german' },
    }));
    await waitFor('load running', () => load.results.filter((r) => r.status === 200).length >= 40);
    const signalAt = Date.now();
    dying.kill('SIGTERM');
    const exit = await dying.exited;
    const exitedAfterMs = Date.now() - signalAt;
    const results = await load.stop();
    const verdict = judgeShutdown(results, signalAt, load.unreadyAt());

    if (exit.code !== 0) console.error(dying.output().split('\n').slice(-30).join('\n'));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(load.unreadyHow()).toBe(503);
    expect(verdict.failures).toEqual([]);
    expect(verdict.inFlightCompleted).toBeGreaterThan(0);
    expect(results.filter((r) => r.status !== undefined && r.status !== 200 && r.status !== 429)).toEqual([]);
    console.info(
      `skill-router shutdown: ${results.length} requests, ${verdict.completed} answered (${verdict.inFlightCompleted} in flight at SIGTERM), ${verdict.refusedAfterUnready} refused after readiness failed, exit after ${exitedAfterMs} ms`,
    );
  });
});
