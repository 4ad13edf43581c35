import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorEnvelope } from '@repo/errors';

/**
 * The official MCP SDK `Client`, connected over Streamable HTTP to `<baseUrl>/mcp`, as an agent
 * framework connects it; `headers` go on every request (`x-api-key`). Close it when done.
 */
export async function connectMcp(baseUrl: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), { requestInit: { headers } }),
  );
  return client;
}

/**
 * The error envelope a tool error carries, checked: `isError`, no structured content (SDK 1.x clients
 * would check it against the tool's outputSchema), and the envelope as the JSON text content, returned
 * with any fields it adds (a compute 503's `errorClass`).
 * @throws Error when the result is not such a tool error
 */
export function toolErrorOf(result: unknown): ErrorEnvelope & Record<string, unknown> {
  const r = result as CallToolResult;
  if (r.isError !== true) throw new Error(`not a tool error: ${JSON.stringify(result)}`);
  if (r.structuredContent !== undefined)
    throw new Error(`a tool error with structured content: ${JSON.stringify(result)}`);
  const text = r.content[0];
  if (text?.type !== 'text') throw new Error(`no text content: ${JSON.stringify(result)}`);
  const envelope = JSON.parse(text.text) as ErrorEnvelope & Record<string, unknown>;
  ErrorEnvelope.parse(envelope);
  return envelope;
}

/** MCP clients a suite opens against one service, closed together when it ends. */
export interface McpClientPool {
  /** {@link connectMcp} to the service, with `headers` (`x-api-key`) on every request. */
  connect(headers?: Record<string, string>): Promise<Client>;
  /** Closes every client opened so far. */
  closeAll(): Promise<void>;
}

/**
 * A pool of MCP clients for a suite.
 * @param baseUrl the service's origin, read when a client connects (suites know it once started)
 */
export function mcpClientPool(baseUrl: () => string): McpClientPool {
  const clients: Client[] = [];
  return {
    async connect(headers = {}) {
      const client = await connectMcp(baseUrl(), headers);
      clients.push(client);
      return client;
    },
    async closeAll() {
      for (const client of clients.splice(0)) await client.close();
    },
  };
}
