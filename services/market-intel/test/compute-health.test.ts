import { waitFor } from '@repo/queue/testing';
import { useComputeApi, HEALTHY, IDEA, json } from './support/compute-api';

// The compute preflight and /api/v1/health, from the runners' heartbeats.
const api = useComputeApi('market_intel_compute_health_test');
const { beat, beatHealthy, healthWhen, withFreshReplica } = api;

describe('Health and the compute preflight', () => {
  it('When no runner has sent a heartbeat, then a compute POST answers 503 upstream with Retry-After 30 and asks for no payment', async () => {
    // The harness' service keeps other tests' heartbeats for 60 s: ask a replica that has heard none.
    await withFreshReplica(async (baseUrl) => {
      const res = await fetch(`${baseUrl}/api/v1/prove/debate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ idea: IDEA }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('30');
      expect(res.headers.get('x402-version')).toBeNull();
      const body = await json(res);
      expect(body).toMatchObject({
        code: 'service_unavailable',
        errorClass: 'upstream',
        error: expect.stringContaining('heartbeat'),
        requestId: expect.any(String),
      });
      expect(body).not.toHaveProperty('accepts');
    });
  });

  it('When the runner reports rejected LLM credentials, then health and the preflight answer 503 config with Retry-After 600 and the class of the failure, not its text, even with a payment attached', async () => {
    try {
      await beat({
        ok: false,
        latency_ms: 40,
        error: 'LLM rejected the API key sk-live-123 at https://llm.internal/v1 (401)',
        errorClass: 'config',
      });
      await waitFor(
        'config health',
        async () => (await fetch(`${api.h.baseUrl}/api/v1/health`)).headers.get('retry-after') === '600',
      );
      const health = await fetch(`${api.h.baseUrl}/api/v1/health`);
      expect(health.status).toBe(503);
      expect(await json(health)).toMatchObject({
        ok: false,
        llm: {
          ok: false,
          latency_ms: 40,
          error: 'the LLM is not configured or refuses our configuration (credentials, model or settings)',
        },
        search: null,
        errorClass: 'config',
      });
      const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
      const res = await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('600');
      const refusal = await json(res);
      expect(refusal).toMatchObject({ code: 'service_unavailable', errorClass: 'config' });
      expect(JSON.stringify(refusal)).not.toMatch(/sk-live|llm\.internal/);
      // Not taken, but seen: a retry after Retry-After counts its freshness from now.
      expect(await api.h.paymentRows(signature)).toEqual([
        { status: 'processing', endpoint: 'POST /api/v1/prove/debate' },
      ]);
    } finally {
      await beatHealthy();
    }
  });

  it('When a runner reaches its LLM and its search provider, then health is 200 with llm latency, search and server_time', async () => {
    await beat(HEALTHY, { ok: true, latency_ms: null, error: null, errorClass: null });
    // Health may still answer from the previous heartbeat (also 200 when it had no search provider).
    const { status, body } = await healthWhen('search reported', (b) => b.search !== null);
    expect(status).toBe(200);
    expect(body).toEqual({
      ok: true,
      llm: { ok: true, latency_ms: 12, error: null },
      search: { ok: true, error: null },
      server_time: expect.any(String),
    });
    expect(Math.abs(Date.parse(String(body.server_time)) - Date.now())).toBeLessThan(60_000);
  });

  it('When the search provider fails while the LLM works, then 503 upstream says the search provider is failing', async () => {
    try {
      await beat(HEALTHY, { ok: false, latency_ms: null, error: 'search timed out', errorClass: 'upstream' });
      // Health may still answer from the previous heartbeat (also 503 when it reported rejected credentials).
      const { status, body } = await healthWhen('search failure', (b) => b.search !== null && !b.ok);
      expect(status).toBe(503);
      expect(body).toMatchObject({
        ok: false,
        llm: { ok: true },
        search: { ok: false, error: 'the search provider is unreachable or failing' },
        errorClass: 'upstream',
      });
    } finally {
      await beatHealthy();
    }
  });
});
