import { Keypair } from '@solana/web3.js';
import { ExactSvmSettler } from '@repo/x402-solana';
import { createFeePayerMonitor } from '../src/entry-points/workers/fee-payer-monitor';
import { metricValue, scrape, waitFor } from '@repo/service-kit/testing';
import { buildReport, startHarness, type Harness } from './support/harness';
import { balances, officialFetch } from './support/official-client';

// Official-scheme settlements cost the fee payer a fee even when the transaction fails, so they are
// limited per payer wallet and per client, across replicas (docs/payments.md, "Paying with an official x402
// client"); the fee payer's balance is watched.
let h: Harness;

beforeAll(async () => {
  h = await startHarness('market_intel_settlement_limits_test', {
    env: { X402_SETTLEMENTS_PER_MINUTE_PER_PAYER: '2', X402_SETTLEMENTS_PER_MINUTE_PER_CLIENT: '3' },
  });
  await h.reports.importReport(buildReport(), 'import');
});
afterAll(() => h?.close());

async function keywords(payer: Keypair): Promise<Response> {
  return (await officialFetch(h, payer))(`${h.baseUrl}/api/v1/scout/keywords`);
}

describe('Settlement limits', () => {
  it('When a payer exceeds its settlements per minute, then 429 rate_limited with Retry-After, and once the client is over its limit another payer from it is refused too, nothing charged', async () => {
    const before = await balances(h, 'solana');
    expect((await keywords(h.agent)).status).toBe(200);
    expect((await keywords(h.agent)).status).toBe(200);

    const third = await keywords(h.agent);
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await third.json()).toMatchObject({ code: 'rate_limited', details: { limit: 'payer' } });
    const afterPayer = await balances(h, 'solana');
    expect(afterPayer.payerUsdc).toBe(before.payerUsdc - 2n * 50_000n);
    expect(afterPayer.payerSol).toBe(before.payerSol);

    // The same client (127.0.0.1) has now asked for three settlements: a fourth, by a new wallet, is refused.
    const other = Keypair.generate();
    await h.ledger.fund(other.publicKey.toBase58(), { network: 'solana' });
    const otherBefore = await balances(h, 'solana', other);
    const fourth = await keywords(other);
    expect(fourth.status).toBe(429);
    expect(await fourth.json()).toMatchObject({ code: 'rate_limited', details: { limit: 'client' } });
    expect(await balances(h, 'solana', other)).toEqual({
      ...otherBefore,
      feePayerSol: afterPayer.feePayerSol,
    });

    const rows = await h.db.$queryRawUnsafe<{ n: number }[]>(
      "SELECT count(*)::int AS n FROM x402_payments WHERE endpoint = 'GET /api/v1/scout/keywords'",
    );
    expect(rows).toEqual([{ n: 2 }]);
    const metrics = await scrape(h.metricsUrl);
    expect(
      metricValue(metrics, 'x402_payments_total', {
        type: 'rejected',
        reason: 'rate_limited',
        network: 'solana',
      }),
    ).toBe(2);
  });

  it('When the service runs with a fee payer, then /metrics shows its SOL balance per network', async () => {
    // Read at start, in the background: wait for the first reading.
    const metrics = await waitFor('the fee payer balance gauge', async () => {
      const text = await scrape(h.metricsUrl);
      return metricValue(text, 'x402_fee_payer_lamports', { network: 'solana-devnet' }) !== undefined
        ? text
        : undefined;
    });
    for (const network of ['solana', 'solana-devnet'])
      expect(metricValue(metrics, 'x402_fee_payer_lamports', { network })).toBeGreaterThan(1_000_000_000);
  });
});

describe('FeePayerMonitor', () => {
  it('When the fee payer holds less than the minimum, then one warning names it until the balance recovers', async () => {
    const lines: { level: 'warn' | 'debug'; msg: string; network?: unknown }[] = [];
    const logger = {
      warn: (fields: Record<string, unknown>, msg: string) =>
        void lines.push({ level: 'warn', msg, ...fields }),
      debug: (fields: Record<string, unknown>, msg: string) =>
        void lines.push({ level: 'debug', msg, ...fields }),
    };
    const settler = new ExactSvmSettler({
      network: 'solana',
      rpcUrl: h.rpcUrls.solana,
      asset: h.ledger.networks.solana.mint,
      payTo: h.ledger.networks.solana.merchantOwner,
      feePayerSecretKey: h.ledger.feePayer.keypair.secretKey,
    });
    const seen: bigint[] = [];
    const options = {
      minLamports: 10n ** 18n,
      logger,
      onBalance: (_n: string, l: bigint) => void seen.push(l),
    };
    const monitor = createFeePayerMonitor({ solana: settler }, options);
    await monitor.check();
    await monitor.check();
    const warnings = () =>
      lines.filter((l) => l.level === 'warn' && l.msg.startsWith('x402 fee payer balance is low'));
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ network: 'solana' });
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBeGreaterThan(0n);
    options.minLamports = 0n;
    await monitor.check();
    options.minLamports = 10n ** 18n;
    await monitor.check();
    expect(warnings()).toHaveLength(2);
  });
});
