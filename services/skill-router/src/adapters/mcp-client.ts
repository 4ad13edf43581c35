import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { findSsrfBlockedError, type SsrfPolicy } from '@repo/ssrf-guard';
import { fetch as undiciFetch } from 'undici';
import { createSkillDispatcher } from './skill-http';
import type { McpFailure, McpServers, McpSession, McpTool } from '../domain/mcp-tools';

/** Options of {@link createMcpServers}. */
export interface McpServersOptions {
  /** Addresses and hosts allowed although not public (development, tests). */
  policy: SsrfPolicy;
  /**
   * Deadline of each MCP request (handshake, one `tools/list` page, `tools/call`), in milliseconds; a
   * whole session (handshake to close) lasts at most {@link SESSION_REQUESTS} times this.
   */
  timeoutMs: number;
  /** Largest HTTP response body read, in bytes; a larger answer fails the request with `too_large`. */
  maxResponseBytes: number;
}

/** {@link McpServers} plus shutdown. */
export interface ClosableMcpServers extends McpServers {
  /** Closes the pooled connections. */
  close(): Promise<void>;
}

/** A session's deadline, in request timeouts: a handshake, two pages of tools/list and a call, with room to spare. */
export const SESSION_REQUESTS = 4;

/** Thrown by the guarded fetch when a response body passes the byte cap. */
class ResponseTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`response larger than ${limit} bytes`);
  }
}

/**
 * The SDK compiles every listed tool's `outputSchema` with ajv on the calling thread. Those schemas are
 * the registrant's, so compiling them here would run their cost on the event loop (README, "Security"):
 * this validator accepts everything, and the replies are checked in the schema sandbox instead.
 */
const acceptAll = {
  getValidator: () => (input: unknown) => ({ valid: true as const, data: input, errorMessage: undefined }),
} as jsonSchemaValidator;

/**
 * MCP servers reached with the official SDK's `Client` over `StreamableHTTPClientTransport`, every
 * request through `@repo/ssrf-guard`'s guarded undici dispatcher (each connection's addresses
 * re-checked, redirects not followed by fetch: the SDK follows same-origin ones, again through it),
 * each response body cut at `maxResponseBytes`, each request bounded by `timeoutMs` (README, "MCP
 * servers as skills").
 */
export function createMcpServers(options: McpServersOptions): ClosableMcpServers {
  const dispatcher = createSkillDispatcher(options.policy, options.timeoutMs);

  const guardedFetch = async (url: string | URL, init?: RequestInit): Promise<Response> => {
    // The global fetch's and undici's types describe the same objects but are declared apart.
    const res = await undiciFetch(url, {
      ...(init as object),
      dispatcher,
      redirect: 'manual',
    } as Parameters<typeof undiciFetch>[1]);
    const headers = new Headers();
    res.headers.forEach((value, name) => headers.append(name, value));
    if (!res.body) return new Response(null, { status: res.status, statusText: res.statusText, headers });
    let size = 0;
    const limit = options.maxResponseBytes;
    const capped = (res.body as unknown as ReadableStream<Uint8Array>).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          size += chunk.byteLength;
          if (size > limit) controller.error(new ResponseTooLarge(limit));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(capped, { status: res.status, statusText: res.statusText, headers });
  };

  const sessionMs = options.timeoutMs * SESSION_REQUESTS;
  const failure = (err: unknown, what: string, deadline: AbortSignal): McpFailure => {
    if (deadline.aborted)
      return {
        ok: false,
        kind: 'timeout',
        error: `${what}: the MCP session took longer than ${sessionMs} ms`,
      };
    const blocked = findSsrfBlockedError(err);
    if (blocked) return { ok: false, kind: 'refused', error: `endpoint refused: ${blocked.message}` };
    const tooLarge = findCause(err, (e) => e instanceof ResponseTooLarge);
    if (tooLarge) return { ok: false, kind: 'too_large', error: `${what}: ${tooLarge.message}` };
    if (isTimeout(err))
      return { ok: false, kind: 'timeout', error: `${what}: no answer within ${options.timeoutMs} ms` };
    const codeOf = (e: Error) => (e as { code?: unknown }).code;
    const network = findCause(err, (e) => {
      const c = codeOf(e);
      return typeof c === 'string' && /^(E[A-Z]+|UND_ERR)/.test(c);
    });
    if (network)
      return { ok: false, kind: 'network', error: `${what}: unreachable (${String(codeOf(network))})` };
    const message = err instanceof Error ? err.message : String(err);
    // It may carry the server's own error text.
    const text = excerpt(message);
    // The SDK's McpError messages already start with "MCP error <code>: ".
    return { ok: false, kind: 'protocol', error: `${what}: ${text}` };
  };

  return {
    async open(url) {
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        fetch: guardedFetch,
        reconnectionOptions: {
          maxRetries: 0,
          initialReconnectionDelay: 1000,
          maxReconnectionDelay: 1000,
          reconnectionDelayGrowFactor: 1,
        },
      });
      const client = new Client(
        { name: 'skill-router-verifier', version: '0.1.0' },
        { capabilities: {}, jsonSchemaValidator: acceptAll },
      );
      // Errors of the background GET stream are expected (most servers answer it with 405).
      client.onerror = () => {};
      const deadline = AbortSignal.timeout(sessionMs);
      const requestOptions = {
        timeout: options.timeoutMs,
        maxTotalTimeout: options.timeoutMs,
        signal: deadline,
      };
      const close = async () => {
        await client.close().catch(() => {});
      };
      try {
        await client.connect(transport, requestOptions);
      } catch (err) {
        await close();
        return failure(err, 'MCP handshake', deadline);
      }
      const server = client.getServerVersion();
      const session: McpSession = {
        server: {
          name: String(server?.name ?? '').slice(0, 200),
          version: String(server?.version ?? '').slice(0, 50),
          protocolVersion: String(transport.protocolVersion ?? '').slice(0, 50),
        },
        async listTools(maxTools, maxPages) {
          const tools: McpTool[] = [];
          let cursor: string | undefined;
          try {
            for (let page = 0; page < maxPages; page++) {
              const result = await client.listTools(cursor === undefined ? {} : { cursor }, requestOptions);
              for (const tool of result.tools) {
                if (tools.length >= maxTools)
                  return {
                    ok: false,
                    kind: 'too_many_tools',
                    error: `tools/list lists more than ${maxTools} tools`,
                  };
                tools.push({
                  name: tool.name,
                  title: tool.title ?? tool.annotations?.title,
                  description: tool.description,
                  inputSchema: tool.inputSchema as Record<string, unknown>,
                  outputSchema: tool.outputSchema as Record<string, unknown> | undefined,
                });
              }
              cursor = result.nextCursor;
              if (cursor === undefined) return { ok: true, tools };
            }
          } catch (err) {
            return failure(err, 'tools/list', deadline);
          }
          return { ok: false, kind: 'too_many_tools', error: `tools/list has more than ${maxPages} pages` };
        },
        async ping() {
          const t0 = performance.now();
          try {
            await client.ping(requestOptions);
            return { ok: true, latencyMs: Math.round(performance.now() - t0) };
          } catch (err) {
            return { ...failure(err, 'ping', deadline), latencyMs: Math.round(performance.now() - t0) };
          }
        },
        async callTool(name, args) {
          const t0 = performance.now();
          try {
            const result = await client.callTool({ name, arguments: args }, undefined, requestOptions);
            return {
              ok: true,
              latencyMs: Math.round(performance.now() - t0),
              isError: result.isError === true,
              structuredContent: result.structuredContent,
              text: firstText(result.content),
            };
          } catch (err) {
            return { ...failure(err, 'tools/call', deadline), latencyMs: Math.round(performance.now() - t0) };
          }
        },
        close,
      };
      return { ok: true, session };
    },
    close: () => dispatcher.close(),
  };
}

/** One line of printable ASCII, at most 200 characters: how a server's own text appears in reasons. */
function excerpt(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 200);
}

/** The first text content of a tool result as an {@link excerpt} (for failure reasons). */
function firstText(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  for (const item of content) {
    const text = (item as { type?: unknown; text?: unknown } | null)?.text;
    if ((item as { type?: unknown } | null)?.type === 'text' && typeof text === 'string')
      return excerpt(text);
  }
  return undefined;
}

function findCause(err: unknown, test: (e: Error) => boolean): Error | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (test(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function isTimeout(err: unknown): boolean {
  return (
    findCause(err, (e) => {
      const code = (e as { code?: unknown }).code;
      return (
        e.name === 'TimeoutError' ||
        e.name === 'AbortError' ||
        code === -32001 ||
        code === 'UND_ERR_CONNECT_TIMEOUT' ||
        code === 'UND_ERR_HEADERS_TIMEOUT' ||
        code === 'UND_ERR_BODY_TIMEOUT'
      );
    }) !== undefined
  );
}
