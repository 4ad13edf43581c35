import { randomUUID } from 'node:crypto';
import type { JobEvent } from '@repo/compute';
import { PrismaPaymentLedger, PrismaRefundLedger } from '@repo/x402-ledger';
import { buildClaimRequest, buildVerifiedPayment } from '@repo/x402-ledger/testing';
import { JobRepository, newJobId, type JobKindHooks } from '../src/data/jobs';
import { createJobLifecycle, type JobLifecycle } from '../src/domain/job-lifecycle';
import { startPaidJob } from '../src/domain/paid-jobs';
import { COMPUTE_PRICES } from '../src/domain/prices';
import { openMigratedDatabase } from './support/database';

// The job lifecycle alone, on a real database: events are handed to it directly (no broker), and
// what follows a commit is recorded by the ports it is built with.
let database: Awaited<ReturnType<typeof openMigratedDatabase>>;
let jobs: JobRepository;
let lifecycle: JobLifecycle;
const seen = {
  hooks: [] as string[],
  published: [] as bigint[],
  events: [] as string[],
  refunds: [] as string[],
  webhookKicks: 0,
  refundKicks: 0,
  completed: 0,
};

/** A scan-like kind whose hooks record their calls and mark the state they pass on. */
const scoutHooks: JobKindHooks = {
  beforeNextStep: async (_tx, job, stepIndex, state) => {
    seen.hooks.push(`beforeNextStep ${job.id} ${stepIndex}`);
    return { ...(state as object), stored: true };
  },
  onCompleted: async (_tx, job) => void seen.hooks.push(`onCompleted ${job.id}`),
  onFailed: async (_tx, job, error) => void seen.hooks.push(`onFailed ${job.id} ${error}`),
};

beforeAll(async () => {
  database = await openMigratedDatabase('market_intel_domain_job_lifecycle_test');
  jobs = new JobRepository(database.prisma);
  lifecycle = createJobLifecycle({
    jobs,
    hooks: { scout: scoutHooks },
    refunds: new PrismaRefundLedger(database.prisma),
    publishNow: async (ids) => void seen.published.push(...ids),
    metrics: {
      onJobEvent: (type, applied) => void seen.events.push(`${type} ${applied}`),
      onRefund: (network, outcome) => void seen.refunds.push(`${network} ${outcome}`),
    },
    webhookLoop: { kick: () => void seen.webhookKicks++ },
    refundLoop: { kick: () => void seen.refundKicks++ },
    onJobCompleted: () => void seen.completed++,
  });
});

afterAll(async () => {
  await database.close();
});

const base = (jobId: string, stepIndex: number) => ({
  jobId,
  stepIndex,
  runnerId: 'test-runner',
  at: new Date().toISOString(),
});

/** Applies an event and settles it, as the job events consumer does. */
async function handle(event: JobEvent) {
  const result = await lifecycle.applyEvent(event);
  await lifecycle.settle(event.type, result);
  return result;
}

async function scoutJob(): Promise<string> {
  const id = newJobId();
  await database.prisma.$transaction((tx) =>
    jobs.createInternalJob(tx, { id, kind: 'scout', endpoint: 'scan test', input: { sector: 'test' } }),
  );
  return id;
}

/** A paid prove job with a webhook, started as the compute route starts it. */
async function paidJob(): Promise<{ jobId: string; signature: string }> {
  const ledger = new PrismaPaymentLedger(database.prisma);
  const verified = buildVerifiedPayment({ amountAtomic: COMPUTE_PRICES.prove.amountAtomic });
  const outcome = await ledger.claim(
    buildClaimRequest({
      signature: verified.signature,
      endpoint: COMPUTE_PRICES.prove.endpoint,
      kind: 'async',
    }),
  );
  if (outcome.outcome !== 'claimed') throw new Error(`payment not claimed: ${outcome.outcome}`);
  await ledger.markVerified(outcome.claim, verified);
  const { jobId } = await startPaidJob(
    { jobs, ledger, publishNow: async () => undefined },
    {
      kind: 'prove',
      route: COMPUTE_PRICES.prove,
      payment: {
        signature: verified.signature,
        payer: verified.payer,
        network: 'solana',
        claim: outcome.claim,
      },
      clientIp: undefined,
      webhookUrl: 'https://hooks.example.com/jobs',
      proveSessionId: randomUUID(),
      buildInput: async () => ({ idea: 'a ledger for agents' }),
    },
  );
  return { jobId, signature: verified.signature };
}

beforeEach(() => {
  seen.hooks = [];
  seen.published = [];
  seen.events = [];
  seen.refunds = [];
  seen.webhookKicks = 0;
  seen.refundKicks = 0;
  seen.completed = 0;
});

describe('The job lifecycle (domain/job-lifecycle.ts)', () => {
  it("When a job's steps complete, then each is applied once through the kind's hooks, the next command is queued and published, and the completion is settled", async () => {
    const jobId = await scoutJob();

    expect(await handle({ type: 'job.step-started', ...base(jobId, 0) })).toMatchObject({
      applied: true,
      status: 'running',
    });
    const step0 = {
      type: 'job.step-completed' as const,
      ...base(jobId, 0),
      outcome: { kind: 'continue' as const, state: { n: 1 }, progressPct: 40, label: 'fetched' },
    };
    const advanced = await handle(step0);
    expect(advanced).toMatchObject({ applied: true, status: 'running', webhookQueued: false });
    expect(advanced.outboxIds).toHaveLength(1);
    expect(seen.published).toEqual(advanced.outboxIds);
    const next = await database.prisma.outboxMessage.findFirstOrThrow({ where: { messageId: `${jobId}:1` } });
    expect(next.body).toMatchObject({ jobId, stepIndex: 1, state: { n: 1, stored: true } });
    // A redelivery of the same outcome changes nothing.
    expect(await handle(step0)).toMatchObject({ applied: false, outboxIds: [] });

    const done = await handle({
      type: 'job.step-completed',
      ...base(jobId, 1),
      outcome: { kind: 'done', result: { report: 'ok' }, label: 'analysed' },
    });

    expect(done).toMatchObject({ applied: true, status: 'completed', webhookQueued: false });
    expect(seen.hooks).toEqual([`beforeNextStep ${jobId} 0`, `onCompleted ${jobId}`]);
    expect(seen.completed).toBe(1);
    expect(seen.events).toEqual([
      'job.step-started true',
      'job.step-completed true',
      'job.step-completed false',
      'job.step-completed true',
    ]);
    expect(await jobs.appliedSteps(jobId)).toEqual([
      { stepIndex: 0, label: 'fetched', progressPct: 40 },
      { stepIndex: 1, label: 'analysed', progressPct: 100 },
    ]);
  });

  it('When a paid job fails with a refunded code, then its failure, refund and webhook commit together, and settling counts the refund and kicks both loops', async () => {
    const { jobId, signature } = await paidJob();

    const failed = await lifecycle.fail(jobId, { code: 'delivery_limit', detail: 'step 0 dead-lettered' }, 0);
    await lifecycle.settle('dead-letter', failed);

    expect(failed).toMatchObject({
      applied: true,
      status: 'failed',
      webhookQueued: true,
      refundQueued: 'solana',
    });
    const refunds = await database.prisma.$queryRawUnsafe<{ job_id: string; reason: string }[]>(
      'SELECT job_id, reason FROM x402_refunds WHERE payment_signature = $1',
      signature,
    );
    expect(refunds).toEqual([{ job_id: jobId, reason: expect.stringContaining('delivery_limit') }]);
    expect(await database.prisma.webhookDelivery.count({ where: { jobId } })).toBe(1);
    expect(seen.refunds).toEqual(['solana queued']);
    expect(seen.refundKicks).toBe(1);
    expect(seen.webhookKicks).toBe(1);
    expect(seen.events).toEqual(['dead-letter true']);
    // A job already failed stays failed: a second failure changes nothing and queues nothing.
    expect(await lifecycle.fail(jobId, { code: 'stalled', detail: 'again' })).toMatchObject({
      applied: false,
      webhookQueued: false,
    });
  });

  it('When a paid job fails with a code the payer can cause, then no refund is queued', async () => {
    const { jobId, signature } = await paidJob();

    const failed = await handle({
      type: 'job.step-failed',
      ...base(jobId, 0),
      attempt: 1,
      retryable: false,
      code: 'llm_request',
      error: 'the model refused the request',
    });

    expect(failed).toMatchObject({
      applied: true,
      status: 'failed',
      webhookQueued: true,
      refundQueued: null,
    });
    expect(
      await database.prisma.$queryRawUnsafe(
        'SELECT 1 FROM x402_refunds WHERE payment_signature = $1',
        signature,
      ),
    ).toEqual([]);
    expect(seen.refundKicks).toBe(0);
    expect(seen.webhookKicks).toBe(1);
  });
});
