import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import { connectMcp } from '@repo/service-kit/testing';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import { COMPUTE_PRICES, DATA_PRICES, type PaidRoute } from '../src/domain/prices';
import { MCP_PRICE_META, type ToolPrice } from '../src/entry-points/mcp/price-meta';
import { buildReport, startHarness, type Harness } from './support/harness';

// An agent reads the price of market-intel's paid tools from tools/list, as data, with the MCP SDK's
// Client: the same amount, mint, network and payee the payment-required result of a call then asks.
jest.setTimeout(60_000);

let h: Harness;
let agent: Client;

beforeAll(async () => {
  h = await startHarness('market_intel_mcp_price_test');
  await h.reports.importReport(buildReport(), 'import');
  agent = await connectMcp(h.baseUrl);
});
afterAll(async () => {
  await agent?.close();
  await h?.close();
});

const PAID: Record<string, PaidRoute> = {
  scout_gaps: DATA_PRICES.gaps,
  scout_pain_clusters: DATA_PRICES.painClusters,
  scout_trends: DATA_PRICES.trends,
  scout_keywords: DATA_PRICES.keywords,
  scout_brief: DATA_PRICES.brief,
  forge_ideate: COMPUTE_PRICES.forge,
  prove_debate: COMPUTE_PRICES.prove,
};

describe('market-intel MCP tools state their price as data', () => {
  it('When an agent lists the tools, then every paid one carries its price, networks, schemes and offers in _meta, and free ones none', async () => {
    const { tools } = await agent.listTools();
    const { solana, 'solana-devnet': devnet } = h.ledger.networks;
    for (const tool of tools) {
      const route = PAID[tool.name];
      if (!route) {
        expect({ tool: tool.name, meta: tool._meta }).toEqual({ tool: tool.name, meta: undefined });
        continue;
      }
      const amount = route.amountAtomic.toString();
      const amountUsdc = (Number(route.amountAtomic) / 1e6).toFixed(2);
      expect(tool._meta).toEqual({
        [MCP_PRICE_META]: {
          amount,
          amountUsdc,
          currency: 'USDC',
          decimals: 6,
          networks: ['solana', 'solana-devnet'],
          schemes: ['exact'],
          accepts: [
            {
              scheme: 'exact',
              x402Version: 2,
              network: CAIP2_NETWORKS.solana,
              asset: solana.mint,
              amount,
              payTo: solana.merchantOwner,
              extra: { feePayer: h.ledger.feePayer.publicKey },
            },
            {
              scheme: 'exact',
              x402Version: 1,
              network: 'solana',
              asset: solana.mint,
              amount,
              payTo: solana.merchantTokenAccount,
            },
            {
              scheme: 'exact',
              x402Version: 2,
              network: CAIP2_NETWORKS['solana-devnet'],
              asset: devnet.mint,
              amount,
              payTo: devnet.merchantOwner,
              extra: { feePayer: h.ledger.feePayer.publicKey },
            },
            {
              scheme: 'exact',
              x402Version: 1,
              network: 'solana-devnet',
              asset: devnet.mint,
              amount,
              payTo: devnet.merchantTokenAccount,
            },
          ],
        } satisfies ToolPrice,
        'agents-x402/paymentRequired': true,
        'agents-x402/priceUSD': Number(route.amountAtomic) / 1e6,
      });
      // The description keeps its price sentence.
      expect(tool.description).toContain(`Paid: ${amountUsdc} USDC (${amount} atomic units)`);
    }
    expect(tools.filter((t) => PAID[t.name]).length).toBe(Object.keys(PAID).length);
  });

  it('When the listed price is compared with the payment-required result of a call, then they ask the same', async () => {
    const { tools } = await agent.listTools();
    const listed = tools.find((t) => t.name === 'scout_keywords')?._meta?.[MCP_PRICE_META] as ToolPrice;
    const result = await agent.callTool({ name: 'scout_keywords', arguments: { network: 'devnet' } });
    expect(result.isError).toBe(true);
    const required = PaymentRequiredV2Schema.parse(result.structuredContent);
    const asked = required.accepts[0];
    const offer = listed.accepts.find((o) => o.x402Version === 2 && o.network === asked?.network);
    expect(offer).toEqual({
      scheme: asked?.scheme,
      x402Version: 2,
      network: asked?.network,
      asset: asked?.asset,
      amount: asked?.amount,
      payTo: asked?.payTo,
      extra: { feePayer: asked?.extra?.feePayer },
    });
  });
});
