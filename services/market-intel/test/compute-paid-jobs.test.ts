import { COMPUTE_TOPOLOGY, StepCommand } from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
import { receiptOfSettlement, verifyReceipt, type ReceiptKeySet } from '@repo/x402-core/receipts';
import { useComputeApi, HEALTHY, IDEA, json } from './support/compute-api';

// Paying for compute jobs: the 202, the job row, its first step command, and what is refused.
const api = useComputeApi('market_intel_compute_paid_jobs_test');
const { beat, healthStatus, post, jobRows, steps } = api;

describe('Paid jobs', () => {
  beforeAll(async () => {
    await beat(HEALTHY, null);
    await waitFor('healthy', async () => (await healthStatus()) === 200);
  });

  it('When no X-PAYMENT is sent to a healthy compute endpoint, then 402 with the forge price (15 USDC) and x402-version 1', async () => {
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
          payTo: api.h.ledger.networks.solana.merchantTokenAccount,
        },
        // The official scheme in v1 form, for v1 exact SVM clients.
        { scheme: 'exact', maxAmountRequired: '15000000', payTo: api.h.ledger.networks.solana.merchantOwner },
      ],
    });
  });

  it('When a prove debate is paid, then 202 pending with statusUrl, etaMinutes 60 and a proveSessionId, the job row, and one step 0 message with the resolved session_config', async () => {
    steps.length = 0;
    const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
    const res = await api.h.postWithProof(
      '/api/v1/prove/debate',
      { idea: IDEA, session_config: 'Profile: Solo\nBudget: $5K\nSignal: ex-banker' },
      signature,
    );
    expect(res.status).toBe(202);
    expect(res.headers.get('x-payment-response')).toBeTruthy();
    // The 202 carries a signed receipt of the payment and of the very bytes of this answer
    // (docs/payments.md, "Signed offers and receipts").
    const settlement = JSON.parse(
      Buffer.from(res.headers.get('payment-response') ?? '', 'base64').toString('utf8'),
    ) as unknown;
    const keys = (await (await fetch(`${api.h.baseUrl}/.well-known/jwks.json`)).json()) as ReceiptKeySet;
    const { payload } = await verifyReceipt(receiptOfSettlement(settlement), {
      keys,
      body: await res.clone().text(),
    });
    expect(payload).toMatchObject({ transaction: signature, amount: '25000000' });
    const body = await json(res);
    expect(body).toEqual({
      jobId: expect.stringMatching(/^job_[A-Za-z0-9_-]{22}$/),
      status: 'pending',
      statusUrl: `/api/v1/jobs/${String(body.jobId)}`,
      etaMinutes: 60,
      proveSessionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(res.headers.get('location')).toBe(body.statusUrl);

    const job = await json(await fetch(api.h.baseUrl + String(body.statusUrl)));
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
    expect(await api.h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'POST /api/v1/prove/debate' },
    ]);
    // The publish is not awaited by the request: its row is deleted once the broker confirmed it.
    await waitFor('the outbox row deleted', async () => (await api.h.service.outbox.pending()) === 0);
  });

  it('When a forge ideation is paid, then its step 0 carries the latest scout data of the requested sectors and the session_config defaults', async () => {
    steps.length = 0;
    const signature = await api.h.transfer({ amountAtomic: 15_000_000n });
    const res = await api.h.postWithProof(
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
    const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
    const first = await json(await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature));
    const before = await jobRows();
    const again = await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
    expect(again.status).toBe(409);
    expect(await json(again)).toMatchObject({ code: 'payment_conflict', details: { jobId: first.jobId } });
    const other = await api.h.postWithProof('/api/v1/forge/ideate', {}, signature);
    expect(other.status).toBe(400);
    const reused = await json(other);
    expect(reused).toMatchObject({ code: 'payment_reused' });
    // Where the payment went is not the presenter's business.
    expect(reused).not.toHaveProperty('details');
    expect(JSON.stringify(reused)).not.toContain('prove/debate');
    expect(await jobRows()).toBe(before);
  });

  it("When a watcher of the chain presents the payer's signature with its own body, then 409 without the jobId (which is all GET /jobs/{id} asks), and no job", async () => {
    const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
    const paid = await json(await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature));
    expect(paid.jobId).toEqual(expect.any(String));
    const before = await jobRows();
    const stolen = await api.h.postWithProof(
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
    const signature = await api.h.transfer({ amountAtomic: 100_000n });
    const res = await api.h.postWithProof('/api/v1/forge/ideate', {}, signature);
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 'amount_mismatch' });
    expect(await jobRows()).toBe(before);
  });

  it('When a payer starts more devnet compute jobs in a day than allowed, then 429 with Retry-After, no job, and the payment is not consumed; mainnet jobs are not limited', async () => {
    const devnetForge = '/api/v1/forge/ideate?network=devnet';
    for (let i = 0; i < 2; i += 1) {
      const signature = await api.h.transfer({ amountAtomic: 15_000_000n, network: 'solana-devnet' });
      expect((await api.h.postWithProof(devnetForge, {}, signature, 'solana-devnet')).status).toBe(202);
    }
    const before = await jobRows();
    const third = await api.h.transfer({ amountAtomic: 15_000_000n, network: 'solana-devnet' });
    const refused = await api.h.postWithProof(devnetForge, {}, third, 'solana-devnet');
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
    expect(await api.h.paymentRows(third)).toEqual([
      { status: 'verified', endpoint: 'POST /api/v1/forge/ideate' },
    ]);

    const mainnet = await api.h.transfer({ amountAtomic: 15_000_000n });
    expect((await api.h.postWithProof('/api/v1/forge/ideate', {}, mainnet)).status).toBe(202);
  });

  it('When no runner starts a paid job, then the watchdog publishes its first step again after the republish time, once, and fails it as stalled after the fail time', async () => {
    const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
    const res = await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
    expect(res.status).toBe(202);
    const jobId = String((await json(res)).jobId);
    const commandsOf = () => steps.filter((d) => (d.body as StepCommand).jobId === jobId);
    await waitFor('the first step published', () => commandsOf().length === 1);
    expect(await api.h.service.watchdog.tick()).toEqual({ republished: 0, failed: 0 });

    // The test runner took the command and never reported back: twenty minutes pass.
    await api.h.db.$executeRawUnsafe(
      "UPDATE agent_jobs SET created_at = now() - interval '20 minutes', updated_at = now() - interval '20 minutes' WHERE id = $1",
      jobId,
    );
    expect(await api.h.service.watchdog.tick()).toEqual({ republished: 1, failed: 0 });
    await waitFor('the first step published again', () => commandsOf().length === 2);
    expect(commandsOf().map((d) => (d.body as StepCommand).stepIndex)).toEqual([0, 0]);
    expect(await api.h.service.watchdog.tick()).toEqual({ republished: 0, failed: 0 });

    // Three hours: failed, with the stable code.
    await api.h.db.$executeRawUnsafe(
      "UPDATE agent_jobs SET created_at = now() - interval '3 hours' WHERE id = $1",
      jobId,
    );
    expect(await api.h.service.watchdog.tick()).toEqual({ republished: 0, failed: 1 });
    expect(await json(await fetch(`${api.h.baseUrl}/api/v1/jobs/${jobId}`))).toMatchObject({
      status: 'failed',
      error: 'stalled: the job made no progress in time',
    });
  });

  it('When a job id is unknown, then GET /api/v1/jobs/{jobId} is 404 not_found', async () => {
    const res = await fetch(`${api.h.baseUrl}/api/v1/jobs/job_doesnotexist0000000000`);
    expect(res.status).toBe(404);
    expect(await json(res)).toMatchObject({ code: 'not_found', requestId: expect.any(String) });
  });

  it('When an outbox message cannot be routed to any queue, then the broker returns it and the row is kept for another attempt', async () => {
    const row = await api.h.db.outboxMessage.create({
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
      await api.h.service.outbox.publishNow([row.id]);
      const kept = await api.h.db.outboxMessage.findUnique({
        where: { id: row.id },
        select: { attempts: true },
      });
      expect(kept?.attempts).toBe(1);
    } finally {
      // Left behind, it would count as pending in every later test.
      await api.h.db.outboxMessage.delete({ where: { id: row.id } });
    }
  });

  it('When an outbox row was committed but never published (a crash between commit and publish), then the sweep publishes it once and deletes it', async () => {
    steps.length = 0;
    // Jobs created just before may still be publishing their own rows: were that to finish after the
    // count below, the count would drop under it (seen on a loaded machine). Let them land first.
    await waitFor('earlier outbox rows published', async () => (await api.h.service.outbox.pending()) === 0);
    await api.h.service.outbox.stop();
    let sweeping = false;
    try {
      const pendingBefore = await api.h.service.outbox.pending();
      const command: StepCommand = {
        v: 1,
        jobId: 'job_left_behind_by_a_crash_0',
        kind: 'prove',
        stepIndex: 3,
        input: {},
        state: { round: 1 },
      };
      await api.h.db.outboxMessage.create({
        data: {
          exchange: COMPUTE_TOPOLOGY.exchanges.steps,
          routingKey: 'step.prove', // a later step, as a crash would leave it
          messageId: 'job_left_behind_by_a_crash_0:3',
          type: 'step',
          body: { ...command, input: {}, state: { round: 1 } },
        },
      });
      expect(await api.h.service.outbox.pending()).toBe(pendingBefore + 1);
      api.h.service.outbox.start();
      sweeping = true;
      await waitFor('sweep publishes the step', () =>
        steps.some((d) => (d.body as StepCommand).jobId === command.jobId),
      );
      await waitFor('outbox empty', async () => (await api.h.service.outbox.pending()) === 0);
      expect(
        steps.filter((d) => (d.body as StepCommand).jobId === command.jobId).map((d) => d.messageId),
      ).toEqual(['job_left_behind_by_a_crash_0:3']);
    } finally {
      // A stopped sweep would leave every later job unpublished.
      if (!sweeping) api.h.service.outbox.start();
    }
  });
});
