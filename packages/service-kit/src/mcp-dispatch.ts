import { ServerResponse, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { inject } from 'light-my-request';
import type { McpToolContext } from './mcp';

/** The HTTP request an MCP tool call stands for (see {@link dispatchHttp}). */
export interface HttpCall {
  method: 'GET' | 'POST';
  /** Absolute path without the query, e.g. `/api/v1/scout/gaps`. */
  path: string;
  /** Query parameters in this order; `undefined` ones are left out (the route applies its default). */
  query?: Record<string, string | number | undefined>;
  /** Sent as JSON (`content-type: application/json`). */
  body?: unknown;
  /** Extra request headers (a payment header, for example). */
  headers?: Record<string, string>;
}

/** The answer of a {@link dispatchHttp} call: status, headers, and the body parsed as JSON when it is. */
export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or its text when it is not JSON. */
  body: unknown;
}

/**
 * Copies the methods an injected request or response has from its own classes (light-my-request's
 * `Request` and `Response`, up to `stopAt`) onto the object itself. Express replaces the prototype of
 * every request and response it handles with its own, which would route `write`, `end` and `destroy`
 * around light-my-request and lose the answer; own properties survive that. (Handing light-my-request
 * the express app itself instead makes it rewire the app's prototypes for every request, real
 * sockets included.)
 */
function pinMethods(target: object, stopAt: object): void {
  for (let proto = Object.getPrototypeOf(target) as object | null; proto && proto !== stopAt;) {
    for (const key of Object.getOwnPropertyNames(proto)) {
      if (key === 'constructor' || Object.prototype.hasOwnProperty.call(target, key)) continue;
      const descriptor = Object.getOwnPropertyDescriptor(proto, key);
      if (typeof descriptor?.value === 'function')
        Object.defineProperty(target, key, { value: descriptor.value, writable: true, configurable: true });
    }
    proto = Object.getPrototypeOf(proto) as object | null;
  }
}

/** The caller's headers that decide `req.ip`, `req.protocol` and `req.hostname` behind `trust proxy`. */
const FORWARDED_HEADERS = ['host', 'forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'];

/**
 * Runs the HTTP operation an MCP tool stands for through the service's own request handler, in process
 * (light-my-request: no socket, no port; never pass the express app itself, see {@link pinMethods}), as if the MCP caller had sent it (docs/architecture.md, "MCP and llms.txt"): same
 * client address and forwarding headers (so the same `req.ip` for rate limits), the same request id,
 * the same middleware, validation, payment, metrics and access log as the HTTP route. For tools whose
 * use case lives in HTTP middleware (x402 payments), this is what keeps MCP and HTTP one contract.
 * @param handler the request listener the HTTP server runs (the app, or what wraps it)
 * @param context the tool call's context (its HTTP request and request id)
 * @param call the operation and its inputs
 */
export async function dispatchHttp(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  context: McpToolContext,
  call: HttpCall,
): Promise<HttpAnswer> {
  const query: Record<string, string> = {};
  for (const [name, value] of Object.entries(call.query ?? {}))
    if (value !== undefined) query[name] = String(value);
  const headers: Record<string, string> = { 'x-request-id': context.requestId };
  for (const name of FORWARDED_HEADERS) {
    const value = context.req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const body = call.body === undefined ? undefined : JSON.stringify(call.body);
  if (body !== undefined) headers['content-type'] = 'application/json';
  const pinned = (req: IncomingMessage, res: ServerResponse) => {
    pinMethods(req, Readable.prototype);
    pinMethods(res, ServerResponse.prototype);
    handler(req, res);
  };
  const response = await inject(pinned, {
    method: call.method,
    url: { pathname: call.path, query },
    headers: { ...headers, ...call.headers },
    ...(body !== undefined ? { payload: body } : {}),
    remoteAddress: context.req.socket.remoteAddress ?? '127.0.0.1',
  });
  let parsed: unknown = response.payload;
  if (/^application\/json\b/.test(String(response.headers['content-type'] ?? ''))) {
    try {
      parsed = JSON.parse(response.payload) as unknown;
    } catch {
      // Not JSON after all: keep the text.
    }
  }
  return { status: response.statusCode, headers: response.headers as IncomingHttpHeaders, body: parsed };
}
