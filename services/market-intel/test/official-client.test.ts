import { decodePaymentResponseHeader } from '@x402/fetch';
import type { AgentJob, X402Network } from '@repo/schemas';
import { ForgeResult } from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
import { spawnService } from '@repo/service-kit/testing';
import path from 'node:path';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import { buildReport, startHarness, type Harness } from './support/harness';
import { balances, officialFetch, type Balances } from './support/official-client';
import { startScriptedRunner, type ScriptedRunner } from './support/runner';

// An agent paying with nothing but the official x402 v2 client (@x402/fetch + @x402/svm), as its
// documentation shows, against market-intel wired as production wires it, on the local ledger.
jest.setTimeout(120_000);

let h: Harness;
let compute: ScriptedRunner;

/** What every official payment must do to the balances. */
function expectPaid(before: Balances, after: Balances, priceAtomic: bigint): void {
  expect(after.payerUsdc).toBe(before.payerUsdc - priceAtomic);
  expect(after.merchantUsdc).toBe(before.merchantUsdc + priceAtomic);
  expect(after.payerSol).toBe(before.payerSol);
  // Two signatures at 5,000 lamports, plus at most a few lamports of priority fee.
  expect(before.feePayerSol - after.feePayerSol).toBeGreaterThanOrEqual(10_000);
  expect(before.feePayerSol - after.feePayerSol).toBeLessThan(10_100);
}

beforeAll(async () => {
  h = await startHarness('market_intel_official_client_test');
  await h.reports.importReport(buildReport(), 'import');
  compute = await startScriptedRunner(h, 'official');
}, 180_000);

afterAll(async () => {
  await compute?.close();
  await h?.close();
});

describe('Paying market-intel with the official x402 client', () => {
  it.each<[string, X402Network, bigint]>([
    ['/api/v1/scout/gaps', 'solana', 100_000n],
    ['/api/v1/scout/pain-clusters', 'solana', 100_000n],
    ['/api/v1/scout/trends', 'solana', 100_000n],
    ['/api/v1/scout/brief', 'solana', 200_000n],
    ['/api/v1/scout/keywords?network=devnet', 'solana-devnet', 50_000n],
  ])(
    'When the official client GETs %s, then 200, PAYMENT-RESPONSE names the settlement and the agent pays the price but no fee',
    async (pathAndQuery, network, price) => {
      const before = await balances(h, network);
      const res = await (await officialFetch(h, h.agent))(h.baseUrl + pathAndQuery);
      expect(res.status).toBe(200);
      await res.json();
      const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
      expect(settlement).toMatchObject({
        success: true,
        network: CAIP2_NETWORKS[network],
        payer: h.agent.publicKey.toBase58(),
      });
      expect(await h.paymentRows(settlement.transaction)).toEqual([
        { status: 'completed', endpoint: `GET ${pathAndQuery.split('?')[0]}` },
      ]);
      expectPaid(before, await balances(h, network), price);
    },
  );

  it('When the official client pays a forge ideation (15 USDC), then 202, the payment settles once and the job completes', async () => {
    const before = await balances(h, 'solana');
    const res = await (
      await officialFetch(h, h.agent)
    )(`${h.baseUrl}/api/v1/forge/ideate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sectors: ['fintech'], context: 'B2B only', product_modes: ['saas'] }),
    });
    expect(res.status).toBe(202);
    const { jobId } = (await res.json()) as { jobId: string };
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    expect(settlement).toMatchObject({ success: true, payer: h.agent.publicKey.toBase58() });
    expectPaid(before, await balances(h, 'solana'), 15_000_000n);
    const job = await waitFor(
      `job ${jobId} to finish`,
      async () => {
        const j = (await (await fetch(`${h.baseUrl}/api/v1/jobs/${jobId}`)).json()) as AgentJob;
        return j.status === 'completed' || j.status === 'failed' ? j : undefined;
      },
      90_000,
    );
    expect(job.status).toBe('completed');
    expect(ForgeResult.parse(job.result).rounds).toHaveLength(5);
  });

  it('When market-intel runs as its own process (not inside the test runner), then the official client pays it too', async () => {
    // Jest gives each suite its own globals: only a real process shows how the facilitator's RPC client
    // (@solana/kit over the global fetch) gets along with the undici the service loads.
    const service = await spawnService({
      cwd: path.join(__dirname, '..'),
      env: { ...h.env, LOG_LEVEL: 'warn', INSTANCE_ID: `official-process-${process.pid}` },
    });
    try {
      const before = await balances(h, 'solana');
      const res = await (await officialFetch(h, h.agent))(`${service.baseUrl}/api/v1/scout/keywords`);
      expect(res.status).toBe(200);
      expect(decodePaymentResponseHeader(res.headers.get('payment-response') ?? '')).toMatchObject({
        success: true,
        payer: h.agent.publicKey.toBase58(),
      });
      expectPaid(before, await balances(h, 'solana'), 50_000n);
    } finally {
      await service.stop();
    }
  });
});
