import { randomInt } from 'node:crypto';
import { Connection, Keypair, PublicKey, Transaction, TransactionInstruction } from '@solana/web3.js';
import { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY, type JobErrorCode, type RunnerHeartbeat } from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
import { createLogger } from '@repo/service-kit';
import { callRpc, sendUsdcTransfer, waitForSignature } from '@repo/solana-localnet';
import { PrismaRefundLedger, type RefundClaim } from '@repo/x402-ledger';
import { associatedTokenAccountOf, RefundSender, type SignedRefund } from '@repo/x402-solana';
import type { MarketIntelService } from '../src/composition';
import { createRefundWorker } from '../src/entry-points/workers/refund-worker';
import { startHarness, startReplica, type Harness, type Replica } from './support/harness';
import { RpcInterceptor } from './support/rpc-interceptor';

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

async function lamportsOf(wallet: string): Promise<number> {
  return connection.getBalance(new PublicKey(wallet), 'confirmed');
}

/** A wallet of its own (so its balance moves only with this test), funded with SOL and 100 USDC. */
async function newPayer(usdcAtomic = 100_000_000n): Promise<Keypair> {
  const payer = Keypair.generate();
  await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana', usdcAtomic });
  return payer;
}

/** The payer closes its (empty) associated token account, taking its rent back. */
async function closeTokenAccount(payer: Keypair): Promise<PublicKey> {
  const account = new PublicKey(
    associatedTokenAccountOf(payer.publicKey.toBase58(), h.ledger.networks.solana.mint),
  );
  const close = new TransactionInstruction({
    programId: new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'),
    keys: [
      { pubkey: account, isSigner: false, isWritable: true },
      { pubkey: payer.publicKey, isSigner: false, isWritable: true },
      { pubkey: payer.publicKey, isSigner: true, isWritable: false },
    ],
    data: Buffer.from([9]), // CloseAccount
  });
  // A fresh blockhash: a test here expires every blockhash the ledger knows.
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash('confirmed');
  const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(close);
  tx.sign(payer);
  const signature = await connection.sendRawTransaction(tx.serialize());
  expect((await waitForSignature(connection, signature)).err).toBeNull();
  expect(await connection.getAccountInfo(account)).toBeNull();
  return account;
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
function refundSender(rpcUrl = h.rpcUrls.solana): RefundSender {
  return new RefundSender({
    network: 'solana',
    rpcUrl,
    asset: h.ledger.networks.solana.mint,
    refundSecretKey: h.ledger.refundWallet.keypair.secretKey,
  });
}

/** What the crashed replica built for the refund of `signature` paid by `payer`. */
async function builtRefund(sender: RefundSender, payer: Keypair, signature: string): Promise<SignedRefund> {
  const built = await sender.build({
    paymentSignature: signature,
    payer: payer.publicKey.toBase58(),
    amountAtomic: PRICE,
    payTo: h.ledger.networks.solana.merchantTokenAccount,
  });
  if (built.kind !== 'signed') throw new Error(`the refund is ${built.reason}`);
  return built.refund;
}

/** The refund row as stored, with the lease columns the ledger does not return. */
async function refundRow(paymentSignature: string): Promise<Record<string, unknown> | undefined> {
  const rows = await h.db.$queryRawUnsafe<Record<string, unknown>[]>(
    `SELECT status, unclaimable_reason, destination, signature, transaction, attempts, claim_token, last_error
       FROM x402_refunds WHERE payment_signature = $1`,
    paymentSignature,
  );
  return rows[0];
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
      reason: null,
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
        destination: associatedTokenAccountOf(payer.publicKey.toBase58(), h.ledger.networks.solana.mint),
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
      const stored = await builtRefund(sender, payer, signature);
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
      const stale = await builtRefund(sender, payer, signature);
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
  it('When the payer closed the token account it paid from before its failed job was refunded, then the refund is held as unclaimable, shown on the job and counted, and nothing is sent, created or retried', async () => {
    const payer = await newPayer(PRICE);
    const walletUsdc = await usdcOf(h.ledger.refundWallet.publicKey);
    const walletLamports = await lamportsOf(h.ledger.refundWallet.publicKey);
    const unclaimableBefore = await refundCount('unclaimable');
    const sentBefore = await refundCount('sent');
    const { jobId, signature } = await paidJob(payer);
    // Empty after paying: the payer closes it and keeps its rent.
    const account = await closeTokenAccount(payer);

    await failStep(jobId, 'internal');
    const refund = await waitFor(
      'refund held',
      async () => {
        const shown = (await job(jobId)).refund as { status?: string } | null;
        return shown?.status === 'unclaimable' ? shown : undefined;
      },
      30_000,
    );
    expect(refund).toEqual({
      status: 'unclaimable',
      amount: PRICE.toString(),
      network: 'solana',
      to: payer.publicKey.toBase58(),
      transaction: null,
      confirmedAt: null,
      reason: 'source_account_closed',
    });
    expect(await refundRow(signature)).toEqual({
      status: 'unclaimable',
      unclaimable_reason: 'source_account_closed',
      destination: account.toBase58(),
      signature: null,
      transaction: null,
      attempts: 0,
      claim_token: null,
      last_error: expect.stringContaining(account.toBase58()),
    });
    expect(await refundCount('unclaimable')).toBe(unclaimableBefore + 1);
    expect(await refundCount('sent')).toBe(sentBefore);
    // Nothing created at the refund wallet's expense, nothing paid.
    expect(await connection.getAccountInfo(account)).toBeNull();
    expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletUsdc);
    expect(await lamportsOf(h.ledger.refundWallet.publicKey)).toBe(walletLamports);

    // Final: made due again, neither replica claims it.
    await endLease(signature);
    expect(await Promise.all([h.service.refunds?.runDue(), replica.refunds?.runDue()])).toEqual([0, 0]);
    expect((await refundRow(signature))?.status).toBe('unclaimable');
    expect(await refundCount('unclaimable')).toBe(unclaimableBefore + 1);
    expect(await lamportsOf(h.ledger.refundWallet.publicKey)).toBe(walletLamports);
  });

  it.each(['llm_request', 'llm_output'] as const)(
    'When a paid job fails with %s (which the payer’s own text can cause), then it is not refunded: no refund is queued and the payer’s balance stays paid',
    async (code) => {
      const payer = await newPayer();
      const before = await usdcOf(payer.publicKey.toBase58());
      const queuedBefore = await refundCount('queued');
      const { jobId, signature } = await paidJob(payer);
      await failStep(jobId, code);
      // The refund would be queued in the transaction that fails the job: once failed, it is decided.
      await waitFor('failed', async () => (await job(jobId)).status === 'failed');
      const failed = await job(jobId);
      expect(failed).toMatchObject({
        status: 'failed',
        error: expect.stringMatching(new RegExp(`^${code}: `)),
      });
      expect(failed.refund).toBeNull();
      expect(await h.service.refundLedger.forPayment(signature)).toBeNull();
      expect(await Promise.all([h.service.refunds?.runDue(), replica.refunds?.runDue()])).toEqual([0, 0]);
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before - PRICE);
      expect(await refundCount('queued')).toBe(queuedBefore);
    },
  );

  it('When another worker takes the lease of a refund after it was built and before it was recorded, then that transaction is never sent: nothing moves on chain, the row is the other worker’s and untouched, and the refund is later sent once', async () => {
    await stopWorkers();
    const rpc = await RpcInterceptor.start(h.rpcUrls.solana);
    try {
      const { payer, before, walletBefore, signature } = await queuedRefund('internal');
      const walletLamports = await lamportsOf(h.ledger.refundWallet.publicKey);
      const ledger = new PrismaRefundLedger(h.db);
      const worker = createRefundWorker(
        ledger,
        { solana: refundSender(rpc.url) },
        { intervalMs: 60_000, confirmTimeoutMs: 5_000, pollIntervalMs: 50 },
        createLogger({ name: 'refund-worker-test', level: 'silent' }),
      );
      // The blockhash is the last thing a refund is built on: the worker's lease runs out there and
      // another worker claims the refund, as a replica does once a lease ended.
      let other: RefundClaim | undefined;
      const taken = rpc.beforeNext('getLatestBlockhash', async () => {
        await endLease(signature);
        [other] = await ledger.claimDue(10, 60_000);
      });
      expect(await worker.runDue()).toBe(1);
      await taken;
      if (!other) throw new Error('the other worker claimed nothing');
      expect(other.refund.paymentSignature).toBe(signature);

      // Nothing moved on the ledger, and no transaction was even offered to it.
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before - PRICE);
      expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletBefore);
      expect(await lamportsOf(h.ledger.refundWallet.publicKey)).toBe(walletLamports);
      expect(rpc.calls).toContain('getLatestBlockhash');
      expect(rpc.calls).not.toContain('sendTransaction');
      expect(await refundRow(signature)).toEqual({
        status: 'pending',
        unclaimable_reason: null,
        destination: null,
        signature: null,
        transaction: null,
        attempts: 0,
        claim_token: other.token,
        last_error: null,
      });

      // The other worker lets it go; the next pass refunds it, once.
      await ledger.release(other, 0);
      expect(await h.service.refunds?.runDue()).toBe(1);
      expect(await h.service.refundLedger.forPayment(signature)).toEqual(
        expect.objectContaining({ status: 'confirmed', attempts: 1 }),
      );
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
      expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletBefore - PRICE);
    } finally {
      await rpc.close();
      startWorkers();
    }
  });

  it('When both replicas’ workers run on a failed job’s refund at once, and then again, twice, then it is claimed, sent and confirmed once: the payer’s balance goes up by the price exactly once', async () => {
    await stopWorkers();
    try {
      const { payer, before, walletBefore, jobId, signature } = await queuedRefund('llm_unavailable');
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before - PRICE);
      const sentBefore = await refundCount('sent');
      const confirmedBefore = await refundCount('confirmed');
      const both = () => Promise.all([h.service.refunds?.runDue(), replica.refunds?.runDue()]);

      const first = await both();
      const confirmed = await h.service.refundLedger.forPayment(signature);
      // Again, and again once it would be due: a confirmed refund is never claimed or sent again.
      const again = await both();
      await endLease(signature);
      const due = await both();

      // The money first: the price came back once, from the refund wallet.
      expect(await usdcOf(payer.publicKey.toBase58())).toBe(before);
      expect(await usdcOf(h.ledger.refundWallet.publicKey)).toBe(walletBefore - PRICE);
      expect(first.sort()).toEqual([0, 1]);
      expect(again).toEqual([0, 0]);
      expect(due).toEqual([0, 0]);
      expect(confirmed).toEqual(expect.objectContaining({ status: 'confirmed', attempts: 1 }));
      expect(await h.service.refundLedger.forPayment(signature)).toEqual(confirmed);
      expect(await refundRow(signature)).toEqual(expect.objectContaining({ attempts: 1, claim_token: null }));
      expect(await refundCount('sent')).toBe(sentBefore + 1);
      expect(await refundCount('confirmed')).toBe(confirmedBefore + 1);
      expect((await job(jobId)).refund).toMatchObject({
        status: 'confirmed',
        transaction: confirmed?.signature,
      });
    } finally {
      startWorkers();
    }
  });
});
