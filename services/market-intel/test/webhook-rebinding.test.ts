import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupFunction } from '@repo/ssrf-guard';
import { createLogger } from '@repo/service-kit';
import { waitFor } from '@repo/service-kit/testing';
import { createWebhookDispatcher } from '../src/entry-points/workers/webhook-dispatcher';
import { startHarness, type Harness } from './support/harness';

// A webhook URL is checked when the job is submitted and again at every connection (README,
// "Webhooks (market-intel)"): a host that resolved to a public address then rebinds to a private one
// is refused at delivery, and nothing reaches the private address.
let h: Harness;
let receiver: Server;
let hits = 0;

beforeAll(async () => {
  h = await startHarness('market_intel_webhook_rebinding_test');
  receiver = createServer((_req, res) => {
    hits += 1;
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await h?.close();
});

describe('webhook delivery', () => {
  it('When the webhook host rebinds to a private address at delivery, then nothing reaches it and the delivery is refused for good', async () => {
    const port = (receiver.address() as AddressInfo).port;
    // DNS stand-in: the name now answers with a loopback address (it passed the check at submission).
    const rebound: LookupFunction = (_hostname, _options, callback) =>
      setImmediate(() => callback(null, [{ address: '127.0.0.1', family: 4 }]));
    const dispatcher = createWebhookDispatcher(
      h.db,
      {
        secret: 'a-webhook-secret-of-32-bytes-or-more',
        policy: { allowlist: [] },
        timeoutMs: 2000,
        maxAttempts: 5,
        retryBaseMs: 10,
        pollIntervalMs: 20,
        lookup: rebound,
      },
      createLogger({ name: 'webhook-rebinding-test', level: 'silent' }),
    );
    const row = await h.db.webhookDelivery.create({
      data: {
        jobId: 'job_rebinding_test_0000000000',
        url: `http://hooks.rebinding.test:${port}/done`,
        body: JSON.stringify({ jobId: 'job_rebinding_test_0000000000', status: 'completed', result: {} }),
      },
      select: { id: true },
    });
    dispatcher.start();
    try {
      const failed = await waitFor('the delivery refused', async () => {
        const d = await h.db.webhookDelivery.findUnique({ where: { id: row.id } });
        return d?.status === 'failed' ? d : undefined;
      });
      expect(failed.attempts).toBe(1); // refused for good: a blocked address is not retried
      expect(failed.lastError).toMatch(/127\.0\.0\.1/);
      expect(hits).toBe(0);
    } finally {
      await dispatcher.stop();
    }
  });
});
