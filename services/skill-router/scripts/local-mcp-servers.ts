import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { serveStatelessMcp } from '@repo/service-kit';
import type { McpTool } from '../src/domain/mcp-tools';
import { startLoopbackServer } from './loopback-server';

/**
 * One tool of a local MCP server: its definition as `tools/list` shows it (JSON Schema objects, as
 * any MCP server may declare them), and what a call answers.
 */
export interface LocalTool extends McpTool {
  /** The answer of `tools/call` with `args`. */
  call(args: Record<string, unknown>): CallToolResult | Promise<CallToolResult>;
}

/**
 * How one local MCP server behaves: its tools, a delay before every answer (milliseconds), whether it
 * answers a `GET` by opening an event stream it never ends (as servers that push notifications do),
 * and whether it has stopped answering altogether (requests are read and left hanging).
 */
export interface LocalMcpBehaviour {
  tools: LocalTool[];
  delayMs?: number;
  holdGetStreams?: boolean;
  unresponsive?: boolean;
  /** How `ping` is answered when not with `{}`: a 2 MiB result, or an error with a long text of junk. */
  ping?: 'huge' | 'error';
}

/** Local MCP servers on one port, each at `/<name>/mcp`, whose tools can change while they run. */
export interface LocalMcpServers {
  /** The MCP endpoint (Streamable HTTP) of `name`. */
  url(name: string): string;
  /** Sets (or replaces) what `name` lists and answers. */
  set(name: string, behaviour: LocalMcpBehaviour): void;
  /** `tools/call` requests received by `name`, per tool. */
  calls(name: string, tool: string): number;
  /** HTTP requests (any method) received by `name`. */
  requests(name: string): number;
  /** `ping` requests received by `name`. */
  pings(name: string): number;
  close(): Promise<void>;
}

/** A tool result whose structured content is `value`, also given as JSON text (MCP's advice for older clients). */
export function structured(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/**
 * Starts MCP servers on 127.0.0.1 and a free port, built with the official SDK's `McpServer` over its
 * Streamable HTTP server transport (stateless: no session id, JSON answers): stand-ins for providers
 * that offer their skills as MCP tools. Tools are declared with raw JSON Schemas, as any server may
 * send them, so that tests can also list hostile ones. Unknown names answer 404.
 */
export async function startLocalMcpServers(): Promise<LocalMcpServers> {
  const behaviours = new Map<string, LocalMcpBehaviour>();
  const counts = new Map<string, number>();
  const http = await startLoopbackServer(async (req, res) => {
    const match = /^\/([^/?]+)\/mcp(?:\?.*)?$/.exec(req.url ?? '');
    const name = match?.[1];
    const behaviour = name === undefined ? undefined : behaviours.get(name);
    if (!name || !behaviour) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such server"}');
      return;
    }
    counts.set(`${name} requests`, (counts.get(`${name} requests`) ?? 0) + 1);
    if (behaviour.unresponsive) return;
    if (req.method === 'GET' && behaviour.holdGetStreams) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(': stream open\n\n');
      return;
    }
    if (behaviour.delayMs) await new Promise((r) => setTimeout(r, behaviour.delayMs));
    if (res.destroyed) return;
    const mcp = new McpServer({ name: `${name}-server`, version: '1.0.0' }, { capabilities: { tools: {} } });
    mcp.server.setRequestHandler(PingRequestSchema, () => {
      counts.set(`${name} pings`, (counts.get(`${name} pings`) ?? 0) + 1);
      if (behaviour.ping === 'huge') return { _meta: { padding: 'x'.repeat(2 * 1024 * 1024) } };
      if (behaviour.ping === 'error') throw new Error(`pong\n\u0007${'\u00e9'.repeat(500)}`);
      return {};
    });
    mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: behaviour.tools.map(({ call: _call, ...definition }) => definition),
    }));
    mcp.server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const tool = behaviour.tools.find((t) => t.name === request.params.name);
      if (!tool) return { content: [{ type: 'text', text: 'unknown tool' }], isError: true };
      const key = `${name}/${tool.name}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return tool.call(request.params.arguments ?? {});
    });
    await serveStatelessMcp(mcp, req, res);
  });
  return {
    url: (name) => `${http.baseUrl}/${name}/mcp`,
    set: (name, behaviour) => void behaviours.set(name, behaviour),
    calls: (name, tool) => counts.get(`${name}/${tool}`) ?? 0,
    requests: (name) => counts.get(`${name} requests`) ?? 0,
    pings: (name) => counts.get(`${name} pings`) ?? 0,
    close: () => http.close(),
  };
}
