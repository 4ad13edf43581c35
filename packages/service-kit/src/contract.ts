import path from 'node:path';
import { Router, type Request, type RequestHandler } from 'express';
import type { z } from 'zod';
import { ErrorEnvelope, errorEnvelope } from '@repo/errors';
import {
  toJsonSchema,
  type JsonSchema,
  type OpenApiOperation,
  type OpenApiParameter,
  type OpenApiResponse,
} from '@repo/schemas';
import { jsonBodyOnly, validate, type ValidateOptions } from './validate';
import { z as zod } from 'zod';

/** The request half of a {@link RouteContract}: what is validated and documented. */
export interface RequestContract {
  /** A `z.object` of the query string; each property becomes a documented `in: query` parameter. */
  query?: z.ZodType;
  /** A `z.object` of the path parameters (named as in the path template); each becomes `in: path`. */
  params?: z.ZodType;
  /** The JSON body, validated and documented as the request body. */
  body?: z.ZodType;
  /** Whether the body may be absent (documented `required: false`); default required. */
  bodyOptional?: boolean;
  /**
   * The handler parses the body itself (with statuses and counters of its own): the body is
   * documented, and no validation step is generated for it.
   */
  bodyParsedByHandler?: boolean;
  /** Header parameters, documented only (headers are read by the middleware that needs them). */
  headers?: OpenApiParameter[];
  /** An example body, a real request (documented as the request body's `example`). */
  bodyExample?: unknown;
}

/**
 * One operation as its route declares it (docs/architecture.md, "Routes own their contracts"): the
 * request schemas, which the route validates with, and the documented responses, from which the
 * service's OpenAPI document is generated.
 */
export interface RouteContract {
  method: OpenApiOperation['method'];
  /** OpenAPI path template from the root, e.g. `/api/v1/jobs/{jobId}` (express gets `:jobId`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  /** Vendor extensions, e.g. `{ 'x-price-usdc': '0.10' }`. */
  extensions?: Record<`x-${string}`, unknown>;
  request?: RequestContract;
  /** Every status the operation answers, with its body (a zod schema or a component name) and headers. */
  responses: Record<string, OpenApiResponse>;
  /** Options of the generated {@link validate} step (422 bodies, fields that may hold NUL). */
  validation?: ValidateOptions;
  /** Middleware run before validation (authentication, a cheap existence check). */
  before?: RequestHandler[];
}

/** The parsed output of a request part's schema, or `fallback` when the contract declares none. */
type Parsed<R, K extends 'query' | 'params' | 'body', Fallback> = R extends {
  [P in K]: infer S extends z.ZodType;
}
  ? z.output<S>
  : Fallback;

/** Whether a request contract validates its body (declared, and not left to the handler). */
type ValidatesBody<R> = R extends { body: z.ZodType }
  ? [R extends { bodyParsedByHandler: infer F } ? F : undefined] extends [false | undefined]
    ? true
    : false
  : false;

/**
 * What the generated validation step leaves in `res.locals.valid` for a route whose request contract
 * is `R`: each declared query, params and body schema's `z.output` (a default filled in, a coerced
 * number a number); an undeclared part is express's own (`req.query`, `req.params`, `req.body`).
 */
export interface ContractInput<R> {
  query: Parsed<R, 'query', Request['query']>;
  params: Parsed<R, 'params', Request['params']>;
  body: ValidatesBody<R> extends true ? Parsed<R, 'body', unknown> : unknown;
}

/**
 * `res.locals` of a route's handlers: `valid` holds the parsed request (see {@link ContractInput})
 * when the contract declares anything to validate; otherwise no validation step runs and nothing is
 * there.
 */
export type ContractLocals<R> = Record<string, unknown> &
  (R extends { query: z.ZodType } | { params: z.ZodType }
    ? { valid: ContractInput<R> }
    : ValidatesBody<R> extends true
      ? { valid: ContractInput<R> }
      : { valid?: never });

/**
 * A handler of a declared route (docs/architecture.md, "Routes own their contracts"): an express
 * handler whose `res.locals.valid` and `req.body` are typed from the contract `C` it was declared
 * with, so the handler reads the parsed request without restating its schemas. Any express
 * `RequestHandler` is one too.
 */
export type ContractHandler<C extends RouteContract> = RequestHandler<
  Request['params'],
  unknown,
  ContractInput<C['request']>['body'],
  Request['query'],
  ContractLocals<C['request']>
>;

/** An express `Router` whose routes are declared with their contracts (see {@link contractRouter}). */
export interface ContractRouter {
  /** Mount it at the root: the declared paths are absolute. */
  readonly router: Router;
  /** The operations declared so far, in declaration order. */
  readonly operations: readonly OpenApiOperation[];
  /**
   * Declares an operation and mounts it: for an operation with a body, the JSON content-type check
   * (415), then `contract.before`, then validation of the query (none declared: no parameter is
   * accepted), params and body, unknown parameters and fields refused (docs/architecture.md, "One
   * error dialect"; the parsed values in `res.locals.valid`), then `handlers`, each typed from the
   * contract (see {@link ContractHandler}): `res.locals.valid.query` is the `z.output` of
   * `request.query`, and so on.
   * @throws Error when the operation id or the method and path were declared before, or when the
   *   path template's parameters and `request.params` name different parameters
   */
  route<C extends RouteContract>(contract: C, ...handlers: ContractHandler<C>[]): ContractRouter;
}

/**
 * The parameters of a `z.object` schema as OpenAPI parameters. Whether one is required comes from
 * the input side (a default makes it optional); its schema from the output side, which is what the
 * route works with (a digits-only string piped to an integer from 1 to 100 is documented as that
 * integer), or the input side when the output is not representable in JSON Schema. A property's
 * `description` (zod `.meta({ description })` or `.describe()`) moves to the parameter.
 * @throws Error when the schema is not an object schema
 */
function parametersOf(schema: z.ZodType, location: 'query' | 'path'): OpenApiParameter[] {
  const input = toJsonSchema(schema, 'input');
  const output = toJsonSchema(schema, 'output');
  const inputProperties = input.properties as Record<string, JsonSchema> | undefined;
  const outputProperties = (output.properties ?? {}) as Record<string, JsonSchema>;
  if (input.type !== 'object' || !inputProperties) {
    throw new Error(`the ${location} schema of a route must be a z.object`);
  }
  const required = new Set((input.required as string[] | undefined) ?? []);
  const representable = (p: JsonSchema | undefined): p is JsonSchema =>
    p !== undefined && ['type', 'enum', 'const', 'anyOf', 'oneOf'].some((k) => k in p);
  return Object.entries(inputProperties).map(([name, inputProperty]) => {
    const outputProperty = outputProperties[name];
    const { description, ...rest } = representable(outputProperty) ? outputProperty : inputProperty;
    return {
      name,
      in: location,
      ...(location === 'path' || required.has(name) ? { required: true } : {}),
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
    };
  });
}

/** The code an error answer of a status has when its description names none. */
const DEFAULT_CODES: Readonly<Record<string, string>> = {
  '400': 'invalid_request',
  '401': 'unauthorized',
  '403': 'forbidden',
  '404': 'not_found',
  '405': 'method_not_allowed',
  '409': 'conflict',
  '413': 'payload_too_large',
  '415': 'unsupported_media_type',
  '422': 'invalid_request',
  '429': 'rate_limited',
  '500': 'internal_error',
  '502': 'bad_gateway',
  '503': 'service_unavailable',
};

/** A request id as every envelope carries one (the caller's `x-request-id`, or a UUID). */
const EXAMPLE_REQUEST_ID = '6f1c2a9e-3b7d-4e58-9c0a-2d4f8b1e7a35';

/**
 * The responses with an example envelope on every error answer that has none: its code is the first
 * `snake_case` code the description names in backticks (how {@link errorResponse}'s callers name it),
 * else the status's usual one; its message is the description.
 */
function withEnvelopeExamples(responses: Record<string, OpenApiResponse>): Record<string, OpenApiResponse> {
  const out: Record<string, OpenApiResponse> = {};
  for (const [status, response] of Object.entries(responses)) {
    const code = /`([a-z][a-z0-9_]*)`/.exec(response.description)?.[1] ?? DEFAULT_CODES[status];
    out[status] =
      response.body === ErrorEnvelope && response.example === undefined && code
        ? {
            ...response,
            example: errorEnvelope(
              code,
              response.description.replace(/\s*\(`[^)]*\)/g, ''),
              EXAMPLE_REQUEST_ID,
            ),
          }
        : response;
  }
  return out;
}

/** A documented error answer: the error envelope with `description` (name the `code` in it). */
export function errorResponse(description: string, headers?: OpenApiResponse['headers']): OpenApiResponse {
  return { description, body: ErrorEnvelope, ...(headers ? { headers } : {}) };
}

/** The `Retry-After` header of a 429 or 503, in seconds. */
export const RETRY_AFTER_HEADER: NonNullable<OpenApiResponse['headers']> = {
  'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
};

/**
 * What every operation with a JSON body may answer before the route runs (docs/architecture.md, "One
 * error dialect"); {@link contractRouter} adds them to such an operation's responses when it does not
 * document them itself.
 */
export const BODY_PARSER_ERRORS: Record<'413' | '415', OpenApiResponse> = {
  '413': errorResponse(
    'the body is larger than the configured limit (`payload_too_large`; the limit in bytes in details.limit_bytes)',
  ),
  '415': errorResponse(
    'the body is not sent as UTF-8 JSON with Content-Type: application/json (`unsupported_media_type`)',
  ),
};

/**
 * The 400 every operation may answer (docs/architecture.md, "One error dialect"): an invalid or unknown
 * query or path parameter, or body field; {@link contractRouter} adds it where an operation does not
 * document a 400 itself.
 */
export const INVALID_REQUEST_ERROR: OpenApiResponse = errorResponse(
  'a parameter or field is invalid, or one the operation does not know (`invalid_request`; each problem in details.issues with its path and code)',
);

/** The query of an operation that declares none: no parameter at all is accepted. */
const NO_QUERY = zod.object({});

/**
 * The operations with examples added from `examples` (real answers a service captured; an example the
 * route declared itself wins), for a service whose examples come from one captured file
 * (docs/architecture.md, "Routes own their contracts"). Keys, with header names spelled as the route
 * documents them:
 * - `"<operationId> <status>"`: the response body of that status;
 * - `"<operationId> request"`: the request body;
 * - `"<operationId> <status> header <Name>"`: a response header of that status;
 * - `"<operationId> request header <Name>"`: a header parameter.
 * Nothing is mutated: response and header objects shared between routes stay as declared.
 * @param operations the operations of the routers, as they declared them
 * @param examples the captured examples (e.g. a service's `examples.json`)
 */
export function withExamples(
  operations: readonly OpenApiOperation[],
  examples: Readonly<Record<string, unknown>>,
): OpenApiOperation[] {
  return operations.map((op) => {
    const responses = Object.fromEntries(
      Object.entries(op.responses).map(([status, response]) => {
        const example = examples[`${op.operationId} ${status}`];
        const headers = response.headers
          ? Object.fromEntries(
              Object.entries(response.headers).map(([name, header]) => {
                const value = examples[`${op.operationId} ${status} header ${name}`];
                return [
                  name,
                  header.example === undefined && value !== undefined
                    ? { ...header, example: value }
                    : header,
                ];
              }),
            )
          : undefined;
        return [
          status,
          {
            ...response,
            ...(headers ? { headers } : {}),
            ...(response.example === undefined && example !== undefined ? { example } : {}),
          },
        ];
      }),
    );
    const parameters = op.parameters?.map((p) => {
      const value = p.in === 'header' ? examples[`${op.operationId} request header ${p.name}`] : undefined;
      return p.example === undefined && value !== undefined ? { ...p, example: value } : p;
    });
    const requestExample = examples[`${op.operationId} request`];
    return {
      ...op,
      responses,
      ...(parameters ? { parameters } : {}),
      ...(op.requestBody && op.requestBody.example === undefined && requestExample !== undefined
        ? { requestBody: { ...op.requestBody, example: requestExample } }
        : {}),
    };
  });
}

/**
 * A contract's responses with what every operation may answer under the one error dialect
 * (docs/architecture.md, "One error dialect"), where it does not document them itself: 400 for an
 * invalid or unknown parameter or field, and for an operation with a body 413 and 415.
 */
function withDialectResponses(contract: RouteContract): Record<string, OpenApiResponse> {
  const responses = { ...contract.responses };
  responses['400'] ??= INVALID_REQUEST_ERROR;
  if (contract.request?.body) {
    responses['413'] ??= BODY_PARSER_ERRORS['413'];
    responses['415'] ??= BODY_PARSER_ERRORS['415'];
  }
  // Statuses in numeric order, as the document lists them.
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

/** The express path of an OpenAPI path template: `/jobs/{jobId}` -> `/jobs/:jobId`. */
function expressPath(template: string): string {
  return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
}

/**
 * The OpenAPI operation a contract documents.
 * @throws Error when a query or params schema is not a `z.object`
 */
function operationOf(contract: RouteContract): OpenApiOperation {
  const { request } = contract;
  const parameters = [
    ...(request?.params ? parametersOf(request.params, 'path') : []),
    ...(request?.query ? parametersOf(request.query, 'query') : []),
    ...(request?.headers ?? []),
  ];
  return {
    method: contract.method,
    path: contract.path,
    operationId: contract.operationId,
    summary: contract.summary,
    ...(contract.description ? { description: contract.description } : {}),
    ...(contract.tags ? { tags: contract.tags } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(request?.body
      ? {
          requestBody: {
            body: request.body,
            required: !request.bodyOptional,
            ...(request.bodyExample !== undefined ? { example: request.bodyExample } : {}),
          },
        }
      : {}),
    responses: withEnvelopeExamples(withDialectResponses(contract)),
    ...(contract.security ? { security: contract.security } : {}),
    ...(contract.extensions ? { extensions: contract.extensions } : {}),
  };
}

/**
 * A router whose every route carries its contract (docs/architecture.md, "Routes own their
 * contracts"): the schemas a route validates with are the ones its OpenAPI operation documents, so
 * the document cannot drift from the code. Build the document from {@link ContractRouter.operations}.
 */
export function contractRouter(): ContractRouter {
  const router = Router();
  const operations: OpenApiOperation[] = [];
  const seen = new Set<string>();
  const self: ContractRouter = {
    router,
    operations,
    route(contract, ...handlers) {
      const key = `${contract.method} ${contract.path}`;
      if (seen.has(key) || operations.some((op) => op.operationId === contract.operationId)) {
        throw new Error(`operation declared twice: ${key} (${contract.operationId})`);
      }
      const operation = operationOf(contract);
      const inPath = [...contract.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = (operation.parameters ?? [])
        .filter((p) => p.in === 'path')
        .map((p) => p.name)
        .sort();
      if (inPath.join() !== declared.join()) {
        throw new Error(
          `${key}: path parameters {${inPath.join(', ')}} and request.params (${declared.join(', ')}) differ`,
        );
      }
      seen.add(key);
      operations.push(operation);
      const { query = NO_QUERY, params } = contract.request ?? {};
      const body = contract.request?.bodyParsedByHandler ? undefined : contract.request?.body;
      // Every operation validates its query, so that a parameter it does not know is a 400 naming it
      // (before any payment is asked), and a body sent as anything but JSON is a 415.
      const validation = validate(
        { query, ...(params ? { params } : {}), ...(body ? { body } : {}) },
        contract.validation,
      );
      router[contract.method](
        expressPath(contract.path),
        ...(contract.request?.body ? [jsonBodyOnly] : []),
        ...(contract.before ?? []),
        validation,
        ...handlers,
      );
      return self;
    },
  };
  return self;
}

/** Where the browser build of Scalar's API reference is (`dist/browser` of `@scalar/api-reference`). */
const SCALAR_BROWSER_DIR = path.join(path.dirname(require.resolve('@scalar/api-reference')), 'browser');
/** This package's own browser files (the page's start-up script). */
const ASSETS_DIR = path.join(__dirname, '..', 'assets');

/** The files under `/docs/assets/` the page loads, and where each is; anything else there is 404. */
const DOCS_ASSETS: Readonly<Record<string, string>> = {
  '/scalar.js': path.join(SCALAR_BROWSER_DIR, 'standalone.js'),
  '/docs-init.js': path.join(ASSETS_DIR, 'docs-init.js'),
};

/**
 * The Content-Security-Policy of the `/docs` page: helmet's, with fonts and connections to the service
 * itself only, so the page can reach no other host (no CDN, no font service, no telemetry).
 */
const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  'upgrade-insecure-requests',
].join(';');

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The `/docs` page: Scalar's API reference (search, code samples, dark mode), served by the service
 * itself from `/docs/assets/` (no CDN, works offline and under the Content-Security-Policy), rendering
 * the document at `specUrl`.
 */
function referencePage(doc: JsonSchema, specUrl: string): string {
  const info = (doc.info ?? {}) as { title?: string; version?: string };
  const title = escapeHtml(`${info.title ?? 'API'} ${info.version ?? ''} — reference`.trim());
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>${title}</title>
</head>
<body data-openapi-url="${escapeHtml(specUrl)}">
<noscript>The reference needs JavaScript; the document itself is at <a href="${escapeHtml(specUrl)}">${escapeHtml(specUrl)}</a>.</noscript>
<div id="app"></div>
<script src="/docs/assets/scalar.js"></script>
<script src="/docs/assets/docs-init.js"></script>
</body>
</html>
`;
}

/**
 * `GET /openapi.json` (the document) and `GET /docs`, its reference page rendered by Scalar's API
 * reference (search, code samples in several languages, dark mode) from files the service serves
 * itself under `/docs/assets/` (docs/architecture.md, "Routes own their contracts"), so the page works
 * offline and under a Content-Security-Policy that lets it reach no other host.
 * @param doc the service's OpenAPI document
 */
export function openApiRoutes(doc: JsonSchema): Router {
  const page = referencePage(doc, '/openapi.json');
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(doc);
  });
  router.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.type('html').send(page);
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    const file = DOCS_ASSETS[`/${req.params.file}`];
    if (!file) {
      next();
      return;
    }
    // The package sits under node_modules/.pnpm: a dot directory send() would refuse by default.
    res.sendFile(file, { maxAge: '1d', dotfiles: 'allow' });
  });
  return router;
}
