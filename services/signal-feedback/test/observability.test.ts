import request from 'supertest';
import { createMetricsApp } from '@repo/service-kit';
import { loadConfig } from '../src/config';
import { createSignalFeedbackMetrics } from '../src/metrics';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';

let h: Harness;
const metrics = createSignalFeedbackMetrics();
beforeAll(async () => {
  h = await startHarness('signal_feedback_observability_test', { overrides: { metrics } });
});
afterAll(async () => h.close());

test('When signals are accepted and refused and a proposal is made, then /metrics counts them', async () => {
  const u = await signUp(h);
  const p = await createProduct(u);
  await createContext(u, p.id);
  const burst = Array.from({ length: 10 }, (_, i) => ({
    type: i % 2 ? 'payment_failed' : 'checkout_completed',
    payload: { code: 'x' },
  }));
  await request(h.baseUrl).post('/api/signals').set('x-api-key', p.apiKey).send(burst).expect(200);
  await request(h.baseUrl)
    .post('/api/signals')
    .set('x-api-key', p.apiKey)
    .send([{ type: '' }, { type: 'ok' }])
    .expect(400);
  await u.agent.post('/api/analysis/run').set('x-csrf-token', u.csrf).expect(200);
  expect((await request(h.baseUrl).get('/metrics')).status).toBe(404); // never on the public port
  const text = (await request(createMetricsApp(metrics)).get('/metrics')).text;
  expect(text).toMatch(/signals_accepted_total\{service="signal-feedback"\} 10/);
  expect(text).toMatch(/signals_refused_total\{reason="invalid",service="signal-feedback"\} 2/);
  expect(text).toMatch(/proposals_created_total\{source="evidence",service="signal-feedback"\} 1/);
  expect(text).toContain('http_request_duration_seconds_bucket');
});

describe('Configuration', () => {
  test('When DATABASE_URL is missing or a number is out of range, then loading fails naming each variable', () => {
    expect(() => loadConfig({ MAX_BATCH_SIZE: '0' })).toThrow(
      /DATABASE_URL[\s\S]*MAX_BATCH_SIZE|MAX_BATCH_SIZE[\s\S]*DATABASE_URL/,
    );
  });

  test('When only part of the LLM settings is given, then loading fails; when none, then the defaults apply', () => {
    expect(() =>
      loadConfig({ DATABASE_URL: 'postgresql://x/y', LLM_BASE_URL: 'http://127.0.0.1:1/v1' }),
    ).toThrow(/LLM_BASE_URL and LLM_MODEL/);
    const c = loadConfig({ DATABASE_URL: 'postgresql://x/y', LLM_MODEL: '' });
    expect(c).toMatchObject({
      PORT: 3002,
      MAX_BATCH_SIZE: 1000,
      ANALYSIS_INTERVAL_MS: 600_000,
      API_KEY_CACHE_TTL_MS: 5000,
    });
    expect(c.LLM_MODEL).toBeUndefined();
  });
});
