import { createServer, type Server } from 'node:http';
import { Broker, type Delivery } from '@repo/queue';
import {
  COMPUTE_TOPOLOGY,
  StepCommand,
  type JobEvent,
  type RunnerHeartbeat,
  type UpstreamHealth,
} from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
import { closeServer, createLogger } from '@repo/service-kit';
import { createMarketIntelService } from '../src/service';
import { buildReport, startHarness, type Harness } from './support/harness';

// The Compute API's edge as an agent sees it, with this test playing the runner over the real
// RabbitMQ protocol (heartbeats in, step commands out). The full pipelines run in compute-e2e.test.ts.
let h: Harness;
let runner: Broker;
const steps: Delivery[] = [];
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const HEALTHY: UpstreamHealth = { ok: true, latency_ms: 12, error: null, errorClass: null };

async function beat(
  llm: UpstreamHealth,
  search: UpstreamHealth | null = null,
  runnerId = 'test-runner',
): Promise<void> {
  const heartbeat: RunnerHeartbeat = {
    v: 1,
    runnerId,
    at: new Date().toISOString(),
    intervalMs: 5000,
    llm,
    search,
    inFlightSteps: 0,
  };
  await runner.publish(COMPUTE_TOPOLOGY.exchanges.heartbeat, '', heartbeat, { persistent: false });
}

async function healthStatus(): Promise<number> {
  return (await fetch(`${h.baseUrl}/api/v1/health`)).status;
}

/** Reports the runner healthy (no search provider) and waits until health says so. */
async function beatHealthy(): Promise<void> {
  await beat(HEALTHY, null);
  await waitFor('healthy', async () => {
    const { status, body } = await healthNow();
    return status === 200 && body.search === null;
  });
}

async function healthNow(): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${h.baseUrl}/api/v1/health`);
  return { status: res.status, body: await json(res) };
}

/** The first health answer whose body satisfies `ready` (a heartbeat is applied asynchronously). */
async function healthWhen(
  what: string,
  ready: (body: Record<string, unknown>) => boolean,
): Promise<{ status: number; body: Record<string, unknown> }> {
  return waitFor(what, async () => {
    const answer = await healthNow();
    return ready(answer.body) ? answer : undefined;
  });
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(h.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

async function jobRows(): Promise<number> {
  return h.service.jobs.countByStatus().then((c) => Object.values(c).reduce((a, b) => a + b, 0));
}

/**
 * Runs `fn` against a market-intel replica started now on the same database and vhost (so it has
 * heard no heartbeat yet), then stops it.
 */
async function withFreshReplica(fn: (baseUrl: string) => Promise<void>): Promise<void> {
  const replica = await createMarketIntelService(
    { ...h.config, INSTANCE_ID: `test-replica-${process.pid}` },
    createLogger({ name: 'replica', level: 'silent' }),
  );
  const server = createServer(replica.app);
  try {
    await replica.start();
    await replica.broker.waitForConnection();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    await fn(`http://127.0.0.1:${address.port}`);
  } finally {
    replica.markShuttingDown();
    if (server.listening) await closeServer(server);
    await replica.stop();
  }
}

const IDEA = 'A reconciliation copilot for mid-size fintechs that matches instant payments to invoices.';

beforeAll(async () => {
  h = await startHarness('market_intel_compute_api_test', {
    env: {
      WEBHOOK_SECRET: 'test-webhook-secret-0123456789',
      RUNNER_STALE_AFTER_MS: '60000',
      X402_DEVNET_COMPUTE_PER_DAY: '2',
      // The test ticks the job watchdog itself.
      JOB_WATCHDOG_TICK_MS: '3600000',
    },
  });
  await h.reports.importReport(buildReport(), 'import');
  runner = await Broker.connect({ url: h.amqpUrl, connectionName: 'test runner', logger: silent });
  await runner.waitForConnection();
  for (const queue of [COMPUTE_TOPOLOGY.queues.starts, COMPUTE_TOPOLOGY.queues.steps]) {
    await runner.consume(queue, async (d) => (steps.push(d), 'ack'), { prefetch: 50 });
  }
}, 120_000);
afterAll(async () => {
  await runner?.close(1000);
  await h?.close();
});

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
        async () => (await fetch(`${h.baseUrl}/api/v1/health`)).headers.get('retry-after') === '600',
      );
      const health = await fetch(`${h.baseUrl}/api/v1/health`);
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
      const signature = await h.transfer({ amountAtomic: 25_000_000n });
      const res = await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('600');
      const refusal = await json(res);
      expect(refusal).toMatchObject({ code: 'service_unavailable', errorClass: 'config' });
      expect(JSON.stringify(refusal)).not.toMatch(/sk-live|llm\.internal/);
      // Not taken, but seen: a retry after Retry-After counts its freshness from now.
      expect(await h.paymentRows(signature)).toEqual([
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
      'body.session_config',
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
    'When the body has %s, then 422 validation_failed with the field error, before any 402',
    async (_name, path, body, field) => {
      const res = await post(path, body);
      expect(res.status).toBe(422);
      const answer = await json(res);
      expect(answer).toMatchObject({
        code: 'validation_failed',
        error: expect.any(String),
        requestId: expect.any(String),
      });
      expect((answer.details as { path: string }[]).map((d) => d.path)).toContain(field);
    },
  );

  it('When a paid request has an invalid body, then 422 and the payment is not consumed: the same signature then buys a valid job', async () => {
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const bad = await h.postWithProof('/api/v1/prove/debate', { idea: 'short' }, signature);
    expect(bad.status).toBe(422);
    expect(await h.paymentRows(signature)).toEqual([]);
    const before = await jobRows();
    const good = await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
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
      expect(body).toMatchObject({ code: 'validation_failed', details: [{ path: 'body.webhook_url' }] });
      expect(String(body.error)).toMatch(/loopback|metadata|private|link-local/);
    }
  });
});

describe('Paid jobs', () => {
  beforeAll(async () => {
    await beat(HEALTHY, null);
    await waitFor('healthy', async () => (await healthStatus()) === 200);
  });

  it('When no X-PAYMENT is sent to a healthy compute endpoint, then 402 with the spec price and x402-version 1', async () => {
    const res = await post('/api/v1/forge/ideate', {});
    expect(res.status).toBe(402);
    expect(res.headers.get('x402-version')).toBe('1');
    const body = await json(res);
    expect(body).toMatchObject({
      x402Version: 1,
      accepts: [
        {
          scheme: 'exact',
          network: 'solana',
          maxAmountRequired: '15000000',
          payTo: h.ledger.networks.solana.merchantTokenAccount,
        },
      ],
    });
  });

  it('When a prove debate is paid, then 202 pending with statusUrl, etaMinutes 60 and a proveSessionId, the job row, and one step 0 message with the resolved session_config', async () => {
    steps.length = 0;
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const res = await h.postWithProof(
      '/api/v1/prove/debate',
      { idea: IDEA, session_config: 'Profile: Solo\nBudget: $5K\nSignal: ex-banker' },
      signature,
    );
    expect(res.status).toBe(202);
    expect(res.headers.get('x-payment-response')).toBeTruthy();
    const body = await json(res);
    expect(body).toEqual({
      jobId: expect.stringMatching(/^job_[A-Za-z0-9_-]{22}$/),
      status: 'pending',
      statusUrl: `/api/v1/jobs/${String(body.jobId)}`,
      etaMinutes: 60,
      proveSessionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(res.headers.get('location')).toBe(body.statusUrl);

    const job = await json(await fetch(h.baseUrl + String(body.statusUrl)));
    expect(job).toEqual({
      jobId: body.jobId,
      endpoint: 'POST /api/v1/prove/debate',
      status: 'pending',
      progressPct: 0,
      result: null,
      error: null,
      createdAt: expect.any(String),
      completedAt: null,
      txHash: signature,
      refund: null,
    });
    await waitFor('step 0 message', () => steps.some((d) => (d.body as StepCommand).jobId === body.jobId));
    const command = StepCommand.parse(steps.find((d) => (d.body as StepCommand).jobId === body.jobId)?.body);
    expect(command).toEqual({
      v: 1,
      jobId: body.jobId,
      kind: 'prove',
      stepIndex: 0,
      state: null,
      input: {
        idea: IDEA,
        proveSessionId: body.proveSessionId,
        session_config: {
          profile: 'Solo',
          budget: '$5K',
          timeline: '4-8 weeks',
          revenue_threshold: '$100K/year',
          founder_signal: 'ex-banker',
        },
      },
    });
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'POST /api/v1/prove/debate' },
    ]);
    // The publish is not awaited by the request: its row is deleted once the broker confirmed it.
    await waitFor('the outbox row deleted', async () => (await h.service.outbox.pending()) === 0);
  });

  it('When a forge ideation is paid, then its step 0 carries the latest scout data of the requested sectors and the spec defaults', async () => {
    steps.length = 0;
    const signature = await h.transfer({ amountAtomic: 15_000_000n });
    const res = await h.postWithProof(
      '/api/v1/forge/ideate',
      { sectors: ['fintech', 'fintech', 'unknown-sector'], context: 'B2B only' },
      signature,
    );
    expect(res.status).toBe(202);
    const body = await json(res);
    expect(body).toMatchObject({ status: 'pending', etaMinutes: 30 });
    expect(body).not.toHaveProperty('proveSessionId');
    await waitFor('step 0 message', () => steps.some((d) => (d.body as StepCommand).jobId === body.jobId));
    const command = StepCommand.parse(steps.find((d) => (d.body as StepCommand).jobId === body.jobId)?.body);
    const input = command.input as {
      sectors: string[];
      context: string;
      product_modes: string[];
      session_config: unknown;
      scout: { sector: string; gaps: unknown[] }[];
    };
    expect(input.sectors).toEqual(['fintech', 'unknown-sector']);
    expect(input.context).toBe('B2B only');
    expect(input.product_modes).toEqual([]);
    expect(input.session_config).toEqual({
      profile: 'Small Team (2-3)',
      budget: '$10K',
      timeline: '4-8 weeks',
      revenue_threshold: '$100K/year',
      founder_signal: null,
    });
    expect(input.scout.map((s) => s.sector)).toEqual(['fintech']);
    expect(input.scout[0]?.gaps).toHaveLength(2);
  });

  it('When the same signature is sent again to a compute endpoint, then 409 with the existing jobId and no second job', async () => {
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const first = await json(await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature));
    const before = await jobRows();
    const again = await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
    expect(again.status).toBe(409);
    expect(await json(again)).toMatchObject({ code: 'payment_conflict', details: { jobId: first.jobId } });
    const other = await h.postWithProof('/api/v1/forge/ideate', {}, signature);
    expect(other.status).toBe(400);
    const reused = await json(other);
    expect(reused).toMatchObject({ code: 'payment_reused' });
    // Where the payment went is not the presenter's business.
    expect(reused).not.toHaveProperty('details');
    expect(JSON.stringify(reused)).not.toContain('prove/debate');
    expect(await jobRows()).toBe(before);
  });

  it("When a watcher of the chain presents the payer's signature with its own body, then 409 without the jobId (which is all GET /jobs/{id} asks), and no job", async () => {
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const paid = await json(await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature));
    expect(paid.jobId).toEqual(expect.any(String));
    const before = await jobRows();
    const stolen = await h.postWithProof(
      '/api/v1/prove/debate',
      { idea: 'A different idea from someone who saw the transfer land on the merchant account.' },
      signature,
    );
    expect(stolen.status).toBe(409);
    const body = await json(stolen);
    expect(body).toMatchObject({ code: 'payment_conflict' });
    expect(body).not.toHaveProperty('details');
    expect(JSON.stringify(body)).not.toContain(String(paid.jobId));
    expect(await jobRows()).toBe(before);
  });

  it('When a compute endpoint is paid the Data API price, then 400 amount_mismatch and no job', async () => {
    const before = await jobRows();
    const signature = await h.transfer({ amountAtomic: 100_000n });
    const res = await h.postWithProof('/api/v1/forge/ideate', {}, signature);
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 'amount_mismatch' });
    expect(await jobRows()).toBe(before);
  });

  it('When a payer starts more devnet compute jobs in a day than allowed, then 429 with Retry-After, no job, and the payment is not consumed; mainnet jobs are not limited', async () => {
    const devnetForge = '/api/v1/forge/ideate?network=devnet';
    for (let i = 0; i < 2; i += 1) {
      const signature = await h.transfer({ amountAtomic: 15_000_000n, network: 'solana-devnet' });
      expect((await h.postWithProof(devnetForge, {}, signature, 'solana-devnet')).status).toBe(202);
    }
    const before = await jobRows();
    const third = await h.transfer({ amountAtomic: 15_000_000n, network: 'solana-devnet' });
    const refused = await h.postWithProof(devnetForge, {}, third, 'solana-devnet');
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(86_000);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(refused.headers.get('x-payment-response')).toBeNull();
    expect(refused.headers.get('payment-response')).toBeNull();
    expect(await json(refused)).toMatchObject({
      code: 'rate_limited',
      details: { limit: 'payer_per_day', perDay: 2 },
    });
    expect(await jobRows()).toBe(before);
    // Verified but not consumed: the same payment starts the job once the day has passed.
    expect(await h.paymentRows(third)).toEqual([
      { status: 'verified', endpoint: 'POST /api/v1/forge/ideate' },
    ]);

    const mainnet = await h.transfer({ amountAtomic: 15_000_000n });
    expect((await h.postWithProof('/api/v1/forge/ideate', {}, mainnet)).status).toBe(202);
  });

  it('When no runner starts a paid job, then the watchdog publishes its first step again after the republish time, once, and fails it as stalled after the fail time', async () => {
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const res = await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
    expect(res.status).toBe(202);
    const jobId = String((await json(res)).jobId);
    const commandsOf = () => steps.filter((d) => (d.body as StepCommand).jobId === jobId);
    await waitFor('the first step published', () => commandsOf().length === 1);
    expect(await h.service.watchdog.tick()).toEqual({ republished: 0, failed: 0 });

    // The test runner took the command and never reported back: twenty minutes pass.
    await h.db.$executeRawUnsafe(
      "UPDATE agent_jobs SET created_at = now() - interval '20 minutes', updated_at = now() - interval '20 minutes' WHERE id = $1",
      jobId,
    );
    expect(await h.service.watchdog.tick()).toEqual({ republished: 1, failed: 0 });
    await waitFor('the first step published again', () => commandsOf().length === 2);
    expect(commandsOf().map((d) => (d.body as StepCommand).stepIndex)).toEqual([0, 0]);
    expect(await h.service.watchdog.tick()).toEqual({ republished: 0, failed: 0 });

    // Three hours: failed, with the stable code.
    await h.db.$executeRawUnsafe(
      "UPDATE agent_jobs SET created_at = now() - interval '3 hours' WHERE id = $1",
      jobId,
    );
    expect(await h.service.watchdog.tick()).toEqual({ republished: 0, failed: 1 });
    expect(await json(await fetch(`${h.baseUrl}/api/v1/jobs/${jobId}`))).toMatchObject({
      status: 'failed',
      error: 'stalled: the job made no progress in time',
    });
  });

  it('When a job id is unknown, then GET /api/v1/jobs/{jobId} is 404 not_found', async () => {
    const res = await fetch(`${h.baseUrl}/api/v1/jobs/job_doesnotexist0000000000`);
    expect(res.status).toBe(404);
    expect(await json(res)).toMatchObject({ code: 'not_found', requestId: expect.any(String) });
  });

  it('When an outbox message cannot be routed to any queue, then the broker returns it and the row is kept for another attempt', async () => {
    const row = await h.db.outboxMessage.create({
      data: {
        exchange: COMPUTE_TOPOLOGY.exchanges.steps,
        routingKey: 'nowhere.bound', // no queue is bound for it: a misrouted message is not lost
        messageId: 'job_unroutable_000000000000:0',
        type: 'step',
        body: { v: 1 },
      },
      select: { id: true },
    });
    try {
      await h.service.outbox.publishNow([row.id]);
      const kept = await h.db.outboxMessage.findUnique({ where: { id: row.id }, select: { attempts: true } });
      expect(kept?.attempts).toBe(1);
    } finally {
      // Left behind, it would count as pending in every later test.
      await h.db.outboxMessage.delete({ where: { id: row.id } });
    }
  });

  it('When an outbox row was committed but never published (a crash between commit and publish), then the sweep publishes it once and deletes it', async () => {
    steps.length = 0;
    await h.service.outbox.stop();
    let sweeping = false;
    try {
      // Jobs created just before may still be waiting for their own publish: count relative to them.
      const pendingBefore = await h.service.outbox.pending();
      const command: StepCommand = {
        v: 1,
        jobId: 'job_left_behind_by_a_crash_0',
        kind: 'prove',
        stepIndex: 3,
        input: {},
        state: { round: 1 },
      };
      await h.db.outboxMessage.create({
        data: {
          exchange: COMPUTE_TOPOLOGY.exchanges.steps,
          routingKey: 'step.prove', // a later step, as a crash would leave it
          messageId: 'job_left_behind_by_a_crash_0:3',
          type: 'step',
          body: { ...command, input: {}, state: { round: 1 } },
        },
      });
      expect(await h.service.outbox.pending()).toBe(pendingBefore + 1);
      h.service.outbox.start();
      sweeping = true;
      await waitFor('sweep publishes the step', () =>
        steps.some((d) => (d.body as StepCommand).jobId === command.jobId),
      );
      await waitFor('outbox empty', async () => (await h.service.outbox.pending()) === 0);
      expect(
        steps.filter((d) => (d.body as StepCommand).jobId === command.jobId).map((d) => d.messageId),
      ).toEqual(['job_left_behind_by_a_crash_0:3']);
    } finally {
      // A stopped sweep would leave every later job unpublished.
      if (!sweeping) h.service.outbox.start();
    }
  });
});

describe('Job state machine (runner events over RabbitMQ)', () => {
  const at = () => new Date().toISOString();
  async function paidJob(): Promise<string> {
    await beat(HEALTHY, null);
    await waitFor('healthy', async () => (await healthStatus()) === 200);
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const res = await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
    expect(res.status).toBe(202);
    return String((await json(res)).jobId);
  }
  async function emit(event: JobEvent): Promise<void> {
    await runner.publish(COMPUTE_TOPOLOGY.exchanges.events, event.type, event, { type: event.type });
  }
  async function job(jobId: string): Promise<Record<string, unknown>> {
    return json(await fetch(`${h.baseUrl}/api/v1/jobs/${jobId}`));
  }
  const base = (jobId: string, stepIndex: number) => ({
    jobId,
    stepIndex,
    runnerId: 'test-runner',
    at: at(),
  });
  /** Runner events market-intel consumed so far, applied or not (its own counter on /metrics). */
  async function eventsConsumed(): Promise<number> {
    const text = await h.service.metrics.registry.metrics();
    return text
      .split('\n')
      .filter((line) => line.startsWith('compute_job_events_total{'))
      .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
  }

  it('When step outcomes arrive twice, out of order or after the end, then each step is applied once, progress never drops and the terminal state stays final', async () => {
    const jobId = await paidJob();
    await emit({ type: 'job.step-started', ...base(jobId, 0) });
    await waitFor('running', async () => (await job(jobId)).status === 'running');
    const step0 = {
      type: 'job.step-completed' as const,
      ...base(jobId, 0),
      outcome: { kind: 'continue' as const, state: { n: 1 }, progressPct: 40, label: 'round 1' },
    };
    await emit(step0);
    await emit(step0); // a redelivery after a runner crash
    await waitFor('step 0 applied', async () => (await job(jobId)).progressPct === 40);
    // A lower progress figure for the next step is never shown.
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 1),
      outcome: { kind: 'continue', state: { n: 2 }, progressPct: 30, label: 'round 2' },
    });
    await waitFor('step 1 applied', async () => (await h.service.jobs.appliedSteps(jobId)).length === 2);
    expect((await job(jobId)).progressPct).toBe(40);
    // An outcome for a step that is not the current one (stale or from the future) changes nothing.
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 7),
      outcome: { kind: 'done', result: { verdict: 'APPROVED' }, label: 'bogus' },
    });
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 2),
      outcome: { kind: 'done', result: { verdict: 'REJECTED' }, label: 'report' },
    });
    await waitFor('completed', async () => (await job(jobId)).status === 'completed');
    // Late events after the terminal state: a failure, a duplicate outcome, a start.
    const seen = await eventsConsumed();
    await emit({
      type: 'job.step-failed',
      ...base(jobId, 2),
      attempt: 2,
      retryable: false,
      error: 'too late',
    });
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 2),
      outcome: { kind: 'done', result: { verdict: 'APPROVED' }, label: 'again' },
    });
    await emit({ type: 'job.step-started', ...base(jobId, 0) });
    await waitFor('the late events consumed', async () => (await eventsConsumed()) >= seen + 3);
    expect(await job(jobId)).toMatchObject({
      status: 'completed',
      progressPct: 100,
      result: { verdict: 'REJECTED' },
      error: null,
    });
    expect(await h.service.jobs.appliedSteps(jobId)).toEqual([
      { stepIndex: 0, label: 'round 1', progressPct: 40 },
      { stepIndex: 1, label: 'round 2', progressPct: 40 },
      { stepIndex: 2, label: 'report', progressPct: 100 },
    ]);
  });

  it('When a step fails with a retryable error, then the job keeps running with the last error; a non-retryable failure fails it with its stable code and short message, never the upstream text', async () => {
    const jobId = await paidJob();
    await emit({
      type: 'job.step-failed',
      ...base(jobId, 0),
      attempt: 1,
      retryable: true,
      error: 'LLM timed out',
    });
    await waitFor(
      'last error kept',
      async () =>
        (await h.db.agentJob.findUnique({ where: { id: jobId } }))?.lastError === 'attempt 1: LLM timed out',
    );
    expect((await job(jobId)).status).toBe('pending');
    await emit({
      type: 'job.step-failed',
      ...base(jobId, 0),
      attempt: 2,
      retryable: false,
      code: 'llm_request',
      error: 'LLM answered 400 at https://llm.internal/v1 for key sk-live-abc: context too long',
    });
    await waitFor('failed', async () => (await job(jobId)).status === 'failed');
    const failed = await job(jobId);
    expect(failed).toMatchObject({
      status: 'failed',
      result: null,
      error: 'llm_request: the language model refused a request of this job (step 0)',
    });
    expect(failed.completedAt).not.toBeNull();
    // The upstream text stays for operators only.
    expect((await h.db.agentJob.findUnique({ where: { id: jobId } }))?.lastError).toContain('llm.internal');
  });
});

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

  it('When a webhook_url host does not resolve, then 422 validation_failed instead of a 402, and an attached payment is not consumed', async () => {
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
      code: 'validation_failed',
      details: [{ path: 'body.webhook_url', message: expect.stringMatching(unresolved) }],
      requestId: expect.any(String),
    });

    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const paid = await h.postWithProof('/api/v1/prove/debate', { idea: IDEA, webhook_url }, signature);
    expect(paid.status).toBe(422);
    expect(await json(paid)).toMatchObject({
      code: 'validation_failed',
      error: expect.stringMatching(unresolved),
    });
    expect(await h.paymentRows(signature)).toEqual([]);
  });
});
