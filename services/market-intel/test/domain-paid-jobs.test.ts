import { randomUUID } from 'node:crypto';
import type { X402Network } from '@repo/schemas';
import { PrismaPaymentLedger, type PaymentClaim } from '@repo/x402-ledger';
import { buildClaimRequest, buildVerifiedPayment } from '@repo/x402-ledger/testing';
import { JobRepository } from '../src/data/jobs';
import { startPaidJob, type PaidJobPorts, type PaidJobRequest } from '../src/domain/paid-jobs';
import { COMPUTE_PRICES } from '../src/domain/prices';
import { openMigratedDatabase } from './support/database';

// The use case alone, on a real database: no broker, no HTTP, no chain (the payment is claimed and
// marked verified in the ledger as the x402 middleware leaves it).
let database: Awaited<ReturnType<typeof openMigratedDatabase>>;
let ledger: PrismaPaymentLedger;
let published: bigint[];
let created: string[];
let ports: PaidJobPorts;
const SESSION = randomUUID();

beforeAll(async () => {
  database = await openMigratedDatabase('market_intel_domain_paid_jobs_test');
  ledger = new PrismaPaymentLedger(database.prisma);
});

beforeEach(() => {
  published = [];
  created = [];
  ports = {
    jobs: new JobRepository(database.prisma),
    ledger,
    publishNow: async (ids) => void published.push(...ids),
    onJobCreated: (kind) => void created.push(kind),
  };
});

afterAll(async () => {
  await database.close();
});

/** A prove payment claimed and verified, as `acceptPayment` hands it to the route. */
async function acceptedPayment(network: X402Network = 'solana'): Promise<PaidJobRequest['payment']> {
  const verified = buildVerifiedPayment({ network, amountAtomic: COMPUTE_PRICES.prove.amountAtomic });
  const outcome = await ledger.claim(
    buildClaimRequest({
      signature: verified.signature,
      network,
      endpoint: COMPUTE_PRICES.prove.endpoint,
      kind: 'async',
    }),
  );
  if (outcome.outcome !== 'claimed') throw new Error(`payment not claimed: ${outcome.outcome}`);
  const claim: PaymentClaim = outcome.claim;
  await ledger.markVerified(claim, verified);
  return { signature: verified.signature, payer: verified.payer, network, claim };
}

function proveRequest(
  payment: PaidJobRequest['payment'],
  overrides: Partial<PaidJobRequest> = {},
): PaidJobRequest {
  return {
    kind: 'prove',
    route: COMPUTE_PRICES.prove,
    payment,
    clientIp: '203.0.113.7',
    webhookUrl: null,
    proveSessionId: SESSION,
    buildInput: async () => ({ idea: 'a ledger for agents' }),
    ...overrides,
  };
}

async function paymentRow(signature: string): Promise<{ status: string; job_id: string | null } | undefined> {
  const rows = await database.prisma.$queryRawUnsafe<{ status: string; job_id: string | null }[]>(
    'SELECT status, job_id FROM x402_payments WHERE signature = $1',
    signature,
  );
  return rows[0];
}

async function jobsPaidWith(signature: string): Promise<number> {
  return database.prisma.agentJob.count({ where: { txSignature: signature } });
}

describe('startPaidJob (domain/paid-jobs.ts)', () => {
  it('When a paid job starts, then the job, its first step command and the consumed payment commit together and the step is published', async () => {
    const payment = await acceptedPayment();

    const started = await startPaidJob(ports, proveRequest(payment));

    expect(started).toEqual({
      jobId: expect.stringMatching(/^job_/),
      status: 'pending',
      statusUrl: `/api/v1/jobs/${started.jobId}`,
      etaMinutes: 60,
      proveSessionId: SESSION,
    });
    const job = await database.prisma.agentJob.findUniqueOrThrow({ where: { id: started.jobId } });
    expect(job).toMatchObject({
      kind: 'prove',
      status: 'pending',
      endpoint: COMPUTE_PRICES.prove.endpoint,
      txSignature: payment.signature,
      network: 'solana',
      payer: payment.payer,
      input: { idea: 'a ledger for agents' },
    });
    const step = await database.prisma.outboxMessage.findFirstOrThrow({
      where: { messageId: `${started.jobId}:0` },
    });
    expect(published).toEqual([step.id]);
    expect(await paymentRow(payment.signature)).toEqual({ status: 'completed', job_id: started.jobId });
    expect(created).toEqual(['prove']);
  });

  it('When the payer wallet has used its devnet jobs for the day, then nothing is written and the payment stays verified, not consumed', async () => {
    const payment = await acceptedPayment('solana-devnet');

    await expect(
      startPaidJob({ ...ports, devnetJobsPerDay: 0 }, proveRequest(payment)),
    ).rejects.toMatchObject({
      code: 'rate_limited',
      details: { limit: 'payer_per_day', perDay: 0 },
    });

    expect(await jobsPaidWith(payment.signature)).toBe(0);
    expect(await paymentRow(payment.signature)).toEqual({ status: 'verified', job_id: null });
    expect(published).toEqual([]);
    expect(created).toEqual([]);
  });

  it('When building the input fails, then no job exists and the same payment can start a job afterwards', async () => {
    const payment = await acceptedPayment();
    const failing = proveRequest(payment, {
      buildInput: async () => {
        throw new Error('reports unavailable');
      },
    });

    await expect(startPaidJob(ports, failing)).rejects.toThrow('reports unavailable');
    expect(await jobsPaidWith(payment.signature)).toBe(0);

    const again = await ledger.claim(
      buildClaimRequest({
        signature: payment.signature,
        network: 'solana',
        endpoint: COMPUTE_PRICES.prove.endpoint,
        kind: 'async',
      }),
    );
    expect(again.outcome).toBe('claimed');
    if (again.outcome !== 'claimed') return;
    const started = await startPaidJob(ports, proveRequest({ ...payment, claim: again.claim }));
    expect(await paymentRow(payment.signature)).toEqual({ status: 'completed', job_id: started.jobId });
  });
});
