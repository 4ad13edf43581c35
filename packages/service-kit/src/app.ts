import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import cors from 'cors';
import express, { type Application, type RequestHandler } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { errorHandler, notFoundHandler } from '@repo/errors';
import type { JsonSchema } from '@repo/schemas';
import { withCodeSamples } from './code-samples';
import { openApiRoutes } from './contract';
import { CREDENTIAL_QUERY_SETTING } from './validate';
import { llmsTxtRoutes, type LlmsTxt } from './llms-txt';
import { httpLogger } from './logger';
import { mcpRoutes, type McpRoutesOptions } from './mcp';
import type { ServiceMetrics } from './metrics';

/** Options of {@link createBaseApp}. */
export interface BaseAppOptions {
  logger: Logger;
  /** Number of proxy hops in front of the service (express `trust proxy`); 0 trusts none. */
  trustProxy?: number;
  /** Maximum JSON body size, e.g. `"100kb"`. */
  bodyLimit?: string;
  /**
   * Origins allowed by CORS, as a list or as the comma-separated `CORS_ORIGINS` value; CORS stays
   * closed when empty.
   */
  corsOrigins?: string[] | string;
  /** Reports readiness for `/readyz` (PostgreSQL reachable, not shutting down). */
  isReady?: () => boolean | Promise<boolean>;
  /**
   * How long `/readyz` waits for `isReady`, in milliseconds (default 2000); slower counts as not
   * ready, so a dependency that hangs (black-holed connection) cannot hang the probe.
   */
  readyTimeoutMs?: number;
  /**
   * Middleware run first, before metrics and the access log see the request: for rewriting what must
   * never be logged (a credential in the query string, for example: rewrite both `req.url` and
   * `req.originalUrl`, which the access log prints).
   */
  beforeLogging?: RequestHandler[];
  /**
   * When given, every request is timed into it; `/metrics` itself is served on the metrics port
   * (`listenMetrics`), never on the public one.
   */
  metrics?: ServiceMetrics;
}

/**
 * Request headers a browser agent may send: JSON, both x402 payment headers, API keys (`x-api-key` or
 * `Authorization: Bearer`), request ids,
 * and the MCP protocol version of the Streamable HTTP transport.
 */
const CORS_REQUEST_HEADERS =
  'content-type, x-payment, payment-signature, x-api-key, authorization, x-request-id, mcp-protocol-version';
/** Answer headers a browser agent may read: the x402 v1 and v2 headers, request ids, `retry-after`. */
const CORS_EXPOSED_HEADERS =
  'x-payment-response, payment-required, payment-response, x402-version, x-request-id, retry-after';

/** `a, b` -> `['a', 'b']`; a list passes through. */
function parseOrigins(value: string[] | string | undefined): string[] {
  const list = typeof value === 'string' ? value.split(',') : (value ?? []);
  return list.map((origin) => origin.trim()).filter(Boolean);
}

/**
 * The base express app of every service: `trust proxy` from configuration, helmet, pino-http with
 * request ids, a JSON body parser with a size limit, CORS (the `cors` package) only for configured
 * origins, and the
 * Kubernetes probes `/livez` (process up) and `/readyz` (dependencies ready; 503 otherwise); request
 * latencies go into the registry when one is given (served by `listenMetrics` on its own port).
 * Routes go on the returned app; finish with `notFoundHandler` and `errorHandler` from `@repo/errors`.
 */
export function createBaseApp(options: BaseAppOptions): Application {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy ?? 0);
  app.set('etag', false);
  for (const handler of options.beforeLogging ?? []) app.use(handler);
  if (options.metrics) {
    app.use(options.metrics.httpMiddleware);
  }
  app.use(helmet());
  app.use(httpLogger(options.logger));
  const origins = new Set(parseOrigins(options.corsOrigins));
  if (origins.size > 0) {
    app.use(
      cors({
        // Unknown origins get no CORS headers at all, preflights included (they fall through to the routes).
        origin: (origin, callback) =>
          callback(null, origin !== undefined && origins.has(origin) ? origin : false),
        allowedHeaders: CORS_REQUEST_HEADERS,
        exposedHeaders: CORS_EXPOSED_HEADERS,
        optionsSuccessStatus: 204,
      }),
    );
  }
  app.use(express.json({ limit: options.bodyLimit ?? '100kb' }));
  app.get('/livez', (_req, res) => {
    res.json({ ok: true });
  });
  const readyTimeoutMs = options.readyTimeoutMs ?? 2000;
  app.get('/readyz', async (_req, res) => {
    const ready = options.isReady ? await withTimeout(options.isReady, readyTimeoutMs) : true;
    res.status(ready ? 200 : 503).json({ ok: ready });
  });
  return app;
}

/**
 * The fields of {@link BaseAppOptions} a service's `createApp(deps)` takes from its composition root
 * (or a test) and hands on unchanged; a service's `AppDeps` extends it.
 */
export type ServiceAppDeps = Pick<
  BaseAppOptions,
  'logger' | 'isReady' | 'trustProxy' | 'bodyLimit' | 'corsOrigins' | 'metrics'
>;

/** A middleware list mounted under a path prefix (express `app.use(path, handlers)`). */
export interface MountedAt {
  path: string;
  use: RequestHandler[];
}

/** What differs between the services' apps, for {@link createServiceApp}. */
export interface ServiceAppParts {
  /**
   * Mounted before `/mcp` and the documents: the busiest routers, whose requests then walk past
   * nothing else. Their paths must not be shared with the MCP endpoint or the documents.
   */
  first?: RequestHandler[];
  /** The MCP endpoint (docs/architecture.md, "MCP and llms.txt"); its logger and metrics are the app's. */
  mcp: Omit<McpRoutesOptions, 'logger' | 'metrics'>;
  /** Served at `/llms.txt`. */
  llmsTxt: LlmsTxt;
  /** The service's OpenAPI 3.1 document, served at `/openapi.json` with its reference page at `/docs`. */
  openApi: JsonSchema;
  /** Mounted in order after the documents and before the 404 and error handlers. */
  routes: readonly (RequestHandler | MountedAt)[];
}

/**
 * The express app of a service (docs/architecture.md, "Routes own their contracts"): the base app of
 * {@link createBaseApp}, then `parts.first`, the MCP endpoint `/mcp`, `/llms.txt`, `/openapi.json`
 * and `/docs`, then `parts.routes` in order, then `GET /` redirecting to `/docs` (when no route
 * answered it), then `notFoundHandler` (404 `not_found`) and
 * `errorHandler` of `@repo/errors` (the error envelope with the request id), logging to
 * `base.logger`. No listen.
 * @throws Error when two MCP tools share a name (from `mcpRoutes`)
 */
export function createServiceApp(base: BaseAppOptions, parts: ServiceAppParts): Application {
  const app = createBaseApp(base);
  app.set(CREDENTIAL_QUERY_SETTING, credentialQueryParameters(parts.openApi));
  for (const handler of parts.first ?? []) app.use(handler);
  app.use(mcpRoutes({ ...parts.mcp, logger: base.logger, metrics: base.metrics }));
  app.use(llmsTxtRoutes(parts.llmsTxt));
  app.use(openApiRoutes(withCodeSamples(closedRequestBodies(parts.openApi))));
  app.use(guideRoutes(parts.openApi));
  for (const route of parts.routes) {
    if (typeof route === 'function') app.use(route);
    else app.use(route.path, route.use);
  }
  // `/` leads to the reference, unless a route above serves a page there (signal-feedback's dashboard).
  app.get('/', (_req, res) => {
    res.redirect(302, '/docs');
  });
  app.use(notFoundHandler);
  app.use(errorHandler(base.logger));
  return app;
}

/**
 * The query parameters that carry a credential in `doc`: the names of its `apiKey` security schemes
 * `in: query` (signal-feedback's `key`), which validation leaves to the authentication middleware.
 */
function credentialQueryParameters(doc: JsonSchema): string[] {
  const components = doc.components as { securitySchemes?: Record<string, unknown> } | undefined;
  return Object.values(components?.securitySchemes ?? {}).flatMap((scheme) => {
    const s = scheme as { type?: unknown; in?: unknown; name?: unknown };
    return s.type === 'apiKey' && s.in === 'query' && typeof s.name === 'string' ? [s.name] : [];
  });
}

/**
 * `doc` with every request body object schema that lists its properties and says nothing of others
 * marked `additionalProperties: false`: validation refuses fields an operation does not know
 * (docs/architecture.md, "One error dialect"), and the document says so. Free-form objects (no
 * `properties`) and ones that allow more keep what they say. Nothing is mutated.
 */
export function closedRequestBodies(doc: JsonSchema): JsonSchema {
  // A map of names to schemas (`properties`, `$defs`): each value is a schema, the map itself is not
  // (a field may be called `properties`).
  const closeEach = (map: unknown): unknown =>
    typeof map === 'object' && map !== null && !Array.isArray(map)
      ? Object.fromEntries(Object.entries(map).map(([k, v]) => [k, close(v)]))
      : map;
  const close = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(close);
    if (typeof node !== 'object' || node === null) return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node))
      out[k] =
        k === 'example' || k === 'examples'
          ? v
          : k === 'properties' || k === '$defs' || k === 'patternProperties'
            ? closeEach(v)
            : close(v);
    if (typeof out.properties === 'object' && out.properties !== null && !('additionalProperties' in out))
      out.additionalProperties = false;
    return out;
  };
  const paths = (doc.paths ?? {}) as Record<string, Record<string, { requestBody?: unknown }>>;
  return {
    ...doc,
    paths: Object.fromEntries(
      Object.entries(paths).map(([path, item]) => [
        path,
        Object.fromEntries(
          Object.entries(item).map(([method, op]) => [
            method,
            typeof op === 'object' && op !== null && op.requestBody !== undefined
              ? { ...op, requestBody: close(op.requestBody) }
              : op,
          ]),
        ),
      ]),
    ),
  };
}

/**
 * The service guides the document links to (`[...](services/<name>/README.md#section)` in its
 * descriptions), served as Markdown at that path, so the links of the reference page (relative to
 * `/docs`) resolve. Each file is looked for under the working directory and the repository this
 * package sits in, and read once; a guide not found is not served (the link answers 404).
 */
function guideRoutes(doc: JsonSchema): RequestHandler {
  const linked = new Set(
    [...JSON.stringify(doc).matchAll(/\]\((services\/[a-z0-9-]+\/README\.md)(?:#[^)]*)?\)/g)].map(
      (m) => m[1] ?? '',
    ),
  );
  const guides = new Map<string, string>();
  for (const file of linked) {
    for (const root of [process.cwd(), path.resolve(__dirname, '..', '..', '..')]) {
      const candidate = path.join(root, file);
      if (existsSync(candidate)) {
        guides.set(`/${file}`, readFileSync(candidate, 'utf8'));
        break;
      }
    }
  }
  return (req, res, next) => {
    const guide = req.method === 'GET' ? guides.get(req.path) : undefined;
    if (guide === undefined) {
      next();
      return;
    }
    res.type('text/markdown; charset=utf-8').send(guide);
  };
}

/** Runs a readiness check; a throw, a falsy answer or no answer within `timeoutMs` is `false`. */
async function withTimeout(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(check)
        .then(Boolean, () => false),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
