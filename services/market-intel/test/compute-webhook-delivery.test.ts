import { createServer, type Server } from 'node:http';
import { waitFor } from '@repo/queue/testing';
import { useComputeApi, HEALTHY, IDEA, json } from './support/compute-api';

// Webhook URLs of compute jobs: refused at submission when they cannot be delivered safely.
const api = useComputeApi('market_intel_compute_webhook_delivery_test');
const { beat, healthStatus, post } = api;

describe('Webhook delivery', () => {
  let receiver: Server;
  beforeAll(async () => {
    receiver = createServer((_req, res) => res.end());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  it('When a webhook_url resolves to loopback outside the allowlist, then it is refused at submission with 422', async () => {
    const address = receiver.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const res = await post('/api/v1/prove/debate', {
      idea: IDEA,
      webhook_url: `http://localhost:${port}/hook`,
    });
    expect(res.status).toBe(422);
    expect(String((await json(res)).error)).toContain('loopback');
  });

  it('When a webhook_url host does not resolve, then 422 invalid_request instead of a 402, and an attached payment is not consumed', async () => {
    await beat(HEALTHY, null);
    await waitFor('healthy', async () => (await healthStatus()) === 200);
    // .invalid never resolves (RFC 6761); without a reachable DNS server it times out: refused either way.
    const webhook_url = 'https://no-such-host.invalid/hook';
    const unresolved = /host no-such-host\.invalid (does not resolve|did not resolve within)/;

    const unpaid = await post('/api/v1/forge/ideate', { webhook_url });
    expect(unpaid.status).toBe(422);
    expect(unpaid.headers.get('x402-version')).toBeNull();
    expect(await json(unpaid)).toEqual({
      error: expect.stringMatching(unresolved),
      code: 'invalid_request',
      details: {
        issues: [{ path: 'body.webhook_url', code: 'custom', message: expect.stringMatching(unresolved) }],
      },
      requestId: expect.any(String),
    });

    const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
    const paid = await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA, webhook_url }, signature);
    expect(paid.status).toBe(422);
    expect(await json(paid)).toMatchObject({
      code: 'invalid_request',
      error: expect.stringMatching(unresolved),
    });
    expect(await api.h.paymentRows(signature)).toEqual([]);
  });
});
