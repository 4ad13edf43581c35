import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server, ServerOptions as McpServerOptions } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { AppError, errorEnvelope, requestIdOf, toAppError, type ErrorLogger } from '@repo/errors';
import { toJsonSchema } from '@repo/schemas';
import type { ServiceMetrics } from './metrics';
import { parseInput, type ValidateOptions } from './validate';

/** What a tool's {@link McpTool.run} gets besides its arguments. */
export interface McpToolContext {
  /** The HTTP request that carried the `tools/call` (its headers: `x-api-key`, the client's address). */
  req: Request;
  /** Its response; `res.locals` is where the service's express middleware leave what they found. */
  res: Response;
  /** The request id of the HTTP request, also in every error envelope. */
  requestId: string;
  /** The `_meta` of the `tools/call` request (e.g. `x402/payment`); `{}` when absent. */
  meta: Record<string, unknown>;
  /**
   * The arguments as sent, before parsing (defaults not applied): for a tool that forwards them to the
   * HTTP operation it stands for, which parses them itself.
   */
  rawArguments: Record<string, unknown>;
}

/**
 * A tool's answer: its structured content (also sent as JSON text), or only a text for an error that
 * has no structured form; and the result's `_meta` (e.g. `x402/payment-response`).
 */
export interface McpToolAnswer {
  /** The tool's output (an object: MCP carries structured content as one), also sent as JSON text. */
  structuredContent?: Record<string, unknown>;
  /** The text content when there is no structured content (an error envelope's JSON). */
  text?: string;
  /** Sent as the result's `_meta`. */
  meta?: Record<string, unknown>;
  /** A tool error that is not an AppError (the x402 transport's payment-required result). */
  isError?: boolean;
}

/**
 * One MCP tool (docs/architecture.md, "MCP and llms.txt"): the same use case as an HTTP operation, declared with
 * the same zod schemas. Arguments are parsed with `input` exactly as the HTTP edge parses a body
 * (`parseInput`); `run` throws AppErrors as an HTTP handler does, and they become tool errors carrying
 * the error envelope.
 */
export interface McpTool<I = unknown> {
  /** snake_case, unique within the service. */
  name: string;
  title: string;
  /** What the tool does and returns; its price when it has one. */
  description: string;
  /** A `z.object` of the arguments; listed as the tool's `inputSchema` (input side). */
  input: z.ZodType<I>;
  /** A `z.object` of the structured content; listed as the tool's `outputSchema` (output side). */
  output?: z.ZodType;
  /**
   * The structured content of this tool's non-envelope errors (the x402 `PaymentRequired` of a paid
   * tool): listed in `outputSchema` as an alternative to `output`, because SDK 1.x clients check the
   * structured content of error results against it too.
   */
  errorOutput?: z.ZodType;
  annotations?: ToolAnnotations;
  /**
   * Listed as the tool's `_meta` (e.g. a paid tool's price: `x402/price`), for clients to read before
   * calling it.
   */
  meta?: Record<string, unknown>;
  /** Options of the argument parsing (which strings may hold NUL; paths start with `arguments`). */
  validation?: ValidateOptions;
  /**
   * Runs the tool. Method syntax on purpose: a tool typed with its own arguments is then accepted
   * where any tool is.
   * @throws AppError for every refusal (missing key, not found, rate limited...)
   */
  run(args: I, context: McpToolContext): Promise<McpToolAnswer>;
}

/** Options of {@link mcpRoutes}. */
export interface McpRoutesOptions {
  /** The server's name and version, as `initialize` reports them. */
  name: string;
  version: string;
  /** What the server is for and how to use it, sent as `initialize`'s `instructions`. */
  instructions?: string;
  tools: readonly McpTool[];
  /** Where unexpected errors are logged, and one line per tool call at `info`. */
  logger: ErrorLogger & { info(obj: object, msg?: string): void };
  /** When given, every tool call is counted in `mcp_tool_calls_total{tool,code}`. */
  metrics?: ServiceMetrics;
  /** Default `/mcp`. */
  path?: string;
}

/**
 * The SDK's modules, loaded on the first MCP request: they cost about 33 MB of resident memory, which a
 * replica that never serves MCP should not pay.
 */
function sdk() {
  /* eslint-disable @typescript-eslint/no-require-imports -- lazy on purpose, see above */
  return {
    ...(require('@modelcontextprotocol/sdk/server/index.js') as typeof import('@modelcontextprotocol/sdk/server/index.js')),
    ...(require('@modelcontextprotocol/sdk/types.js') as typeof import('@modelcontextprotocol/sdk/types.js')),
    ...(require('@modelcontextprotocol/sdk/validation/ajv-provider.js') as typeof import('@modelcontextprotocol/sdk/validation/ajv-provider.js')),
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
}

/** The SDK's Streamable HTTP transport, loaded on the first request that needs it (see {@link sdk}). */
function streamableHttp() {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy on purpose, see sdk()
  return require('@modelcontextprotocol/sdk/server/streamableHttp.js') as typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js');
}

/** The `CallToolResult` of an answer: structured content also as JSON text (the MCP convention). */
function resultOf(answer: McpToolAnswer): CallToolResult {
  const { structuredContent, meta, isError } = answer;
  return {
    content: [{ type: 'text', text: answer.text ?? JSON.stringify(structuredContent ?? {}) }],
    ...(structuredContent ? { structuredContent } : {}),
    ...(isError ? { isError: true } : {}),
    ...(meta ? { _meta: meta } : {}),
  };
}

/** The listed definition of a tool; MCP wants object schemas at the root. */
function definitionOf(tool: McpTool): Tool {
  const inputSchema = toJsonSchema(tool.input, 'input');
  if (inputSchema.type !== 'object') throw new Error(`the input of MCP tool ${tool.name} must be a z.object`);
  const answerSchema = tool.output ? toJsonSchema(tool.output, 'output') : undefined;
  if (answerSchema && answerSchema.type !== 'object')
    throw new Error(`the output of MCP tool ${tool.name} must be a z.object`);
  const outputSchema =
    answerSchema && tool.errorOutput
      ? { type: 'object', anyOf: [answerSchema, toJsonSchema(tool.errorOutput, 'output')] }
      : answerSchema;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputSchema as Tool['inputSchema'],
    ...(outputSchema ? { outputSchema: outputSchema as NonNullable<Tool['outputSchema']> } : {}),
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
    ...(tool.meta ? { _meta: tool.meta } : {}),
  };
}

/**
 * The service's MCP endpoint (docs/architecture.md, "MCP and llms.txt"): the Streamable HTTP transport of the official SDK,
 * stateless (no session id; every POST carries one JSON-RPC message and is answered with JSON), at
 * `POST /mcp`; `GET` and `DELETE` are 405 `method_not_allowed` (no server-initiated stream, no
 * session to end). Mount it on the service's base app, so the requests pass through the same
 * helmet, access log, body limit and latency histogram as the HTTP API.
 *
 * `tools/list` lists every tool with its JSON Schemas (computed once). `tools/call` parses the
 * arguments, runs the tool, and answers its structured content (also as JSON text); any error becomes
 * a tool result with `isError: true` whose text is the JSON of the error envelope
 * (`{ error, code, details?, requestId }`), mapped as the HTTP error middleware maps it. An unknown
 * tool is the protocol's `-32602` error.
 * @throws Error at construction when two tools share a name or a schema is not an object schema
 */
export function mcpRoutes(options: McpRoutesOptions): Router {
  const path = options.path ?? '/mcp';
  const tools = new Map<string, McpTool>();
  for (const tool of options.tools) {
    if (tools.has(tool.name)) throw new Error(`MCP tool declared twice: ${tool.name}`);
    tools.set(tool.name, tool);
  }
  const listed = { tools: options.tools.map(definitionOf) };
  let loaded:
    { modules: ReturnType<typeof sdk>; validator: McpServerOptions['jsonSchemaValidator'] } | undefined;
  const load = () => {
    if (!loaded) {
      const modules = sdk();
      // One validator for every request: the SDK would build an Ajv instance per Server otherwise.
      loaded = { modules, validator: new modules.AjvJsonSchemaValidator() };
    }
    return loaded;
  };
  const counter = options.metrics?.mcpToolCalls;

  const call = async (
    params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> },
    req: Request,
    res: Response,
  ): Promise<CallToolResult> => {
    const tool = tools.get(params.name);
    if (!tool) {
      const { McpError, ErrorCode } = load().modules;
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
    }
    const requestId = requestIdOf(req);
    const started = performance.now();
    let code = 'ok';
    try {
      const rawArguments = params.arguments ?? {};
      const args = parseInput(tool.input, rawArguments, 'arguments', tool.validation);
      const answer = await tool.run(args, { req, res, requestId, meta: params._meta ?? {}, rawArguments });
      if (answer.isError) code = 'tool_error';
      return resultOf(answer);
    } catch (err) {
      const appError = toAppError(err, options.logger, requestId);
      code = appError.code;
      const message =
        appError.isServerError && appError.code === 'internal_error'
          ? 'Internal server error'
          : appError.message;
      // Text only: SDK 1.x clients check any structured content against the tool's outputSchema,
      // error results included, and would throw instead of showing the envelope.
      return resultOf({
        text: JSON.stringify(errorEnvelope(appError.code, message, requestId, appError.details)),
        isError: true,
      });
    } finally {
      counter?.inc({ tool: tool.name, code });
      options.logger.info(
        { requestId, tool: tool.name, code, durationMs: Math.round(performance.now() - started) },
        'mcp tool call',
      );
    }
  };

  const handle: RequestHandler = async (req, res) => {
    const { modules, validator } = load();
    const { Server, ListToolsRequestSchema, CallToolRequestSchema } = modules;
    const server = new Server(
      { name: options.name, version: options.version },
      {
        capabilities: { tools: { listChanged: false } },
        ...(options.instructions ? { instructions: options.instructions } : {}),
        jsonSchemaValidator: validator,
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => listed);
    server.setRequestHandler(CallToolRequestSchema, (request) => call(request.params, req, res));
    await serveStatelessMcp(server, req, res, req.body);
  };

  const notAllowed: RequestHandler = () => {
    throw new AppError(
      'method_not_allowed',
      `${path} is a stateless Streamable HTTP endpoint: send each JSON-RPC message with POST`,
      { headers: { Allow: 'POST' } },
    );
  };

  const router = Router();
  router.post(path, handle);
  router.get(path, notAllowed);
  router.delete(path, notAllowed);
  return router;
}

/**
 * Answers one request of a stateless Streamable HTTP MCP endpoint with `server` (the SDK's `Server` or
 * `McpServer`, its handlers set): a transport of its own, without session id and answering with JSON
 * instead of an event stream, connected for this request; both are closed when the response is.
 * `body` is the JSON body a body parser already read (absent: the transport reads it).
 */
export async function serveStatelessMcp(
  server: Pick<Server, 'connect' | 'close'>,
  req: IncomingMessage,
  res: ServerResponse,
  body?: unknown,
): Promise<void> {
  const { StreamableHTTPServerTransport } = streamableHttp();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.once('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
