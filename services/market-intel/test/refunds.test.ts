import { randomInt } from 'node:crypto';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY, type JobErrorCode, type RunnerHeartbeat } from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
import { callRpc, sendUsdcTransfer } from '@repo/solana-localnet';
import { PrismaRefundLedger } from '@repo/x402-ledger';
import { associatedTokenAccountOf, RefundSender } from '@repo/x402-solana';
import type { MarketIntelService } from '../src/composition';
import { startHarness, startReplica, type Harness, type Replica } from './support/harness';

// Refunds of failed paid jobs (README, "Refunds"): two replicas of market-intel on one database and one
// RabbitMQ vhost, the local ledger's refund wallet, and this test playing the runner over RabbitMQ.
jest.setTimeout(120_000);
const PRICE = 25_000_000n;
const IDEA = 'A reconciliation copilot for mid-size fintechs that matches instant payments to invoices.';
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

let h: Harness;
let second: Replica;
let replica: MarketIntelService;
let runner: Broker;
let connection: Connection;

beforeAll(async () => {
  // The test runs the watchdog itself; refunds are looked for every 200 ms on both replicas.
  h = await startHarness('market_intel_refunds_test', {
    env: { JOB_WATCHDOG_TICK_MS: '3600000', X402_REFUND_INTERVAL_MS: '200', RUNNER_STALE_AFTER_MS: '600000' },
  });
  second = await startReplica({ ...h.config, INSTANCE_ID: `test-replica-${process.pid}` });
  replica = second.service;
  runner = await Broker.connect({ url: h.amqpUrl, connectionName: 'test runner', logger: silent });
  await runner.waitForConnection();
  const heartbeat: RunnerHeartbeat = {
    v: 1,
    runnerId: 'test-runner',
    at: new Date().toISOString(),
    intervalMs: 600_000,
    llm: { ok: true, latency_ms: 5, error: null, errorClass: null },
    search: null,
    inFlightSteps: 0,
  };
  await runner.publish(COMPUTE_TOPOLOGY.exchanges.heartbeat, '', heartbeat, { persistent: false });
  await waitFor('healthy', async () => (await fetch(`${h.baseUrl}/api/v1/health`)).status === 200);
  connection = new Connection(h.rpcUrls.solana, 'confirmed');
}, 120_000);

afterAll(async () => {
  await runner?.close(1000);
  await second?.close();
  await h?.close();
});

async function usdcOf(owner: string): Promise<bigint> {
  const account = new PublicKey(associatedTokenAccountOf(owner, h.ledger.networks.solana.mint));
  return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
}

/** A wallet of its own (so its balance moves only with this test), funded with SOL and 100 USDC. */
async function newPayer(): Promise<Keypair> {
  const payer = Keypair.generate();
  await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana', usdcAtomic: 100_000_000n });
  return payer;
}

/** Pays a prove debate from `payer` and returns the job id and the payment's signature. */
async function paidJob(payer: Keypair): Promise<{ jobId: string; signature: string }> {
  const signature = await sendUsdcTransfer({
    rpcUrl: h.rpcUrls.solana,
    payer,
    mint: h.ledger.networks.solana.mint,
    destinationTokenAccount: h.ledger.networks.solana.merchantTokenAccount,
    amountAtomic: PRICE,
    computeUnitPriceMicroLamports: randomInt(1, 2 ** 20),
  });
  const res = await h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
  expect(res.status).toBe(202);
  const { jobId } = (await res.json()) as { jobId: string };
  return { jobId, signature };
}

/** What a runner sends when a step fails for good. */
async function failStep(jobId: string, code: JobErrorCode): Promise<void> {
  const event = {
    type: 'job.step-failed' as const,
    jobId,
    stepIndex: 0,
    runnerId: 'test-runner',
    at: new Date().toISOString(),
    attempt: 3,
    retryable: false,
    code,
    error: 'upstream answered 502',
  };
  await runner.publish(COMPUTE_TOPOLOGY.exchanges.events, event.type, event, { type: event.type });
}

async function job(jobId: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${h.baseUrl}/api/v1/jobs/${jobId}`)).json()) as Record<string, unknown>;
}

/**
 * A paid debate from a fresh payer whose step then fails with `code`, once its refund is queued;
 * with the payer's and the refund wallet's USDC before anything was refunded.
 */
async function queuedRefund(code: JobErrorCode): Promise<{
  payer: Keypair;
  before: bigint;
  walletBefore: bigint;
  jobId: string;
  signature: string;
}> {
  const payer = await newPayer();
  const before = await usdcOf(payer.publicKey.toBase58());
  const walletBefore = await usdcOf(h.ledger.refundWallet.publicKey);
  const { jobId, signature } = await paidJob(payer);
  await failStep(jobId, code);
  await waitFor('refund queued', async () => (await job(jobId)).refund !== null);
  return { payer, before, walletBefore, jobId, signature };
}

/** Sum of `x402_refunds_total{outcome}` over both replicas' registries. */
async function refundCount(outcome: string): Promise<number> {
  let total = 0;
  for (const service of [h.service, replica]) {
    for (const line of (await service.metrics.registry.metrics()).split('\n')) {
      if (line.startsWith('x402_refunds_total{') && line.includes(`outcome="${outcome}"`))
        total += Number(line.split(' ').at(-1));
    }
  }
  return total;
}

/** A sender from the ledger's refund wallet, as a replica that crashes mid-refund would have. */
function refundSender(): RefundSender {
  return new RefundSender({
    network: 'solana',
    rpcUrl: h.rpcUrls.solana,
    asset: h.ledger.networks.solana.mint,
    refundSecretKey: h.ledger.refundWallet.keypair.secretKey,
  });
}

/** Ends the lease of a claimed refund (its holder crashed), so it is due again now. */
async function endLease(paymentSignature: string): Promise<void> {
  await h.db.$executeRawUnsafe(
    "UPDATE x402_refunds SET next_attempt_at = now() - interval '1 second' WHERE payment_signature = $1",
    paymentSignature,
  );
}

async function stopWorkers(): Promise<void> {
  await h.service.refunds?.stop();
  await replica.refunds?.stop();
}

function startWorkers(): void {
  h.service.refunds?.start();
  replica.refunds?.start();
}

describe('Refunds of failed paid jobs', () => {
  it('When a paid job fails on our side with two replicas running, then the payer gets the whole price back once, shown on the job, in the ledger and in the metrics', async () => {
    const payer = await newPayer();
    const before = await usdcOf(payer.publicKey.toBase58());
    const walletBefore = await usdcOf(h.ledger.refundWallet.publicKey);
    const confirmedBefore = await refundCount('confirmed');
    const queuedBefore = await refundCount('queued');
    const { jobId, signature } = await paidJob(payer);
    expect(await usdcOf(payer.publicKey.toBase58())).toBe(before - PRICE);
    expect((await job(jobId)).refund).toBeNull();

    await failStep(jobId, 'llm_unavailable');
    await waitFor(
      'refund confirmed',
      async () => ((await job(jobId)).refund as { status?: string } | null)?.status === 'confirmed',
      30_000,
    );
    const failed = await job(jobId);
    const refund = failed.refund as Record<string, unknown>;
    expect(failed).toMatchObject({ status: 'failed', error: expect.stringMatching(/^llm_unavailable: /) });
    expect(refund).toEqual({
      status: 'confirmed',
      amount: PRICE.toString(),
      network: 'solana',
      to: payer.publicKey.toBase58(),
      transaction: expect.any(String),
      confirmedAt: expect.any(String),
    });
    expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
    expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletBefore - PRICE);
    const landed = await connection.getTransaction(String(refund.transaction), {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(landed?.meta?.err).toBeNull();

    // More passes on both replicas change nothing: the refund is final.
    await Promise.all([h.service.refunds?.runDue(), replica.refunds?.runDue()]);
    expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
    expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletBefore - PRICE);
    expect(await h.service.refundLedger.forPayment(signature)).toEqual(
      expect.objectContaining({
        status: 'confirmed',
        attempts: 1,
        reason: 'job_failed:llm_unavailable',
        jobId,
        signature: refund.transaction,
      }),
    );
    expect(await refundCount('confirmed')).toBe(confirmedBefore + 1);
    expect(await refundCount('queued')).toBe(queuedBefore + 1);
  });

  it('When both replicas look for the same due refund at the same moment, then one of them sends it and the payer is refunded once', async () => {
    await stopWorkers();
    try {
      const { payer, before, walletBefore, signature } = await queuedRefund('internal');
      const claimed = await Promise.all([h.service.refunds?.runDue(), replica.refunds?.runDue()]);
      expect(claimed.sort()).toEqual([0, 1]);
      expect(await h.service.refundLedger.forPayment(signature)).toEqual(
        expect.objectContaining({ status: 'confirmed', attempts: 1 }),
      );
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
      expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletBefore - PRICE);
    } finally {
      startWorkers();
    }
  });

  it('When the stale-job watchdog fails a paid job nobody started, then it is refunded too', async () => {
    const payer = await newPayer();
    const before = await usdcOf(payer.publicKey.toBase58());
    const { jobId } = await paidJob(payer);
    await h.db.$executeRawUnsafe(
      "UPDATE agent_jobs SET created_at = now() - interval '3 hours' WHERE id = $1",
      jobId,
    );
    expect((await h.service.watchdog.tick()).failed).toBe(1);
    await waitFor(
      'refund confirmed',
      async () => ((await job(jobId)).refund as { status?: string } | null)?.status === 'confirmed',
      30_000,
    );
    expect((await job(jobId)).error).toMatch(/^stalled: /);
    expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
  });

  it('When a replica crashed after storing a signed refund and before sending it, then another replica sends that same transaction and no second one is built', async () => {
    await stopWorkers();
    try {
      const { payer, before, jobId, signature } = await queuedRefund('delivery_limit');
      expect((await job(jobId)).refund).toMatchObject({ status: 'pending', transaction: null });

      // The crashed replica: claimed, built, signed and stored, never sent.
      const ledger = new PrismaRefundLedger(h.db);
      const [claim] = await ledger.claimDue(10, 60_000);
      if (!claim) throw new Error('the refund was not due');
      const sender = refundSender();
      const stored = await sender.build({
        paymentSignature: signature,
        payer: payer.publicKey.toBase58(),
        amountAtomic: PRICE,
      });
      expect(await ledger.recordAttempt(claim, stored)).toBe(true);
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before - PRICE);
      // Its lease ends.
      await endLease(signature);

      expect(await replica.refunds?.runDue()).toBe(1);
      expect(await h.service.refundLedger.forPayment(signature)).toEqual(
        expect.objectContaining({ status: 'confirmed', signature: stored.signature, attempts: 1 }),
      );
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
      expect((await job(jobId)).refund).toMatchObject({ status: 'confirmed', transaction: stored.signature });
    } finally {
      startWorkers();
    }
  });

  it('When a stored refund expired without landing, then a new one is built and sent, the expired one can no longer land, and the payer is refunded once', async () => {
    await stopWorkers();
    try {
      const { payer, before, walletBefore, signature } = await queuedRefund('search_unavailable');

      const ledger = new PrismaRefundLedger(h.db);
      const [claim] = await ledger.claimDue(10, 60_000);
      if (!claim) throw new Error('the refund was not due');
      const sender = refundSender();
      const stale = await sender.build({
        paymentSignature: signature,
        payer: payer.publicKey.toBase58(),
        amountAtomic: PRICE,
      });
      // Its blockhash expires (the ledger forgets every blockhash) and the chain moves past the last
      // height it could land at, as on a cluster after about a minute.
      await callRpc(h.rpcUrls.solana, 'localnet_expireBlockhashes');
      const height = await connection.getBlockHeight('confirmed');
      expect(
        await ledger.recordAttempt(claim, { ...stale, lastValidBlockHeight: Math.max(0, height - 1) }),
      ).toBe(true);
      await endLease(signature);

      // One pass clears the expired attempt, the next builds, sends and confirms a new one.
      expect(await replica.refunds?.runDue()).toBe(1);
      expect((await h.service.refundLedger.forPayment(signature))?.signature).toBeNull();
      expect(await replica.refunds?.runDue()).toBe(1);
      const record = await h.service.refundLedger.forPayment(signature);
      expect(record).toEqual(expect.objectContaining({ status: 'confirmed', attempts: 2 }));
      expect(record?.signature).not.toBe(stale.signature);
      await expect(sender.send(stale)).rejects.toEqual(expect.objectContaining({ kind: 'refused' }));
      expect(await sender.status({ ...stale, lastValidBlockHeight: height - 1 })).toEqual({
        state: 'expired',
      });
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
      expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletBefore - PRICE);
    } finally {
      startWorkers();
    }
  });
});
