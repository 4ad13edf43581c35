// The MCP part of the demo (`pnpm demo mcp`): an agent that knows nothing but the MCP endpoints uses the
// MCP SDK's Client to list market-intel's tools, pay for one as the x402 MCP transport says (the
// PaymentRequired in a tool error, the PaymentPayload in _meta["x402/payment"]), and route a task
// through skill-router's tools.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Keypair } from '@solana/web3.js';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import { networkOfCaip2 } from '@repo/x402-core';
import { createOfficialPayment, PaymentRequiredHeader, payForRequirements } from '@repo/x402-solana/client';

/** What {@link runMcpDemo} needs: the two services, the agent wallet, and how to print. */
export interface McpDemoOptions {
  marketIntelUrl: string;
  skillRouterUrl: string;
  keypair: Keypair;
  rpcUrls: Record<X402Network, string>;
  log: (line: string) => void;
  show: (title: string, status: number, body: unknown, signature?: string) => void;
}

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'demo-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers } }));
  return client;
}

/** The `_meta` that pays a payment-required tool result: official scheme when offered, else push mode. */
async function paymentFor(
  required: Record<string, unknown> | undefined,
  resultMeta: Record<string, unknown> | undefined,
  options: McpDemoOptions,
): Promise<{ meta: Record<string, unknown>; how: string }> {
  const v2 = PaymentRequiredHeader.safeParse(required);
  const offer = v2.success ? v2.data.accepts.find((a) => networkOfCaip2(a.network) !== undefined) : undefined;
  if (v2.success && offer) {
    const network = networkOfCaip2(offer.network) ?? 'solana';
    const payment = await createOfficialPayment({
      requirement: offer,
      resource: v2.data.resource,
      extensions: v2.data.extensions,
      keypair: options.keypair,
      rpcUrl: options.rpcUrls[network],
    });
    return {
      meta: { 'x402/payment': payment.payload },
      how: 'official x402 scheme (market-intel pays the fee)',
    };
  }
  // Push mode: the v1 offer is the structured content itself, or rides in the result's _meta.
  const v1 = (resultMeta?.['x402-solana/push-payment-required'] ?? required) as
    { accepts?: PaymentRequirements[] } | undefined;
  const requirements = v1?.accepts?.[0];
  if (!requirements) throw new Error(`no payable offer in ${JSON.stringify(required)}`);
  const signature = await payForRequirements({
    requirements,
    keypair: options.keypair,
    rpcUrl: options.rpcUrls[requirements.network],
  });
  return {
    meta: {
      'x402/payment': {
        x402Version: 1,
        scheme: 'exact',
        network: requirements.network,
        payload: { txSignature: signature },
      },
    },
    how: `push mode (transferChecked ${signature})`,
  };
}

/** Runs the MCP demo against the stack started by `npm start`. */
export async function runMcpDemo(options: McpDemoOptions): Promise<void> {
  const { log, show } = options;
  const market = await connect(options.marketIntelUrl);
  try {
    const { tools } = await market.listTools();
    log(`market-intel's MCP tools (${options.marketIntelUrl}/mcp):`);
    for (const tool of tools) {
      // A paid tool lists its price as data (services/market-intel/README.md, "Prices in the tool list").
      const listed = tool._meta?.['x402/price'] as { amountUsdc?: string } | undefined;
      const price = listed?.amountUsdc ? `${listed.amountUsdc} USDC` : 'free';
      log(`  ${tool.name.padEnd(20)} ${price}`);
    }
    const sectors = await market.callTool({ name: 'list_sectors', arguments: {} });
    show('tools/call list_sectors (free)', 200, sectors.structuredContent);

    const args = { limit: 2 };
    const asked = await market.callTool({ name: 'scout_gaps', arguments: args });
    const required = asked.structuredContent as Record<string, unknown> | undefined;
    show('tools/call scout_gaps without payment -> payment-required tool error', 402, {
      error: required?.error,
      accepts: required?.accepts,
    });
    const { meta, how } = await paymentFor(
      required,
      asked._meta as Record<string, unknown> | undefined,
      options,
    );
    const paid = await market.callTool({ name: 'scout_gaps', arguments: args, _meta: meta });
    const settlement = paid._meta?.['x402/payment-response'] as { transaction?: string } | undefined;
    show(
      `tools/call scout_gaps with _meta["x402/payment"] (${how})`,
      paid.isError ? 400 : 200,
      paid.structuredContent ?? paid.content,
      settlement?.transaction,
    );
  } finally {
    await market.close();
  }

  const created = await fetch(`${options.skillRouterUrl}/api/auth/key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'mcp-demo-agent' }),
  });
  const { api_key: key } = (await created.json()) as { api_key: string };
  const router = await connect(options.skillRouterUrl, { 'x-api-key': key });
  try {
    const task = 'translate this text to french';
    const routed = await router.callTool({ name: 'route_task', arguments: { task, limit: 3 } });
    show(
      `skill-router tools/call route_task "${task}"`,
      routed.isError ? 400 : 200,
      routed.structuredContent,
    );
  } finally {
    await router.close();
  }
}
