import path from 'node:path';
import { Client } from 'pg';
import {
  judgeShutdown,
  metricValue,
  readinessWhileHung,
  readyStatus,
  scrape,
  spawnService,
  startLoad,
  TcpProxy,
  waitFor,
  type ServiceProcess,
} from '@repo/service-kit/testing';
import { freshDatabase } from './support/harness';

// One real signal-feedback process (src/main.ts) whose PostgreSQL goes through a cuttable proxy.
jest.setTimeout(90_000);

let databaseUrl: string;
let pg: { proxy: TcpProxy; url: string };
let svc: ServiceProcess;
let apiKey: string;

async function countSignals(): Promise<number> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('SELECT count(*)::text AS n FROM signals');
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

/** A signal-feedback process (src/main.ts) on `url`. */
function spawnSignalFeedback(url: string): Promise<ServiceProcess> {
  return spawnService({
    cwd: path.join(__dirname, '..'),
    env: {
      DATABASE_URL: url,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      ARGON2_MEMORY_KIB: '4096',
      ANALYSIS_INTERVAL_MS: '0',
      SIGNUP_MAX_PER_IP_PER_HOUR: '100000',
      SHUTDOWN_TIMEOUT_MS: '15000',
      SHUTDOWN_DRAIN_DELAY_MS: '300',
    },
  });
}

beforeAll(async () => {
  databaseUrl = await freshDatabase('signal_feedback_operate_test');
  pg = await TcpProxy.forUrl(databaseUrl, 5432);
  svc = await spawnSignalFeedback(pg.url);
  const signup = await fetch(`${svc.baseUrl}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `ops${Date.now()}@example.com`, password: 'correct horse battery' }),
  });
  expect(signup.status).toBe(201);
  const cookie = signup.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const { csrf_token: csrf } = (await signup.json()) as { csrf_token: string };
  const product = await fetch(`${svc.baseUrl}/api/products`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf },
    body: JSON.stringify({ name: 'Checkout app' }),
  });
  expect(product.status).toBe(200);
  apiKey = ((await product.json()) as { api_key: string }).api_key;
});
afterAll(async () => {
  await svc?.stop();
  await pg?.proxy.close();
});

const postSignals = (body: unknown) =>
  fetch(`${svc.baseUrl}/api/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(body),
  });

describe('/readyz on dependency loss', () => {
  it('When PostgreSQL becomes unreachable, then /readyz answers 503 and signals are refused with 503 and Retry-After; once it is back, 200 and signals are stored again', async () => {
    expect(await readyStatus(svc.baseUrl)).toBe(200);
    await pg.proxy.cut();
    await waitFor('503 without PostgreSQL', async () => (await readyStatus(svc.baseUrl)) === 503, 10_000);
    expect((await fetch(`${svc.baseUrl}/livez`)).status).toBe(200);
    const refused = await postSignals({ type: 'checkout_completed' });
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '5']);
    expect(await refused.json()).toMatchObject({
      code: 'service_unavailable',
      error: expect.any(String),
      requestId: expect.any(String),
    });
    await pg.proxy.restore();
    await waitFor('200 with PostgreSQL back', async () => (await readyStatus(svc.baseUrl)) === 200, 15_000);
    const res = await postSignals({ type: 'checkout_completed' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: 1 });
  });

  it('When PostgreSQL hangs (connections accepted, never answered), then /readyz answers 503 within its 2 s timeout', async () => {
    expect(await readinessWhileHung(svc.baseUrl, pg.proxy)).toBeLessThan(5000);
  });
});

describe('/metrics', () => {
  it('When signals are accepted and refused, then signals_accepted_total and signals_refused_total{reason} move by as many', async () => {
    const before = await scrape(svc.metricsUrl);
    expect((await postSignals([{ type: 'a' }, { type: 'b' }, { type: 'c' }])).status).toBe(200);
    expect((await postSignals([{ type: '' }, { type: 'ok' }])).status).toBe(400);
    const after = await scrape(svc.metricsUrl);
    const moved = (name: string, labels: Record<string, string> = {}) =>
      (metricValue(after, name, labels) ?? 0) - (metricValue(before, name, labels) ?? 0);
    expect(moved('signals_accepted_total')).toBe(3);
    expect(moved('signals_refused_total', { reason: 'invalid' })).toBe(2);
    expect(moved('http_request_duration_seconds_count', { route: '/api/signals', status: '200' })).toBe(1);
  });
});

describe('Graceful shutdown', () => {
  let victim: ServiceProcess;
  // A process of its own, so the other tests keep theirs whatever the order.
  beforeAll(async () => {
    victim = await spawnSignalFeedback(databaseUrl);
  });
  afterAll(() => victim.stop());

  it('When SIGTERM arrives while signals pour in, then every request sent while ready is answered, every accepted signal is in the database, and the process exits 0', async () => {
    const svc = victim;
    const stored = await countSignals();
    const load = startLoad(svc.baseUrl, 8, (i) => ({
      method: 'POST',
      path: '/api/signals',
      headers: { 'x-api-key': apiKey },
      body: { type: i % 2 ? 'payment_failed' : 'checkout_completed', payload: { i } },
    }));
    await waitFor('load running', () => load.results.filter((r) => r.status === 200).length >= 40);
    const signalAt = Date.now();
    svc.kill('SIGTERM');
    const exit = await svc.exited;
    const exitedAfterMs = Date.now() - signalAt;
    const results = await load.stop();
    const verdict = judgeShutdown(results, signalAt, load.unreadyAt());
    const accepted = results
      .filter((r) => r.status === 200)
      .reduce((sum, r) => sum + ((r.body as { received?: number }).received ?? 0), 0);

    if (exit.code !== 0) console.error(svc.output().split('\n').slice(-30).join('\n'));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(load.unreadyAt()).toBeGreaterThanOrEqual(signalAt);
    expect(load.unreadyHow()).toBe(503); // readiness failed while the port still served (the drain delay)
    expect(verdict.failures).toEqual([]);
    expect(verdict.inFlightCompleted).toBeGreaterThan(0);
    expect(await countSignals()).toBe(stored + accepted);
    console.info(
      `signal-feedback shutdown: ${results.length} requests, ${accepted} signals accepted, ${verdict.inFlightCompleted} in flight at SIGTERM, ${verdict.refusedAfterUnready} refused after readiness failed, exit after ${exitedAfterMs} ms`,
    );
  });
});
