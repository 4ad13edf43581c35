import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import { Connection, PublicKey } from '@solana/web3.js';
import type { AgentJob } from '@repo/schemas';
import { ForgeResult, ProveResult } from '@repo/compute';
import { associatedTokenAccountOf } from '@repo/x402-solana';
import {
  startFakeSearxng,
  startScriptedLlm,
  type FakeSearxng,
  type ScriptedLlm,
  type ScriptedRequest,
} from '@repo/llm/testing';
import { scriptedPipelineResponder } from '@repo/compute/testing';
import { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import { queueDepth, waitFor } from '@repo/queue/testing';
import { Webhook } from 'standardwebhooks';
import { buildReport, startHarness, type Harness } from './support/harness';
import { LlmCallHold, spawnRunner, waitForHealthyRunner, type RunnerProcess } from './support/runner';

// Paid compute jobs end to end: market-intel (this process) -> RabbitMQ -> the real pipeline-runner
// (a child process) -> a scripted OpenAI-compatible server and a fake SearXNG -> back to the job.
jest.setTimeout(120_000);
const SECRET = 'e2e-webhook-secret-0123456789';
const SCENARIOS = ['approved', 'conditional', 'rejected', 'pivot_out', 'poison'] as const;
type Scenario = (typeof SCENARIOS)[number];

let h: Harness;
let llm: ScriptedLlm;
let search: FakeSearxng;
let runner: RunnerProcess;
let receiver: Server;
/** The receiver's URL that accepts every delivery. */
let receiverUrl: string;
/** The receiver's URL that answers 500 to the first attempt of each delivery (webhook-id), so it is retried. */
let flakyReceiverUrl: string;
interface Hook {
  body: string;
  headers: IncomingHttpHeaders;
  receivedAtMs: number;
}
/** Every webhook request the receiver got: the raw body, its headers and when it arrived (ms). */
const hooks: Hook[] = [];
/**
 * The receiver's Standard Webhooks verifier, keyed as the README tells a receiver to
 * (README, "Webhooks (market-intel)"): `whsec_` + base64 of the bytes of WEBHOOK_SECRET.
 */
const receiverWebhook = new Webhook(`whsec_${Buffer.from(SECRET, 'utf8').toString('base64')}`);

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  if (typeof value !== 'string') throw new Error(`webhook without a single ${name} header`);
  return value;
}

/** What a receiver does with the Standard Webhooks headers: `Webhook.verify`, which checks the 5-minute window. */
function verifyStandard(hook: { body: string; headers: IncomingHttpHeaders }): unknown {
  return receiverWebhook.verify(hook.body, {
    'webhook-id': header(hook.headers, 'webhook-id'),
    'webhook-timestamp': header(hook.headers, 'webhook-timestamp'),
    'webhook-signature': header(hook.headers, 'webhook-signature'),
  });
}

/** What a receiver does with `x-service-signature`: recompute the hex HMAC, compare in constant time. */
function verifyHex(hook: { body: string; headers: IncomingHttpHeaders }): boolean {
  const received = Buffer.from(header(hook.headers, 'x-service-signature'));
  const expected = Buffer.from(createHmac('sha256', SECRET).update(hook.body).digest('hex'));
  return received.length === expected.length && timingSafeEqual(received, expected);
}
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
/** Holds a chosen LLM call (to kill the runner while a step is in flight). */
const hold = new LlmCallHold();

function scenarioOf(req: ScriptedRequest): Scenario | 'forge' {
  const text = req.messages.map((m) => m.content).join('\n');
  return (
    SCENARIOS.find((s) => text.includes(`[scenario:${s}]`)) ??
    (req.task.startsWith('forge') ? 'forge' : 'approved')
  );
}

/** Answers every pipeline task; a prove job's scenario comes from the `[scenario:...]` marker in its idea. */
const respondToPipelines = scriptedPipelineResponder();

/** RUNNER_ID of the runner started last (recorded with each step it applies). */
let runnerId = '';

function startRunner(options: { dieBeforeAck?: string } = {}): RunnerProcess {
  runnerId = `e2e-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  return spawnRunner(
    {
      AMQP_URL: h.amqpUrl,
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: 'scripted-model',
      LLM_API_KEY: 'test-key',
      SEARCH_PROVIDER: 'searxng',
      SEARXNG_URL: search.baseUrl,
      RUNNER_ID: runnerId,
    },
    options,
  );
}

async function json<T = Record<string, unknown>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

async function getJob(jobId: string): Promise<AgentJob> {
  return json<AgentJob>(await fetch(`${h.baseUrl}/api/v1/jobs/${jobId}`));
}

/** Polls the job until it is terminal, recording every progress value seen. */
async function settle(
  jobId: string,
  timeoutMs = 90_000,
): Promise<{ job: AgentJob; progress: number[]; statuses: string[] }> {
  const progress: number[] = [];
  const statuses: string[] = [];
  const job = await waitFor(
    `job ${jobId} to finish`,
    async () => {
      const j = await getJob(jobId);
      progress.push(j.progressPct);
      statuses.push(j.status);
      return j.status === 'completed' || j.status === 'failed' ? j : undefined;
    },
    timeoutMs,
    20,
  ).catch((err: unknown) => {
    throw new Error(
      `${String(err)} (last status ${statuses.at(-1)} at ${progress.at(-1)}%)\nrunner output:\n${runner.output().slice(-4000)}`,
    );
  });
  return { job, progress, statuses };
}

async function submitProve(
  scenario: Scenario,
  extra: Record<string, unknown> = {},
): Promise<{ jobId: string; signature: string }> {
  const signature = await h.transfer({ amountAtomic: 25_000_000n });
  const idea = `[scenario:${scenario}] A reconciliation copilot that matches instant payments to invoices for mid-size fintechs.`;
  const res = await h.postWithProof('/api/v1/prove/debate', { idea, ...extra }, signature);
  if (res.status !== 202) throw new Error(`expected 202, got ${res.status}: ${await res.text()}`);
  const body = await json<{ jobId: string }>(res);
  return { jobId: body.jobId, signature };
}

/** The webhook requests the receiver got for job `jobId`, oldest first. */
function hooksOf(jobId: string): Hook[] {
  return hooks.filter((hk) => (JSON.parse(hk.body) as { jobId?: unknown }).jobId === jobId);
}

/**
 * A webhook delivery of an APPROVED debate signed less than 4 minutes ago (inside the receiver's
 * 5-minute window): one the receiver already got, else that of a new paid debate.
 */
async function approvedDelivery(): Promise<Hook> {
  const received = hooks.find((hk) => {
    const body = JSON.parse(hk.body) as { status?: unknown; result?: { verdict?: unknown } | null };
    const signedAtMs = Number(header(hk.headers, 'webhook-timestamp')) * 1000;
    return (
      body.status === 'completed' && body.result?.verdict === 'APPROVED' && Date.now() - signedAtMs < 240_000
    );
  });
  if (received) return received;
  const { jobId } = await submitProve('approved', { webhook_url: receiverUrl });
  await settle(jobId);
  return waitFor('webhook', () => hooksOf(jobId)[0]);
}

/**
 * Once every job has ended, drops the step commands still queued: duplicates that at-least-once
 * delivery (a broker cut, a killed runner) left behind for jobs that are over.
 */
async function dropLeftoverCommands(): Promise<void> {
  await waitFor(
    'every job ended',
    async () => (await h.db.agentJob.count({ where: { status: { in: ['pending', 'running'] } } })) === 0,
  );
  await h.service.broker.withChannel(async (channel) => {
    await channel.purgeQueue(COMPUTE_TOPOLOGY.queues.starts);
    await channel.purgeQueue(COMPUTE_TOPOLOGY.queues.steps);
  });
}

/** Leaves a live runner for the next test: starts one if the last one has exited, and waits for its heartbeat. */
async function ensureRunner(): Promise<void> {
  if (runner.child.exitCode !== null || runner.child.signalCode !== null) runner = startRunner();
  await waitForHealthyRunner(h.baseUrl, runner);
}

/** The agent wallet's test USDC on the main network, in atomic units. */
async function agentBalance(): Promise<bigint> {
  const connection = new Connection(h.rpcUrls.solana, 'confirmed');
  const account = new PublicKey(
    associatedTokenAccountOf(h.agent.publicKey.toBase58(), h.ledger.networks.solana.mint),
  );
  return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
}

function assertMonotonic(values: number[]): void {
  for (let i = 1; i < values.length; i++) expect(values[i]).toBeGreaterThanOrEqual(values[i - 1] ?? 0);
}

beforeAll(async () => {
  h = await startHarness('market_intel_compute_e2e_test', {
    // Both services reach RabbitMQ through a proxy the broker test cuts: no other suite or run is touched.
    proxyBroker: true,
    env: {
      WEBHOOK_SECRET: SECRET,
      SSRF_ALLOWLIST: '127.0.0.1',
      // Over a second, so that a retry is necessarily signed with a later webhook-timestamp (seconds).
      WEBHOOK_RETRY_BASE_MS: '1000',
      RUNNER_STALE_AFTER_MS: '3000',
    },
  });
  await h.reports.importReport(buildReport(), 'import');
  llm = await startScriptedLlm({
    respond: hold.wrap((req) =>
      scenarioOf(req) === 'poison' ? '{ this is not json' : respondToPipelines(req),
    ),
  });
  search = await startFakeSearxng({
    results: [
      {
        title: 'Instant payments reconciliation market',
        url: 'https://example.com/recon',
        content: 'Mid-size fintechs reconcile by hand.',
      },
    ],
  });
  const failedOnce = new Set<string>();
  receiver = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      hooks.push({ body, headers: req.headers, receivedAtMs: Date.now() });
      const id = String(req.headers['webhook-id']);
      const fail = req.url === '/hooks/flaky' && !failedOnce.has(id);
      failedOnce.add(id);
      res.statusCode = fail ? 500 : 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  const receiverOrigin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  receiverUrl = `${receiverOrigin}/hooks/jobs`;
  flakyReceiverUrl = `${receiverOrigin}/hooks/flaky`;
  runner = startRunner();
  await waitForHealthyRunner(h.baseUrl, runner);
}, 180_000);

afterAll(async () => {
  hold.release();
  await runner?.stop();
  await h?.close();
  await llm?.close();
  await search?.close();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
});

describe('Compute jobs end to end', () => {
  it('When a prove debate is paid, then it runs to APPROVED with rising progress, the six votes, a roadmap and a Lean Canvas, and a webhook signed both ways that is retried under the same webhook-id until accepted', async () => {
    const { jobId, signature } = await submitProve('approved', {
      webhook_url: flakyReceiverUrl,
      session_config: { budget: '$25K' },
    });
    const { job, progress, statuses } = await settle(jobId);
    expect(job).toMatchObject({
      jobId,
      status: 'completed',
      progressPct: 100,
      error: null,
      txHash: signature,
      endpoint: 'POST /api/v1/prove/debate',
    });
    expect(job.completedAt).not.toBeNull();
    assertMonotonic(progress);
    expect(statuses).not.toContain('failed');
    const result = ProveResult.parse(job.result);
    expect(result.verdict).toBe('APPROVED');
    if (result.verdict !== 'PIVOT_OUT') {
      expect(result.votes).toHaveLength(6);
      expect(result.report.output).toBeTruthy();
      expect(result.report.summary).toBeTruthy();
    }
    expect(result.report.pivot_report).toBeNull();
    expect(result.session_config.budget).toBe('$25K');
    expect(result.rounds.length).toBeGreaterThanOrEqual(1);

    const steps = await h.service.jobs.appliedSteps(jobId);
    expect(steps.map((s) => s.stepIndex)).toEqual(steps.map((_, i) => i));
    assertMonotonic(steps.map((s) => s.progressPct));

    // Webhook: first attempt answered 500, retried, then accepted. Each attempt verifies with both the
    // hex HMAC and Webhook.verify; the retry keeps the webhook-id and is signed anew, a second or more later.
    await waitFor('webhook accepted', () => hooksOf(jobId).length >= 2);
    const delivered = hooksOf(jobId);
    expect(delivered).toHaveLength(2);
    for (const hook of delivered) {
      expect(header(hook.headers, 'x-service-signature')).toMatch(/^[0-9a-f]{64}$/);
      expect(verifyHex(hook)).toBe(true);
      expect(verifyStandard(hook)).toMatchObject({
        jobId,
        status: 'completed',
        result: { verdict: 'APPROVED' },
      });
      expect(header(hook.headers, 'webhook-signature')).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      // Signed when sent: within a second of arrival.
      const timestampMs = Number(header(hook.headers, 'webhook-timestamp')) * 1000;
      expect(Math.abs(hook.receivedAtMs - timestampMs)).toBeLessThan(2000);
    }
    const [first, retry] = delivered as [Hook, Hook];
    expect(retry.body).toBe(first.body);
    expect(header(first.headers, 'webhook-id')).toMatch(/^msg_[A-Za-z0-9_-]{32}$/);
    expect(header(retry.headers, 'webhook-id')).toBe(header(first.headers, 'webhook-id'));
    expect(header(first.headers, 'webhook-id')).not.toContain(jobId);
    expect(Number(header(retry.headers, 'webhook-timestamp'))).toBeGreaterThan(
      Number(header(first.headers, 'webhook-timestamp')),
    );
    expect(header(retry.headers, 'webhook-signature')).not.toBe(header(first.headers, 'webhook-signature'));
    expect([first, retry].map((hk) => hk.headers['x-webhook-attempt'])).toEqual(['1', '2']);
    // The receiver records a request before it answers: the dispatcher stores the answer just after.
    const delivery = await waitFor('the delivery outcome stored', async () => {
      const row = await h.db.webhookDelivery.findUnique({ where: { jobId } });
      return row?.status !== 'pending' ? row : undefined;
    });
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2, lastStatus: 204 });
  });

  it('When a captured webhook delivery is replayed after the 5-minute window or with a fresh timestamp, then Webhook.verify refuses it (the body-only hex HMAC would not)', async () => {
    const captured = await approvedDelivery();
    expect(verifyStandard(captured)).toBeTruthy();

    // Replayed 6 minutes after it was signed: the receiver's clock is past the window.
    const signedAtMs = Number(header(captured.headers, 'webhook-timestamp')) * 1000;
    const clock = jest.spyOn(Date, 'now').mockReturnValue(signedAtMs + 6 * 60_000);
    try {
      expect(() => verifyStandard(captured)).toThrow('Message timestamp too old');
      expect(verifyHex(captured)).toBe(true); // why the Standard Webhooks headers exist
    } finally {
      clock.mockRestore();
    }

    // Replayed with the timestamp header refreshed: the signature covers the timestamp.
    const refreshed = { ...captured.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) + 1) };
    expect(() => verifyStandard({ body: captured.body, headers: refreshed })).toThrow(
      'No matching signature found',
    );
    // Or with a changed body: neither signature holds.
    const tampered = { body: captured.body.replace('APPROVED', 'REJECTED'), headers: captured.headers };
    expect(() => verifyStandard(tampered)).toThrow('No matching signature found');
    expect(verifyHex(tampered)).toBe(false);
  });

  it.each([
    ['conditional', 'CONDITIONAL_APPROVED'],
    ['rejected', 'REJECTED'],
    ['pivot_out', 'PIVOT_OUT'],
  ] as const)(
    'When the panel plays the %s script, then the verdict is %s with the report that verdict calls for (services/pipeline-runner/README.md, "prove/debate (`src/domain/pipelines/prove/`)")',
    async (scenario, verdict) => {
      const { jobId } = await submitProve(scenario);
      const { job } = await settle(jobId);
      expect(job.status).toBe('completed');
      const result = ProveResult.parse(job.result);
      expect(result.verdict).toBe(verdict);
      if (result.verdict === 'PIVOT_OUT') {
        expect(result.votes).toEqual([]);
        expect(result.vote_counts).toEqual({ approve: 0, conditional: 0, reject: 0 });
        expect(result.report).toMatchObject({
          output: null,
          summary: null,
          pivot_report: expect.any(Object),
        });
      } else if (result.verdict === 'REJECTED') {
        expect(result.report.output.top_reasons).toHaveLength(3);
        expect(result.votes).toHaveLength(6);
      } else {
        expect(result.report.output).toBeTruthy();
        expect(result.vote_counts.approve + result.vote_counts.conditional + result.vote_counts.reject).toBe(
          6,
        );
      }
    },
  );

  it('When a forge ideation is paid, then it completes with ranked ideas carrying every field and lean_feasibility, and the five rounds', async () => {
    const signature = await h.transfer({ amountAtomic: 15_000_000n });
    const res = await h.postWithProof(
      '/api/v1/forge/ideate',
      { sectors: ['fintech'], context: 'B2B only', product_modes: ['saas'] },
      signature,
    );
    expect(res.status).toBe(202);
    const { jobId } = await json<{ jobId: string }>(res);
    const { job, progress } = await settle(jobId);
    expect(job.status).toBe('completed');
    assertMonotonic(progress);
    const result = ForgeResult.parse(job.result);
    expect(result.rounds).toHaveLength(5);
    expect(result.ideas.length).toBeGreaterThan(0);
    expect(result.ideas.map((i) => i.rank)).toEqual(result.ideas.map((_, i) => i + 1));
    for (const idea of result.ideas)
      expect(['LEAN_FIT', 'STRETCH', 'NOT_LEAN']).toContain(idea.lean_feasibility);
  });

  it('When the runner is killed (SIGKILL) in the middle of a step, then after a restart the job completes and every step was applied exactly once', async () => {
    let seen = 0;
    hold.hold((req) => scenarioOf(req) === 'rejected' && ++seen === 8); // the 8th LLM call of this job hangs
    try {
      const { jobId } = await submitProve('rejected');
      await hold.held(30_000);
      const before = await getJob(jobId);
      expect(before.status).toBe('running');
      const heldStep = (await h.db.agentJob.findUniqueOrThrow({ where: { id: jobId } })).stepIndex;
      const killedRunner = runnerId;
      const callsBefore = llm.calls.length;
      expect(await runner.stop('SIGKILL')).toBe('SIGKILL');
      hold.release();
      runner = startRunner();
      const { job, progress } = await settle(jobId);
      expect(job.status).toBe('completed');
      assertMonotonic(progress);
      expect(ProveResult.parse(job.result).verdict).toBe('REJECTED');
      const steps = await h.service.jobs.appliedSteps(jobId);
      expect(steps.map((s) => s.stepIndex)).toEqual(steps.map((_, i) => i));
      // The interrupted step ran again on the new runner, which asked the held question again, and it
      // was applied once, by the new runner.
      expect(hold.askedAgain(llm.calls.slice(callsBefore))).toBeGreaterThanOrEqual(1);
      const applied = await h.db.jobStep.findMany({ where: { jobId, stepIndex: heldStep } });
      expect(applied.map((s) => s.runnerId)).toEqual([runnerId]);
      expect(runnerId).not.toBe(killedRunner);
    } finally {
      hold.release();
      await ensureRunner();
    }
  });

  it('When the runner dies after publishing a step outcome and before acking the command, then the command is redelivered, runs again on the next runner, and market-intel applies the step once', async () => {
    // Every step outcome the runners publish, seen beside market-intel on a queue of the test's own.
    const observer = await Broker.connect({
      url: h.amqpUrl,
      connectionName: 'outcome observer',
      logger: silent,
    });
    const outcomes: { jobId: string; stepIndex: number; runnerId: string }[] = [];
    let dying: RunnerProcess | undefined;
    try {
      const queue = await observer.withChannel(async (channel) => {
        const { queue: name } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
        await channel.bindQueue(name, COMPUTE_TOPOLOGY.exchanges.events, 'job.step-completed');
        return name;
      });
      await observer.consume(
        queue,
        async ({ body }) => {
          outcomes.push(body as (typeof outcomes)[number]);
          return 'ack';
        },
        { prefetch: 10 },
      );
      expect(await runner.stop()).toBe(0);
      // The dying runner must die on this test's step 1, not on a leftover command of an earlier job.
      await dropLeftoverCommands();
      dying = startRunner({ dieBeforeAck: 'prove:1' });
      const dyingId = runnerId;
      await waitForHealthyRunner(h.baseUrl, dying);
      const { jobId } = await submitProve('approved');
      expect(await dying.exited).toBe('SIGKILL');
      // It died after its outcome was confirmed: market-intel applied step 1 from the dead runner.
      const ofStep = () => outcomes.filter((o) => o.jobId === jobId && o.stepIndex === 1);
      await waitFor('the dead runner’s outcome', () => ofStep().length === 1).catch((err: unknown) => {
        throw new Error(
          `${String(err)} (job ${jobId})\ndying runner output:\n${dying?.output().slice(-4000)}`,
        );
      });
      expect(ofStep()[0]?.runnerId).toBe(dyingId);

      runner = startRunner();
      const { job } = await settle(jobId);
      expect(job.status).toBe('completed');
      // The unacked command came back to the new runner, which ran step 1 again and published it again ...
      await waitFor('the redelivered step’s outcome', () => ofStep().length === 2);
      expect(ofStep().map((o) => o.runnerId)).toEqual([dyingId, runnerId]);
      // ... and market-intel kept the first: each step applied once, step 1 by the runner that died.
      const steps = await h.service.jobs.appliedSteps(jobId);
      expect(steps.map((s) => s.stepIndex)).toEqual(steps.map((_, i) => i));
      const applied = await h.db.jobStep.findMany({ where: { jobId, stepIndex: 1 } });
      expect(applied.map((s) => s.runnerId)).toEqual([dyingId]);
      expect(ProveResult.parse(job.result).verdict).toBe('APPROVED');
    } finally {
      await observer.close(100);
      await dying?.stop('SIGKILL');
      await ensureRunner();
    }
  });

  it('When every attempt of a step fails, then the step is dead-lettered after the delivery limit, kept for operators, the job fails with the reason and a webhook, and the payer is refunded', async () => {
    const dlqBefore = await queueDepth(h.vhost, COMPUTE_TOPOLOGY.queues.deadLetter);
    const agentUsdc = () => agentBalance();
    const paidBefore = await agentUsdc();
    const { jobId } = await submitProve('poison', { webhook_url: receiverUrl });
    expect(await agentUsdc()).toBe(paidBefore - 25_000_000n);
    const { job } = await settle(jobId);
    expect(job.status).toBe('failed');
    // The stable code and short message; the runner's text (the scripted LLM's refusal) stays internal.
    expect(job.error).toMatch(/^delivery_limit: a step kept failing until its retries ran out/);
    const row = await h.db.agentJob.findUnique({ where: { id: jobId }, select: { lastError: true } });
    expect(row?.lastError).toMatch(/delivery limit/);
    expect(row?.lastError).toMatch(/last error/);
    expect(job.result).toBeNull();
    expect(await queueDepth(h.vhost, COMPUTE_TOPOLOGY.queues.deadLetter)).toBe(dlqBefore + 1);
    await waitFor('failure webhook', () =>
      hooks.some((hk) => JSON.parse(hk.body).jobId === jobId && hooks.length >= 1),
    );
    const hook = hooks.find((hk) => JSON.parse(hk.body).jobId === jobId);
    if (!hook) throw new Error('no failure webhook');
    expect(verifyHex(hook)).toBe(true);
    expect(verifyStandard(hook)).toMatchObject({
      jobId,
      status: 'failed',
      error: expect.stringMatching(/^delivery_limit: /),
    });
    // The failure is ours: the whole price goes back to the paying wallet from the refund wallet.
    const refunded = await waitFor('refund confirmed', async () => {
      const { refund } = await getJob(jobId);
      return refund?.status === 'confirmed' ? refund : undefined;
    });
    expect(refunded).toMatchObject({ amount: '25000000', to: h.agent.publicKey.toBase58() });
    expect(await agentUsdc()).toBe(paidBefore);
  });

  it('When a malformed step message reaches the runner, then it goes straight to the dead-letter queue', async () => {
    const dlqBefore = await queueDepth(h.vhost, COMPUTE_TOPOLOGY.queues.deadLetter);
    const publisher = await Broker.connect({
      url: h.amqpUrl,
      connectionName: 'poison publisher',
      logger: silent,
    });
    try {
      await publisher.publish(COMPUTE_TOPOLOGY.exchanges.steps, 'step.prove', { hello: 'not a step' });
    } finally {
      await publisher.close(100);
    }
    await waitFor(
      'dead letter',
      async () => (await queueDepth(h.vhost, COMPUTE_TOPOLOGY.queues.deadLetter)) === dlqBefore + 1,
    );
  });

  it('When RabbitMQ goes away while jobs are running and comes back, then both services reconnect and every job completes', async () => {
    const jobs = await Promise.all(
      ['approved', 'rejected', 'conditional', 'approved', 'pivot_out', 'rejected'].map((s) =>
        submitProve(s as Scenario),
      ),
    );
    await waitFor('jobs under way', async () =>
      (await Promise.all(jobs.map((j) => getJob(j.jobId)))).some((j) => j.progressPct > 0),
    );
    const broker = h.brokerProxy!;
    await broker.cut();
    try {
      await waitFor('market-intel sees the broker gone', () => !h.service.broker.isConnected(), 30_000);
      await broker.restore();
      await waitFor('market-intel reconnected', () => h.service.broker.isConnected(), 60_000);
      const settled = await Promise.all(jobs.map((j) => settle(j.jobId, 120_000)));
      for (const { job } of settled) expect(job.status).toBe('completed');
      for (const j of jobs) {
        const steps = await h.service.jobs.appliedSteps(j.jobId);
        expect(steps.map((s) => s.stepIndex)).toEqual(steps.map((_, i) => i));
      }
      expect(await h.service.outbox.pending()).toBe(0);
    } finally {
      // Restored twice when the test got that far: a no-op then.
      await broker.restore();
      await waitFor('market-intel connected', () => h.service.broker.isConnected(), 60_000);
      await ensureRunner();
    }
  });
});
