import request from 'supertest';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';

// The dashboard's read endpoints (README, "Dashboard"): session only, scoped to the user, bounded.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_dashboard_api_test');
});
afterAll(async () => {
  await h?.close();
});

const HOUR_MS = 3_600_000;

async function owner() {
  const user = await signUp(h);
  const product = await createProduct(user);
  const context = await createContext(user, product.id);
  const other = await createContext(user, product.id, {
    name: 'Signup',
    negative_signals: ['captcha_failed'],
  });
  const signals = [
    ...Array.from({ length: 3 }, () => ({
      type: 'payment_failed',
      payload: { code: 'card_declined' },
      context_id: context.id,
    })),
    ...Array.from({ length: 5 }, () => ({ type: 'checkout_completed', context_id: context.id })),
    { type: 'captcha_failed', context_id: other.id },
    // Two contexts and no context_id: the signal reaches none.
    { type: 'page_view', payload: { path: '/' } },
  ];
  await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send(signals).expect(200);
  return { user, product, context, other };
}

test('When no session is sent, then every dashboard endpoint answers 401', async () => {
  for (const path of [
    '/api/dashboard/types?context_id=6f1f2c1e-0000-4000-8000-000000000000',
    '/api/dashboard/signals',
    '/api/dashboard/analysis',
    '/api/dashboard/plans',
  ]) {
    const res = await request(h.baseUrl).get(path);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: 'unauthorized' });
  }
});

test("When a context's breakdown is asked, then its types come counted, most frequent first, only for its owner", async () => {
  const { user, context } = await owner();
  const res = await user.agent.get(`/api/dashboard/types?context_id=${context.id}`).expect(200);
  expect(res.body).toEqual([
    { type: 'checkout_completed', sentiment: 'positive', count: 5 },
    { type: 'payment_failed', sentiment: 'negative', count: 3 },
  ]);
  // A range before the signals holds none.
  const before = new Date(Date.now() - 48 * HOUR_MS).toISOString();
  const old = await user.agent
    .get(
      `/api/dashboard/types?context_id=${context.id}&from=${before}&to=${new Date(Date.now() - 24 * HOUR_MS).toISOString()}`,
    )
    .expect(200);
  expect(old.body).toEqual([]);

  const stranger = await signUp(h);
  const foreign = await stranger.agent.get(`/api/dashboard/types?context_id=${context.id}`);
  expect(foreign.status).toBe(404);
  expect(foreign.body).toMatchObject({ code: 'not_found' });
});

test('When the breakdown gets a bad query, then 400 names the problem', async () => {
  const { user, context } = await owner();
  const now = Date.now();
  const cases = [
    `context_id=${context.id}&from=${new Date(now).toISOString()}&to=${new Date(now - HOUR_MS).toISOString()}`,
    `context_id=${context.id}&from=${new Date(now - 400 * 24 * HOUR_MS).toISOString()}&to=${new Date(now).toISOString()}`,
    'context_id=not-a-uuid',
    '',
    `context_id=${context.id}&sectr=fintech`,
  ];
  for (const query of cases) {
    const res = await user.agent.get(`/api/dashboard/types?${query}`);
    expect({ query, status: res.status, code: res.body.code }).toEqual({
      query,
      status: 400,
      code: 'invalid_request',
    });
    expect(res.body.details.issues.length).toBeGreaterThan(0);
  }
  const backwards = await user.agent.get(
    `/api/dashboard/types?context_id=${context.id}&from=${new Date(now).toISOString()}&to=${new Date(now - HOUR_MS).toISOString()}`,
  );
  expect(backwards.body).toMatchObject({
    error: 'query parameter `from` must be before `to`',
    details: { issues: [{ path: 'query.from', code: 'custom', message: 'must be before `to`' }] },
  });
});

test("When the latest signals are asked, then the user's come last received first, unrouted ones with a null context, bounded", async () => {
  const { user, product, context } = await owner();
  const res = await user.agent.get('/api/dashboard/signals?limit=5').expect(200);
  expect(res.body).toHaveLength(5);
  const all = await user.agent.get(`/api/dashboard/signals?product_id=${product.id}&limit=100`).expect(200);
  expect(all.body).toHaveLength(10);
  const ids = (all.body as { id: string }[]).map((s) => BigInt(s.id));
  expect([...ids].sort((a, b) => (b > a ? 1 : b < a ? -1 : 0))).toEqual(ids);
  const times = (all.body as { received_at: string }[]).map((s) => Date.parse(s.received_at));
  expect([...times].sort((a, b) => b - a)).toEqual(times);
  expect(all.body).toContainEqual(
    expect.objectContaining({
      type: 'page_view',
      context_id: null,
      sentiment: 'neutral',
      payload_preview: '{"path": "/"}',
    }),
  );
  expect(all.body).toContainEqual(
    expect.objectContaining({ type: 'payment_failed', context_id: context.id, sentiment: 'negative' }),
  );
  // Another user's list holds none of them.
  const stranger = await signUp(h);
  expect((await stranger.agent.get('/api/dashboard/signals').expect(200)).body).toEqual([]);
  for (const query of ['limit=0', 'limit=101', 'product_id=x', 'limit=5&extra=1'])
    expect((await user.agent.get(`/api/dashboard/signals?${query}`)).status).toBe(400);
});

test('When a backdated signal arrives last, then it comes first in the latest signals, with its own time and its receipt time', async () => {
  const { user, product } = await owner();
  const backdated = new Date(Date.now() - 3 * 24 * HOUR_MS);
  const sentAt = Date.now();
  await request(h.baseUrl)
    .post('/api/signals')
    .set('x-api-key', product.apiKey)
    .send({ type: 'late_arrival', timestamp: backdated.toISOString() })
    .expect(200);
  const res = await user.agent.get(`/api/dashboard/signals?product_id=${product.id}&limit=3`).expect(200);
  const [first, second] = res.body as { type: string; created_at: string; received_at: string }[];
  expect(first).toMatchObject({ type: 'late_arrival', created_at: backdated.toISOString() });
  expect(Date.parse(first!.received_at)).toBeGreaterThanOrEqual(sentAt - 1000);
  // The signals sent before it are newer by their own time, yet listed after it.
  expect(Date.parse(second!.created_at)).toBeGreaterThan(backdated.getTime());
  const [row] = await h.db.$queryRawUnsafe<{ received_at: Date }[]>(
    "SELECT received_at FROM signals WHERE product_id = $1::uuid AND type = 'late_arrival'",
    product.id,
  );
  expect(first!.received_at).toBe(row!.received_at.toISOString());
});

test('When the analysis readiness is asked, then each context has its 24-hour count against the threshold and unrouted signals are counted', async () => {
  const { user, product, context, other } = await owner();
  const res = await user.agent.get('/api/dashboard/analysis').expect(200);
  expect(res.body).toEqual({
    min_signals: 5,
    window_hours: 24,
    contexts: [
      {
        context_id: context.id,
        product_id: product.id,
        name: 'Checkout',
        signals_24h: 8,
        due: true,
        last_analyzed_at: null,
      },
      {
        context_id: other.id,
        product_id: product.id,
        name: 'Signup',
        signals_24h: 1,
        due: false,
        last_analyzed_at: null,
      },
    ],
    unrouted: [{ product_id: product.id, name: 'Checkout app', signals_24h: 1, signals_7d: 1 }],
  });
  expect((await user.agent.get('/api/dashboard/analysis?x=1')).status).toBe(400);
});

test('When the plans are asked, then the four plans come cheapest first with their limits', async () => {
  const { user } = await owner();
  const res = await user.agent.get('/api/dashboard/plans').expect(200);
  expect(res.body.map((p: { plan: string }) => p.plan)).toEqual(['free', 'builder', 'growth', 'scale']);
  expect(res.body[0]).toEqual({
    plan: 'free',
    price_usd: 0,
    signals_per_month: 500,
    proposals_per_month: 3,
    deployments_per_month: 3,
    products: 1,
  });
});

test("When the dashboard loads Chart.js, then the package's browser build is served as JavaScript, and nothing else of the package", async () => {
  const res = await request(h.baseUrl).get('/vendor/chart.js/chart.umd.min.js').expect(200);
  expect(res.headers['content-type']).toMatch(/^application\/javascript|^text\/javascript/);
  expect(res.headers['content-security-policy']).toContain("script-src 'self'");
  expect(res.text.length).toBeGreaterThan(100_000);
  expect((await request(h.baseUrl).get('/vendor/chart.js/chart.cjs')).status).toBe(404);
  expect((await request(h.baseUrl).get('/vendor/chart.js/chart.umd.min.js.map')).status).toBe(404);
});
