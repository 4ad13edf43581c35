import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import {
  extractDiscoveryInfoFromExtension,
  validateDiscoveryExtension,
  type DiscoveryExtension,
} from '@x402/extensions/bazaar';
import type { PaymentRequired } from '@x402/core/types';
import {
  BriefResponse,
  Error402,
  GapsResponse,
  KeywordsResponse,
  PainClustersResponse,
  SectorList,
  TrendsResponse,
} from '@repo/schemas';
import type { z } from 'zod';
import { toJsonSchema } from '@repo/schemas';
import { connectMcp, metricValue, scrape, toolErrorOf } from '@repo/service-kit/testing';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import { MCP_PAYMENT_MISSING } from '@repo/x402-express';
import { ForgeArgs, SectorLimitArgs } from '../src/schemas';
import { buildReport, startHarness, type Harness } from './support/harness';
import { paymentRefusalOf } from './support/mcp-payments';
import { balances, officialClient } from './support/official-client';

// An agent calling market-intel's tools with the MCP SDK's Client, paying the paid ones as the x402
// MCP transport says: the PaymentRequired in a tool error, the PaymentPayload in _meta["x402/payment"].
jest.setTimeout(60_000);

let h: Harness;
let agent: Client;

beforeAll(async () => {
  h = await startHarness('market_intel_mcp_test');
  await h.reports.importReport(buildReport(), 'import');
  agent = await connectMcp(h.baseUrl);
});
afterAll(async () => {
  await agent?.close();
  await h?.close();
});

/** A push payment's `_meta`: the agent's own transfer of `amountAtomic`, its signature as x402 v1. */
async function pushPayment(
  amountAtomic: bigint,
): Promise<{ signature: string; meta: Record<string, unknown> }> {
  const signature = await h.transfer({ amountAtomic });
  return {
    signature,
    meta: {
      'x402/payment': {
        x402Version: 1,
        scheme: 'exact',
        network: 'solana',
        payload: { txSignature: signature },
      },
    },
  };
}

const settlementOf = (result: { _meta?: Record<string, unknown> }) =>
  result._meta?.['x402/payment-response'] as Record<string, unknown> | undefined;

describe('market-intel MCP endpoint', () => {
  it('When an agent lists the tools, then it gets the free and paid tools with the HTTP schemas, and paid ones name their price', async () => {
    const { tools } = await agent.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'forge_ideate',
      'get_health',
      'get_job',
      'list_sectors',
      'prove_debate',
      'scout_brief',
      'scout_gaps',
      'scout_keywords',
      'scout_pain_clusters',
      'scout_trends',
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('list_sectors')?.outputSchema).toEqual(toJsonSchema(SectorList, 'output'));
    expect(byName.get('scout_gaps')?.inputSchema).toEqual(toJsonSchema(SectorLimitArgs, 'input'));
    expect(byName.get('forge_ideate')?.inputSchema).toEqual(toJsonSchema(ForgeArgs, 'input'));
    // A paid tool's structured content is its answer, or the PaymentRequired of its payment-required error.
    expect(byName.get('scout_gaps')?.outputSchema).toEqual({
      type: 'object',
      anyOf: [toJsonSchema(GapsResponse, 'output'), expect.objectContaining({ anyOf: expect.any(Array) })],
    });
    expect(byName.get('scout_gaps')?.description).toContain('0.10 USDC (100000 atomic units)');
    expect(byName.get('scout_keywords')?.description).toContain('0.05 USDC (50000 atomic units)');
    expect(byName.get('prove_debate')?.description).toContain('25.00 USDC');
    expect(byName.get('list_sectors')?.description).toContain('Free');
    expect(agent.getInstructions()).toContain('_meta["x402/payment"]');
  });

  it('When the free tools are called, then they answer what the HTTP endpoints answer', async () => {
    const sectors = await agent.callTool({ name: 'list_sectors', arguments: {} });
    expect(sectors.structuredContent).toEqual(await (await fetch(`${h.baseUrl}/api/v1/sectors`)).json());
    const health = await agent.callTool({ name: 'get_health', arguments: {} });
    const httpHealth = (await (await fetch(`${h.baseUrl}/api/v1/health`)).json()) as Record<string, unknown>;
    // Unhealthy without an LLM (503 over HTTP) is the tool's answer, not an error.
    expect(health.isError).toBeUndefined();
    expect({ ...(health.structuredContent as object), server_time: 'x' }).toEqual({
      ...httpHealth,
      server_time: 'x',
    });
    expect(
      toolErrorOf(await agent.callTool({ name: 'get_job', arguments: { jobId: 'no-such-job' } })),
    ).toMatchObject({
      code: 'not_found',
    });
  });

  it('When a paid tool is called without payment, then the tool error carries the PaymentRequired of the HTTP 402, and nothing is charged', async () => {
    const result = await agent.callTool({ name: 'scout_gaps', arguments: { sector: 'fintech', limit: 5 } });
    expect(result.isError).toBe(true);
    const required = PaymentRequiredV2Schema.parse(result.structuredContent);
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(result.structuredContent);
    const http = await fetch(`${h.baseUrl}/api/v1/scout/gaps?sector=fintech&limit=5`);
    expect(http.status).toBe(402);
    const header = JSON.parse(Buffer.from(http.headers.get('payment-required')!, 'base64').toString('utf8'));
    expect(required.accepts).toEqual(header.accepts);
    expect(required.accepts[0]).toMatchObject({ amount: '100000', network: CAIP2_NETWORKS.solana });
    expect(required.error).toBe(MCP_PAYMENT_MISSING);
    const push = Error402.parse(result._meta?.['x402-solana/push-payment-required']);
    expect(push.accepts[0]).toMatchObject({
      maxAmountRequired: '100000',
      payTo: h.ledger.networks.solana.merchantTokenAccount,
    });
  });

  it('When a paid tool asks for payment, then its PaymentRequired declares the tool as an MCP Bazaar entry, and the HTTP 402 keeps its HTTP entry', async () => {
    const listed = (await agent.listTools()).tools.find((t) => t.name === 'scout_gaps')!;
    const result = await agent.callTool({ name: 'scout_gaps', arguments: { sector: 'fintech', limit: 5 } });
    const required = PaymentRequiredV2Schema.parse(result.structuredContent);
    const bazaar = required.extensions?.bazaar;
    // The official validator's Ajv has no formats and warns about each `date-time` it skips.
    jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    expect(validateDiscoveryExtension(bazaar as DiscoveryExtension)).toEqual({ valid: true });
    expect(extractDiscoveryInfoFromExtension(bazaar as DiscoveryExtension)).toEqual({
      input: {
        type: 'mcp',
        toolName: 'scout_gaps',
        description: listed.description,
        transport: 'streamable-http',
        inputSchema: listed.inputSchema,
        example: { sector: 'ai', limit: 1 },
      },
      output: { type: 'json', example: expect.objectContaining({ sector: 'ai', count: 1 }) },
    });
    expect(
      SectorLimitArgs.safeParse({
        ...(bazaar as { info: { input: { example: object } } }).info.input.example,
      }).success,
    ).toBe(true);

    const http = await fetch(`${h.baseUrl}/api/v1/scout/gaps?sector=fintech&limit=5`);
    const header = JSON.parse(Buffer.from(http.headers.get('payment-required')!, 'base64').toString('utf8'));
    expect(header.extensions.bazaar.info.input).toMatchObject({ type: 'http', method: 'GET' });
    expect(header.extensions.bazaar.info.input.toolName).toBeUndefined();
  });

  it('When a push payment is sent in _meta, then the tool answers, settles, stores the payment, and a retry replays the same answer without charging again', async () => {
    const before = await balances(h, 'solana');
    const { signature, meta } = await pushPayment(100_000n);
    const args = { sector: 'fintech', limit: 3 };
    const paid = await agent.callTool({ name: 'scout_gaps', arguments: args, _meta: meta });
    expect(paid.isError).toBeUndefined();
    const answer = GapsResponse.parse(paid.structuredContent);
    expect(answer.gaps.length).toBeGreaterThan(0);
    expect(settlementOf(paid)).toMatchObject({
      success: true,
      transaction: signature,
      payer: h.agent.publicKey.toBase58(),
    });
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/gaps' },
    ]);
    const after = await balances(h, 'solana');
    expect(after.merchantUsdc - before.merchantUsdc).toBe(100_000n);

    const replay = await agent.callTool({ name: 'scout_gaps', arguments: args, _meta: meta });
    expect(replay.structuredContent).toEqual(paid.structuredContent);
    expect((await balances(h, 'solana')).merchantUsdc).toBe(after.merchantUsdc);

    // The same payment over HTTP, for the same request, is the same answer: one ledger.
    const http = await h.getWithProof('/api/v1/scout/gaps?sector=fintech&limit=3', signature);
    expect(http.status).toBe(200);
    expect(await http.json()).toEqual(paid.structuredContent);
  });

  it('When a watcher of the chain presents a paid signature with other arguments, over MCP or HTTP, then it is refused as reused and the payer still replays', async () => {
    const { signature, meta } = await pushPayment(100_000n);
    const args = { sector: 'fintech', limit: 2 };
    const paid = await agent.callTool({ name: 'scout_gaps', arguments: args, _meta: meta });
    expect(paid.isError).toBeUndefined();

    // The watcher has no wallet: it read the signature on chain and builds the same _meta.
    const watcher = await connectMcp(h.baseUrl);
    try {
      const stolen = await watcher.callTool({
        name: 'scout_gaps',
        arguments: { sector: 'climate', limit: 50 },
        _meta: meta,
      });
      const refusal = paymentRefusalOf(stolen);
      expect(refusal.required.error).toBe('payment_reused');
      expect(refusal.envelope.code).toBe('payment_reused');
    } finally {
      await watcher.close();
    }
    for (const path of ['/api/v1/scout/gaps?sector=climate&limit=50', '/api/v1/scout/gaps']) {
      const http = await h.getWithProof(path, signature);
      expect(http.status).toBe(400);
      expect(await http.json()).toMatchObject({ code: 'payment_reused' });
    }
    const replay = await agent.callTool({ name: 'scout_gaps', arguments: args, _meta: meta });
    expect(replay.structuredContent).toEqual(paid.structuredContent);
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/gaps' },
    ]);
  });

  it.each<[string, Record<string, unknown>, bigint, z.ZodType]>([
    ['scout_gaps', { sector: 'fintech' }, 100_000n, GapsResponse],
    ['scout_pain_clusters', { limit: 2 }, 100_000n, PainClustersResponse],
    ['scout_trends', { days: 7 }, 100_000n, TrendsResponse],
    ['scout_keywords', { sector: 'dev-tools' }, 50_000n, KeywordsResponse],
    ['scout_brief', {}, 200_000n, BriefResponse],
  ])(
    'When %s is paid in push mode, then it asks its price, answers its schema, and replays the same answer',
    async (tool, args, price, schema) => {
      const asked = await agent.callTool({ name: tool, arguments: args });
      expect(PaymentRequiredV2Schema.parse(asked.structuredContent).accepts[0]?.amount).toBe(String(price));
      const before = await balances(h, 'solana');
      const { signature, meta } = await pushPayment(price);
      const paid = await agent.callTool({ name: tool, arguments: args, _meta: meta });
      expect(paid.isError).toBeUndefined();
      schema.parse(paid.structuredContent);
      expect(settlementOf(paid)).toMatchObject({ success: true, transaction: signature });
      expect((await balances(h, 'solana')).merchantUsdc - before.merchantUsdc).toBe(price);
      const replay = await agent.callTool({ name: tool, arguments: args, _meta: meta });
      expect(replay.structuredContent).toEqual(paid.structuredContent);
      expect(await h.paymentRows(signature)).toHaveLength(1);
    },
  );

  it('When a payment made over HTTP is presented to another tool, then it is refused as reused, as over HTTP', async () => {
    const signature = await h.transfer({ amountAtomic: 100_000n });
    const http = await h.getWithProof('/api/v1/scout/trends', signature);
    expect(http.status).toBe(200);
    const trends = TrendsResponse.parse(await http.json());
    const meta = {
      'x402/payment': {
        x402Version: 1,
        scheme: 'exact',
        network: 'solana',
        payload: { txSignature: signature },
      },
    };
    const same = await agent.callTool({ name: 'scout_trends', arguments: {}, _meta: meta });
    expect(same.structuredContent).toEqual(trends);
    const elsewhere = await agent.callTool({ name: 'scout_pain_clusters', arguments: {}, _meta: meta });
    expect(paymentRefusalOf(elsewhere)).toMatchObject({
      required: { error: 'payment_reused' },
      envelope: { code: 'payment_reused' },
    });
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/trends' },
    ]);
  });

  it('When the official x402 client pays the PaymentRequired of a tool error, then the tool answers and the agent pays the price but no fee', async () => {
    const client = await officialClient(h, h.agent);
    const args = { limit: 2 };
    const required = await agent.callTool({ name: 'scout_keywords', arguments: args });
    const payload = await client.createPaymentPayload(
      required.structuredContent as unknown as PaymentRequired,
    );
    const before = await balances(h, 'solana');
    const paid = await agent.callTool({
      name: 'scout_keywords',
      arguments: args,
      _meta: { 'x402/payment': payload },
    });
    expect(paid.isError).toBeUndefined();
    const settlement = settlementOf(paid);
    expect(settlement).toMatchObject({
      success: true,
      network: CAIP2_NETWORKS.solana,
      payer: h.agent.publicKey.toBase58(),
    });
    const after = await balances(h, 'solana');
    expect(before.payerUsdc - after.payerUsdc).toBe(50_000n);
    expect(after.payerSol).toBe(before.payerSol);
    expect(await h.paymentRows(String(settlement?.transaction))).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/keywords' },
    ]);
    const replay = await agent.callTool({
      name: 'scout_keywords',
      arguments: args,
      _meta: { 'x402/payment': payload },
    });
    expect(replay.structuredContent).toEqual(paid.structuredContent);
  });

  it('When a paid tool gets bad arguments, then it is an invalid_request tool error and no payment is asked; a malformed payment gets the PaymentRequired with the reason', async () => {
    const badLimit = toolErrorOf(await agent.callTool({ name: 'scout_gaps', arguments: { limit: 0 } }));
    expect(badLimit).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'arguments.limit', message: expect.any(String) }] },
    });
    for (const payment of [42, [1], true]) {
      const badMeta = await agent.callTool({
        name: 'scout_gaps',
        arguments: {},
        _meta: { 'x402/payment': payment },
      });
      expect(badMeta.isError).toBe(true);
      expect(PaymentRequiredV2Schema.parse(badMeta.structuredContent).error).toBe('invalid_payload');
      expect(badMeta._meta?.['x402-solana/push-payment-required']).toMatchObject({
        details: { reason: 'invalid_payload' },
      });
    }
    const badNetwork = await agent.callTool({ name: 'scout_gaps', arguments: { network: 'ethereum' } });
    expect(toolErrorOf(badNetwork).code).toBe('invalid_request');
    const garbage = await agent.callTool({
      name: 'scout_gaps',
      arguments: {},
      _meta: {
        'x402/payment': {
          x402Version: 1,
          scheme: 'exact',
          network: 'solana',
          payload: { txSignature: 'nope' },
        },
      },
    });
    expect(garbage.isError).toBe(true);
    expect(PaymentRequiredV2Schema.parse(garbage.structuredContent).error).toBe('invalid_payload');
  });

  it('When a compute tool is called while the compute upstreams are down, then it answers service_unavailable before any payment is asked', async () => {
    const result = await agent.callTool({
      name: 'prove_debate',
      arguments: { idea: 'A marketplace for spare GPU hours' },
    });
    const envelope = toolErrorOf(result);
    expect(envelope.code).toBe('service_unavailable');
    // No runner heartbeat: the upstream class, retry later.
    expect(envelope.errorClass).toBe('upstream');
    const bad = toolErrorOf(await agent.callTool({ name: 'prove_debate', arguments: { idea: 'short' } }));
    expect(bad).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'arguments.idea', message: expect.any(String) }] },
    });
  });

  it('When tools are called, then the MCP counter and the HTTP route histogram both count them', async () => {
    const before = await scrape(h.metricsUrl);
    await agent.callTool({ name: 'list_sectors', arguments: {} });
    const after = await scrape(h.metricsUrl);
    const calls = (text: string) =>
      metricValue(text, 'mcp_tool_calls_total', { tool: 'list_sectors', code: 'ok' }) ?? 0;
    const routed = (text: string) =>
      metricValue(text, 'http_request_duration_seconds_count', { route: '/api/v1/sectors', status: '200' }) ??
      0;
    expect(calls(after) - calls(before)).toBe(1);
    expect(routed(after) - routed(before)).toBe(1);
  });

  it('When an agent reads /llms.txt, then it names the prices, how to pay over HTTP and MCP, and links the document and /mcp', async () => {
    const res = await fetch(`${h.baseUrl}/llms.txt`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.startsWith('# market-intel\n\n> ')).toBe(true);
    for (const needle of [
      '(/openapi.json)',
      '(/docs)',
      '(/mcp)',
      'gaps 0.10',
      'x402/payment',
      'PAYMENT-SIGNATURE',
    ])
      expect(text).toContain(needle);
  });
});
