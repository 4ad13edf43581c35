import { Keypair } from '@solana/web3.js';
import { COMPUTE_TOPOLOGY, type RunnerHeartbeat } from '@repo/compute';
import { Broker } from '@repo/queue';
import { waitFor } from '@repo/queue/testing';
import { fundWallet, payUsdc } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { startHarness, startReplica, type Harness } from './support/harness';

// Devnet USDC and wallets are free, so devnet compute jobs are capped per client and for the whole
// service per day as well as per payer wallet, across replicas (docs/payments.md, "Devnet"). Every job here is
// paid from a fresh wallet: the per-wallet cap alone would let each of them through.
jest.setTimeout(120_000);

const PER_CLIENT = 2;
const GLOBAL = 3;
const DEVNET_FORGE = '/api/v1/forge/ideate?network=devnet';
const FORGE_PRICE = 15_000_000n;

let h: Harness;
let runner: Broker;

beforeAll(async () => {
  h = await startHarness('market_intel_devnet_compute_caps_test', {
    env: {
      TRUST_PROXY: '1',
      X402_DEVNET_COMPUTE_PER_DAY: '1',
      X402_DEVNET_COMPUTE_PER_CLIENT_PER_DAY: String(PER_CLIENT),
      X402_DEVNET_COMPUTE_GLOBAL_PER_DAY: String(GLOBAL),
      RUNNER_STALE_AFTER_MS: '600000',
      JOB_WATCHDOG_TICK_MS: '3600000',
    },
  });
  const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
  runner = await Broker.connect({ url: h.amqpUrl, connectionName: 'test runner', logger: silent });
  await runner.waitForConnection();
  await beat();
  await waitFor('healthy', async () => (await fetch(`${h.baseUrl}/api/v1/health`)).status === 200);
});
afterAll(async () => {
  await runner?.close(1000);
  await h?.close();
});

/** A healthy runner's heartbeat, which every replica hears (the compute preflight needs one). */
async function beat(): Promise<void> {
  const heartbeat: RunnerHeartbeat = {
    v: 1,
    runnerId: 'test-runner',
    at: new Date().toISOString(),
    intervalMs: 5000,
    llm: { ok: true, latency_ms: 12, error: null, errorClass: null },
    search: null,
    inFlightSteps: 0,
  };
  await runner.publish(COMPUTE_TOPOLOGY.exchanges.heartbeat, '', heartbeat, { persistent: false });
}

/** A wallet of its own with devnet USDC for `jobs` forge jobs. */
async function freshWallet(jobs = 1): Promise<Keypair> {
  const wallet = Keypair.generate();
  await fundWallet({
    rpcUrl: h.rpcUrls['solana-devnet'],
    owner: wallet.publicKey.toBase58(),
    usdcAtomic: FORGE_PRICE * BigInt(jobs),
  });
  return wallet;
}

/** Pays a devnet forge job from `payer` and posts it from the client address `ip` (to `baseUrl`). */
async function devnetForge(
  payer: Keypair,
  ip: string,
  baseUrl = h.baseUrl,
): Promise<{ res: Response; signature: string }> {
  const signature = await payUsdc(h.ledger, 'solana-devnet', FORGE_PRICE, { payer });
  const res = await fetch(baseUrl + DEVNET_FORGE, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'X-PAYMENT': encodePaymentHeader('solana-devnet', signature),
      'x-forwarded-for': ip,
    },
    body: '{}',
  });
  return { res, signature };
}

async function jobCount(): Promise<number> {
  const counts = await h.service.jobs.countByStatus();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** Checks a refusal as the per-wallet one answers it: 429, Retry-After, no settlement, no job, payment kept. */
async function expectRefused(
  answer: { res: Response; signature: string },
  details: { limit: string; perDay: number },
  jobsBefore: number,
): Promise<void> {
  const { res, signature } = answer;
  expect(res.status).toBe(429);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(86_000);
  expect(retryAfter).toBeLessThanOrEqual(86_400);
  expect(res.headers.get('x-payment-response')).toBeNull();
  expect(res.headers.get('payment-response')).toBeNull();
  expect(await res.json()).toMatchObject({ code: 'rate_limited', details, requestId: expect.any(String) });
  expect(await jobCount()).toBe(jobsBefore);
  // Verified but not consumed: the same payment starts the job once a place is free.
  expect(await h.paymentRows(signature)).toEqual([
    { status: 'verified', endpoint: 'POST /api/v1/forge/ideate' },
  ]);
}

describe('devnet compute caps', () => {
  // Each test starts with empty caps (the tests run in random order); wallets are fresh anyway.
  beforeEach(async () => {
    await h.db.$executeRawUnsafe("DELETE FROM rate_limits WHERE key LIKE 'devnet_compute_%'");
  });

  it('When one client pays devnet jobs from fresh wallets, then it gets X402_DEVNET_COMPUTE_PER_CLIENT_PER_DAY of them and then 429 client_per_day, the payment verified but not consumed', async () => {
    const client = '203.0.113.10';
    const first = await freshWallet(2);
    expect((await devnetForge(first, client)).res.status).toBe(202);
    // The per-wallet refusal gives back the places it took under the client and global caps.
    const again = await devnetForge(first, client);
    expect(again.res.status).toBe(429);
    expect(await again.res.json()).toMatchObject({ details: { limit: 'payer_per_day', perDay: 1 } });
    expect((await devnetForge(await freshWallet(), client)).res.status).toBe(202);

    const before = await jobCount();
    await expectRefused(
      await devnetForge(await freshWallet(), client),
      { limit: 'client_per_day', perDay: PER_CLIENT },
      before,
    );
    // The same client in another form of its address (IPv4-mapped IPv6) is the same client.
    await expectRefused(
      await devnetForge(await freshWallet(), `::ffff:${client}`),
      { limit: 'client_per_day', perDay: PER_CLIENT },
      before,
    );
  });

  it('When devnet jobs of all clients reach X402_DEVNET_COMPUTE_GLOBAL_PER_DAY, then any further client gets 429 global_per_day, the payment verified but not consumed; main-network jobs are not capped', async () => {
    const busy = '2001:db8:7:1::1';
    for (let i = 0; i < PER_CLIENT; i += 1)
      expect((await devnetForge(await freshWallet(), busy)).res.status).toBe(202);
    // Another address of the same /64 is the same client; its refusal takes no global place.
    expect((await devnetForge(await freshWallet(), '2001:db8:7:1::2')).res.status).toBe(429);
    expect((await devnetForge(await freshWallet(), '198.51.100.20')).res.status).toBe(202);

    const before = await jobCount();
    await expectRefused(
      await devnetForge(await freshWallet(), '198.51.100.21'),
      { limit: 'global_per_day', perDay: GLOBAL },
      before,
    );

    const mainnet = await h.transfer({ amountAtomic: FORGE_PRICE });
    const res = await fetch(`${h.baseUrl}/api/v1/forge/ideate`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-PAYMENT': encodePaymentHeader('solana', mainnet),
        'x-forwarded-for': '198.51.100.21',
      },
      body: '{}',
    });
    expect(res.status).toBe(202);
  });

  it('When another replica takes a devnet job, then it finds the caps the first one counted (they live in PostgreSQL)', async () => {
    for (const client of ['192.0.2.1', '192.0.2.2', '192.0.2.3'])
      expect((await devnetForge(await freshWallet(), client)).res.status).toBe(202);
    const replica = await startReplica({ ...h.config, INSTANCE_ID: `test-replica-${process.pid}` });
    try {
      await beat();
      await waitFor(
        'replica healthy',
        async () => (await fetch(`${replica.baseUrl}/api/v1/health`)).status === 200,
      );
      const before = await jobCount();
      await expectRefused(
        await devnetForge(await freshWallet(), '192.0.2.4', replica.baseUrl),
        { limit: 'global_per_day', perDay: GLOBAL },
        before,
      );
    } finally {
      await replica.close();
    }
  });
});
