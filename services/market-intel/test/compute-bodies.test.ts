import { waitFor } from '@repo/queue/testing';
import { useComputeApi, HEALTHY, IDEA, json } from './support/compute-api';

// Compute request bodies are validated before any payment is asked or taken.
const api = useComputeApi('market_intel_compute_bodies_test');
const { beat, healthStatus, post, jobRows } = api;

describe('Compute bodies (422, never charged)', () => {
  beforeAll(async () => {
    await beat(HEALTHY, null);
    await waitFor('healthy', async () => (await healthStatus()) === 200);
  });

  const bad: [string, string, unknown, string][] = [
    ['prove without idea', '/api/v1/prove/debate', {}, 'body.idea'],
    ['prove with a 9-character idea', '/api/v1/prove/debate', { idea: 'too short' }, 'body.idea'],
    [
      'prove with an idea over 10000 characters',
      '/api/v1/prove/debate',
      { idea: 'x'.repeat(10_001) },
      'body.idea',
    ],
    [
      'a session_config budget outside the enum',
      '/api/v1/prove/debate',
      { idea: IDEA, session_config: { budget: '$7K' } },
      'body.session_config',
    ],
    [
      'a session_config object with an extra property',
      '/api/v1/forge/ideate',
      { session_config: { profile: 'Solo', mood: 'great' } },
      'body.session_config.mood',
    ],
    [
      'a session_config string with an unknown line',
      '/api/v1/forge/ideate',
      { session_config: 'Profile: Solo\nColour: blue' },
      'body.session_config',
    ],
    [
      'a session_config string whose Timeline is outside the enum',
      '/api/v1/forge/ideate',
      { session_config: 'Timeline: 1 day' },
      'body.session_config.timeline',
    ],
    [
      'a session_config string over 5000 characters',
      '/api/v1/forge/ideate',
      { session_config: `Signal: ${'x'.repeat(5000)}` },
      'body.session_config',
    ],
    [
      'a founder_signal over 2000 characters',
      '/api/v1/forge/ideate',
      { session_config: { founder_signal: 'x'.repeat(2001) } },
      'body.session_config.founder_signal',
    ],
    [
      'forge context over 10000 characters',
      '/api/v1/forge/ideate',
      { context: 'x'.repeat(10_001) },
      'body.context',
    ],
    ['forge sectors that are not tags', '/api/v1/forge/ideate', { sectors: ['Fin Tech!'] }, 'body.sectors.0'],
    [
      'a webhook_url that is not a URL',
      '/api/v1/prove/debate',
      { idea: IDEA, webhook_url: 'not a url' },
      'body.webhook_url',
    ],
    ['a JSON array instead of an object', '/api/v1/forge/ideate', [], 'body'],
  ];
  it.each(bad)(
    'When the body has %s, then 422 invalid_request with the field error, before any 402',
    async (_name, path, body, field) => {
      const res = await post(path, body);
      expect(res.status).toBe(422);
      const answer = await json(res);
      expect(answer).toMatchObject({
        code: 'invalid_request',
        error: expect.any(String),
        requestId: expect.any(String),
      });
      expect((answer.details as { issues: { path: string }[] }).issues.map((d) => d.path)).toContain(field);
      // In words, never the parser's wording.
      expect(answer.error).not.toMatch(/Invalid input|expected [a-z]+, received|Too (small|big)/);
    },
  );

  it('When a paid request has an invalid body, then 422 and the payment is not consumed: the same signature then buys a valid job', async () => {
    const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
    const bad = await api.h.postWithProof('/api/v1/prove/debate', { idea: 'short' }, signature);
    expect(bad.status).toBe(422);
    expect(await api.h.paymentRows(signature)).toEqual([]);
    const before = await jobRows();
    const good = await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
    expect(good.status).toBe(202);
    expect(await jobRows()).toBe(before + 1);
  });

  it('When the body is not JSON, then 400 invalid_json (nothing charged)', async () => {
    const res = await post('/api/v1/forge/ideate', '{"sectors": [');
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 'invalid_json' });
  });

  it('When a webhook_url points at loopback or the metadata address, then 422 naming the address, before any payment', async () => {
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/x',
      'http://10.1.2.3/x',
    ]) {
      const res = await post('/api/v1/prove/debate', { idea: IDEA, webhook_url: url });
      expect(res.status).toBe(422);
      const body = await json(res);
      expect(body).toMatchObject({
        code: 'invalid_request',
        details: { issues: [{ path: 'body.webhook_url' }] },
      });
      expect(String(body.error)).toMatch(/loopback|metadata|private|link-local/);
    }
  });
});
