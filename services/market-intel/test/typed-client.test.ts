import { marketIntelClient } from '@repo/api-client';
import { buildReport, startHarness, type Harness } from './support/harness';
import { balances } from './support/official-client';

// The typed client of @repo/api-client (generated from the OpenAPI document this service serves)
// against the running service and the local ledger: paid calls pay through @repo/x402-solana's client.
jest.setTimeout(60_000);

let h: Harness;
beforeAll(async () => {
  h = await startHarness('market_intel_typed_client_test');
  await h.reports.importReport(buildReport(), 'import');
});
afterAll(() => h?.close());

describe('The typed market-intel client', () => {
  it('When it calls a paid endpoint with a wallet, then it pays once and gets the typed answer', async () => {
    const before = await balances(h, 'solana');
    const client = marketIntelClient(h.baseUrl, { keypair: h.agent, rpcUrls: h.rpcUrls });
    const { data, response } = await client.GET('/api/v1/scout/gaps', {
      params: { query: { sector: 'fintech', limit: 2 } },
    });
    expect(response.status).toBe(200);
    expect(data?.gaps.length).toBeGreaterThan(0);
    expect(response.headers.get('payment-response')).toBeTruthy();
    const after = await balances(h, 'solana');
    expect(after.merchantUsdc - before.merchantUsdc).toBe(100_000n);
  });

  it('When it calls free endpoints, or a paid one without a wallet, then the answers are typed: sectors, and the 402 body', async () => {
    const client = marketIntelClient(h.baseUrl);
    const sectors = await client.GET('/api/v1/sectors');
    expect(sectors.data?.sectors.map((s) => s.sector)).toContain('fintech');
    const unpaid = await client.GET('/api/v1/scout/trends', { params: { query: { days: 7 } } });
    expect(unpaid.response.status).toBe(402);
    expect(unpaid.error).toMatchObject({
      x402Version: 1,
      accepts: [
        expect.objectContaining({ maxAmountRequired: '100000' }),
        expect.objectContaining({ maxAmountRequired: '100000' }),
      ],
    });
  });
});
