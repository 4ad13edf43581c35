// The MCP part of the demo (`pnpm demo mcp`): an agent that knows nothing but the MCP endpoints uses the
// MCP SDK's Client to list market-intel's tools, pay for one as the x402 MCP transport says (the
// PaymentRequired in a tool error, the PaymentPayload in _meta["x402/payment"]) with the client
// package's payingMcpClient, and route a task through skill-router's tools.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Keypair } from '@solana/web3.js';
import { createPayer, payingMcpClient, toolPrice } from '@repo/api-client';
import type { X402Network } from '@repo/schemas';

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

/** Runs the MCP demo against the stack started by `npm start`. */
export async function runMcpDemo(options: McpDemoOptions): Promise<void> {
  const { log, show } = options;
  const market = await connect(options.marketIntelUrl);
  try {
    const { tools } = await market.listTools();
    log(`market-intel's MCP tools (${options.marketIntelUrl}/mcp):`);
    for (const tool of tools) {
      // A paid tool lists its price as data (services/market-intel/README.md, "Prices in the tool list").
      const listed = toolPrice(tool);
      const price = listed ? `${listed.amountUsdc} USDC` : 'free';
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
    // The same call through the payer: it pays the payment-required result within the payer's
    // limits (official scheme when offered, else push mode) and calls again with _meta["x402/payment"].
    const payer = createPayer({ signer: options.keypair, rpcUrls: options.rpcUrls });
    const paying = payingMcpClient(market, payer, { serverUrl: new URL('/mcp', options.marketIntelUrl) });
    const { result: paid, receipt } = await paying.callTool({ name: 'scout_gaps', arguments: args });
    const how = receipt
      ? receipt.scheme === 'official'
        ? `official x402 scheme, ${receipt.amountUsdc} USDC (market-intel pays the fee)`
        : `push mode, ${receipt.amountUsdc} USDC (transferChecked ${receipt.signature})`
      : 'not paid';
    show(
      `tools/call scout_gaps with _meta["x402/payment"] (${how})`,
      paid.isError ? 400 : 200,
      paid.structuredContent ?? paid.content,
      receipt?.signature,
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
