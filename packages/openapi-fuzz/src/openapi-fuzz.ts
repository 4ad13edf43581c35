import { parse as parseQueryString } from 'node:querystring';
import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020';
import fc from 'fast-check';
import {
  hostileJsonArbitrary,
  hostileStringArbitrary,
  validValueArbitrary,
  type JsonSchema,
  type SchemaArbitraryOptions,
} from './json-schema-arbitrary';

// Property-based fuzzing of an HTTP service from its own OpenAPI 3.1 document: per operation, an
// arbitrary of valid requests and one of hostile requests (fast-check, so failures print a seed and
// shrink), a sender, and a judge of the answer against the document and the error-envelope rule
// (README, "What it judges": the error envelope on every error, `Error402`
// on a 402). Conformance of requests and answers is decided by ajv against
// the document's own schemas, not by the generator's intent.

/** An OpenAPI 3.1 document as parsed JSON (only `paths`, `components` and `security` are read). */
export type OpenApiDocument = { readonly [key: string]: unknown };

/** Where a credential of a security scheme goes in a request. */
export interface CredentialSlot {
  /** The name of the scheme under `components.securitySchemes`. */
  scheme: string;
  in: 'header' | 'query' | 'cookie';
  /** Header, query parameter or cookie name. */
  name: string;
  /** Put before the value (`Bearer ` for `http` bearer schemes, else empty). */
  prefix: string;
}

/** How a fuzz request authenticates. */
export type FuzzAuth =
  /** With the credentials the test holds for these slots (values filled in by {@link sendFuzzRequest}). */
  | { mode: 'valid'; slots: readonly CredentialSlot[] }
  /** Without any credential. */
  | { mode: 'none' }
  /** With a garbage value in one scheme's slot. */
  | { mode: 'garbage'; slot: CredentialSlot; value: string };

/** One generated request, already encoded (a plain object: fast-check prints it for a counterexample). */
export interface FuzzRequest {
  operationId: string;
  /** Upper-case HTTP method. */
  method: string;
  /** The path with its parameters substituted and percent-encoded (some hostile ones raw). */
  path: string;
  /** The encoded query string without `?` (may be empty). */
  query: string;
  /** Request headers (credentials are added when sent). */
  headers: Readonly<Record<string, string>>;
  /** The body as sent, with its content type (none: no body, and no content-type header). */
  body?: { contentType?: string; data: string | Uint8Array };
  auth: FuzzAuth;
  /** What was made hostile; absent on a valid request. */
  mutation?: string;
  /**
   * Whether the path and query parameters and the body validate against the document (ajv; formats
   * not checked, string lengths in code points). Header parameters are not judged: such headers (a
   * CSRF token, say) often matter only together with a credential.
   */
  conforms: boolean;
}

/** What came back for a {@link FuzzRequest}. */
export interface FuzzResponse {
  status: number;
  headers: Headers;
  /** The raw body text. */
  text: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  json: unknown;
}

/** One operation of the document with its request arbitraries and its judge. */
export interface FuzzOperation {
  operationId: string;
  /** Upper-case HTTP method. */
  method: string;
  /** The path template, e.g. `/api/v1/jobs/{jobId}`. */
  path: string;
  /** The response keys the document lists (`"200"`, `"4XX"`, `"default"`...). */
  documentedStatuses: readonly string[];
  /** Whether every security requirement of the operation needs a credential. */
  secured: boolean;
  /** Requests whose parameters and body are drawn from the schemas (credentials valid, absent or garbage). */
  valid: fc.Arbitrary<FuzzRequest>;
  /** Requests with exactly one hostile part (parameter, body, content type, header or query). */
  hostile: fc.Arbitrary<FuzzRequest>;
  /**
   * What is wrong with `response` to `request`, one sentence per problem (empty when nothing is):
   * a 5xx other than a 503 the operation documents; a status the operation does not document (exact,
   * `4XX`-style range or `default`) and that is neither global nor a known gap; a non-2xx answer
   * without a JSON content type, or whose body is not the error envelope ({@link envelopeProblems})
   * when the document gives the envelope or nothing for that status, or does not match the other
   * schema it gives (an x402 `Error402`, a health body); a 2xx body that does not match its documented
   * schema; a 2xx answer to a secured operation without valid credentials, or to a request that does
   * not conform to the document.
   * @param options statuses documented globally, and known gaps tolerated
   */
  problems(request: FuzzRequest, response: FuzzResponse, options?: JudgeOptions): string[];
}

/** Options of {@link fuzzOperations}. */
export interface FuzzOptions extends Omit<SchemaArbitraryOptions, 'root'> {
  /**
   * Names of the security schemes the test holds credentials for; their values are passed to
   * {@link sendFuzzRequest} (so a test can replace a session that a fuzzed log-out ended).
   */
  credentialSchemes?: readonly string[];
  /**
   * Garbage credentials per scheme name (default for every scheme: random printable ASCII strings,
   * empty and blank values, `null`, a bare `Bearer `, `%00` and an 8000-character value).
   */
  garbageCredentials?: Readonly<Record<string, fc.Arbitrary<string>>>;
}

/** A finding a suite tolerates while it is open elsewhere ({@link JudgeOptions.knownGaps}). */
export interface KnownGap {
  operationId: string;
  status: number;
  kind: 'undocumented-status' | 'body-schema';
  /** Why it is tolerated and where it is reported. */
  reason: string;
}

/** Options of {@link judgeResponse}. */
export interface JudgeOptions {
  /** Statuses the service documents for every operation at once (none of ours does today). */
  globalStatuses?: readonly number[];
  /**
   * Findings tolerated while they are open elsewhere (say where in `reason`): for `operationId` (`*`:
   * every operation) and `status`, either the status is missing from the document
   * (`undocumented-status`; the body must still be the error envelope) or the body does not match
   * the schema the document gives for it (`body-schema`).
   */
  knownGaps?: readonly KnownGap[];
}

/** Thrown by {@link fuzzOperations} for a document it cannot use (no `paths`, unsupported parameter). */
export class OpenApiFuzzError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OpenApiFuzzError';
  }
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const DOC_ID = 'urn:fuzz:openapi';
/** The error envelope's `code` is a snake_case string. */
const SNAKE_CASE = /^[a-z][a-z0-9_]*$/;
/** Printable ASCII: what a header value may hold without fetch refusing it. */
const HEADER_SAFE = /^[\x20-\x7e]*$/;

const escapePointer = (part: string) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1'));

/** Follows a `$ref` to a document object (parameters, request bodies, responses). */
function deref(doc: OpenApiDocument, value: unknown): unknown {
  let current = value;
  for (let hops = 0; isObject(current) && typeof current.$ref === 'string'; hops++) {
    if (hops > 16 || !current.$ref.startsWith('#/'))
      throw new OpenApiFuzzError(`cannot follow $ref ${current.$ref}`);
    let node: unknown = doc;
    for (const part of current.$ref.slice(2).split('/'))
      node = isObject(node)
        ? node[decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')]
        : undefined;
    current = node;
  }
  return current;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: JsonSchema;
  /** JSON pointer of its schema in the document. */
  pointer: string;
}

/** The JSON types a parameter schema admits (for turning the wire string back into a value). */
function scalarTypes(doc: OpenApiDocument, schema: JsonSchema): string[] {
  const resolved = deref(doc, schema);
  if (!isObject(resolved)) return [];
  if (typeof resolved.type === 'string') return [resolved.type];
  if (Array.isArray(resolved.type)) return resolved.type.filter((t): t is string => typeof t === 'string');
  const branches = Array.isArray(resolved.anyOf) ? resolved.anyOf : resolved.oneOf;
  return Array.isArray(branches) ? branches.flatMap((b) => scalarTypes(doc, b as JsonSchema)) : [];
}

/** The value a wire string stands for under a parameter schema (numbers and booleans coerced as zod's coerce does). */
function fromWire(raw: string, types: readonly string[]): unknown {
  if (
    (types.includes('integer') || types.includes('number')) &&
    raw.trim() !== '' &&
    Number.isFinite(Number(raw))
  )
    return Number(raw);
  if (types.includes('boolean') && (raw === 'true' || raw === 'false')) return raw === 'true';
  return raw;
}

/** A scalar value as a parameter's wire string. */
const toWire = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** Default garbage credentials (see {@link FuzzOptions.garbageCredentials}). */
function defaultGarbage(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom('', ' ', 'null', 'undefined', 'Bearer ', 'x'.repeat(8000), '%00'),
    fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 80,
    }),
  );
}

/** Hostile strings that fetch can carry in a header (printable ASCII). */
function headerSafeHostile(): fc.Arbitrary<string> {
  return fc.oneof(
    hostileStringArbitrary().filter((v) => HEADER_SAFE.test(v) && v.length <= 8000),
    fc.constantFrom('', ' ', '%00', 'a'.repeat(8000), '../..', '; DROP TABLE x'),
  );
}

/** Lone surrogates, which no URL can carry (UTF-8): they become U+FFFD, as a browser would send them. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const encode = (v: string) => encodeURIComponent(v.replace(LONE_SURROGATE, '\uFFFD'));

/** A percent-encoded path segment; `.` and `..` (which URL parsers collapse) are never produced. */
const encodeSegment = (v: string) =>
  v === '.' || v === '..' ? encode(v).replace(/\./g, '%252E') : encode(v);

/**
 * Longest encoded parameter value sent: URLs stay under Node's 16 KB header limit, whose 431 answer
 * comes from the HTTP parser, before any code of the service runs.
 */
const MAX_ENCODED = 5000;
const fitsUrl = (v: string) => encode(v).length <= MAX_ENCODED;

/** Raw (already encoded) path segments and query values that decoders choke on. */
const RAW_ENCODED = ['%', '%zz', '%E0%A4%A', '%C0%AF', '%00', '%FF%FE', '%u0041', '%2F..%2F', '%252E'];

interface Parts {
  params: Record<string, unknown>;
  /** JSON text of the body (undefined: the operation takes none). */
  body?: string;
  auth: FuzzAuth;
}

/** A mutation applied to valid {@link Parts}. */
type Mutation =
  | { kind: 'param'; name: string; value: string | null | string[]; raw: boolean; what: string }
  | { kind: 'body'; text: string; what: string }
  | {
      kind: 'transport';
      /** `null`: no content-type header. */
      contentType: string | null;
      /** `valid`: the valid body; `none`: no body at all. */
      data: 'valid' | 'none' | { bytes: Uint8Array } | { text: string };
      what: string;
    }
  | { kind: 'extra-query'; raw: string; what: string }
  | { kind: 'header'; name: string; value: string; what: string };

interface Compiled {
  parameters: Parameter[];
  validateParam: Map<string, ValidateFunction>;
  paramTypes: Map<string, string[]>;
  body?: { schema: JsonSchema; required: boolean; validate: ValidateFunction };
  responses: Map<string, { validate?: ValidateFunction; schemaName?: string }>;
}

/** Shortens long strings in a printed counterexample (a 1.2 MB body would drown the report). */
function summarize(request: FuzzRequest): string {
  const cut = (s: string) =>
    s.length > 300 ? `${JSON.stringify(s.slice(0, 200))}…(${s.length} units)` : JSON.stringify(s);
  const body = request.body
    ? `, body: { contentType: ${request.body.contentType === undefined ? 'none' : JSON.stringify(request.body.contentType)}, data: ${
        typeof request.body.data === 'string' ? cut(request.body.data) : `<${request.body.data.length} bytes>`
      } }`
    : '';
  const headers = Object.entries(request.headers)
    .map(([k, v]) => `${k}: ${cut(v)}`)
    .join(', ');
  const auth =
    request.auth.mode === 'garbage'
      ? `garbage ${request.auth.slot.scheme} ${cut(request.auth.value)}`
      : request.auth.mode === 'valid'
        ? `valid ${request.auth.slots.map((s) => s.scheme).join('+')}`
        : 'none';
  return `${request.method} ${cut(request.path + (request.query ? `?${request.query}` : ''))} {${
    request.mutation ? ` mutation: ${JSON.stringify(request.mutation)},` : ''
  } conforms: ${request.conforms}, auth: ${auth}, headers: { ${headers} }${body} }`;
}

/**
 * Arbitraries of valid and hostile requests for every operation of an OpenAPI 3.1 document, and a
 * judge of the answers. Parameters (path, query, header; `$ref`s followed) and JSON request bodies are
 * drawn from their schemas with {@link validValueArbitrary}; hostile requests change exactly one part:
 * a parameter (wrong type, out of range, not in the enum, hostile or oversized string, malformed
 * percent-encoding, repeated, missing), the body ({@link hostileJsonArbitrary}), the transport (random
 * bytes, no body, empty body, wrong or missing content type, an unsupported charset), an extra query
 * parameter (`__proto__`, bracket syntax) or a hostile `x-request-id`. Credentials: for operations
 * with `security`, valid (a requirement whose schemes are all in `options.credentialSchemes`), none, or
 * garbage in one scheme's slot (`apiKey` in header, query or cookie; `http` bearer).
 * @param doc the document as served at `/openapi.json`
 * @param options size caps, known values, credential schemes and garbage
 * @returns one entry per operation, in document order
 * @throws OpenApiFuzzError when the document has no `paths` or a `$ref` cannot be followed
 * @throws UnsupportedSchemaError when a schema uses a keyword outside the supported subset
 */
export function fuzzOperations(doc: OpenApiDocument, options: FuzzOptions = {}): FuzzOperation[] {
  if (!isObject(doc.paths)) throw new OpenApiFuzzError('the document has no paths');
  // String lengths are counted in code points, as JSON Schema and zod 4 count them. Formats are not
  // checked: zod's and ajv-formats' notions of `uri` or `email` differ, and the patterns zod emits
  // beside them are checked.
  const ajv = new Ajv2020({ strict: false, validateFormats: false, validateSchema: false });
  ajv.addSchema(doc as Obj, DOC_ID);
  const compileAt = (pointer: string) => ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
  const schemes =
    isObject(doc.components) && isObject(doc.components.securitySchemes)
      ? doc.components.securitySchemes
      : {};
  const slotOf = (scheme: string): CredentialSlot => {
    const s = deref(doc, schemes[scheme]);
    if (
      isObject(s) &&
      s.type === 'apiKey' &&
      typeof s.name === 'string' &&
      (s.in === 'header' || s.in === 'query' || s.in === 'cookie')
    )
      return { scheme, in: s.in, name: s.name, prefix: '' };
    if (isObject(s) && s.type === 'http' && String(s.scheme).toLowerCase() === 'bearer')
      return { scheme, in: 'header', name: 'authorization', prefix: 'Bearer ' };
    throw new OpenApiFuzzError(`unsupported security scheme "${scheme}"`);
  };
  const held = new Set(options.credentialSchemes ?? []);
  const schemaOptions: SchemaArbitraryOptions = { ...options, root: doc };
  const operations: FuzzOperation[] = [];

  for (const [path, rawItem] of Object.entries(doc.paths)) {
    const item = deref(doc, rawItem);
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const operationId = typeof op.operationId === 'string' ? op.operationId : `${method} ${path}`;

      const compiled = compileOperation(doc, item, op, method, path, compileAt);
      const params = compiled.parameters;
      const responses = isObject(op.responses) ? op.responses : {};

      const security = (
        Array.isArray(op.security) ? op.security : Array.isArray(doc.security) ? doc.security : []
      ).filter(isObject);
      const secured = security.length > 0 && security.every((req) => Object.keys(req).length > 0);
      const auth = authArbitrary(security, held, slotOf, options.garbageCredentials);

      const paramModel: Record<string, fc.Arbitrary<unknown>> = {};
      for (const p of params) {
        let value = validValueArbitrary(p.schema, schemaOptions, p.name).map(toWire);
        if (p.in === 'path') value = value.filter((v) => v.length > 0);
        if (p.in === 'header') value = value.filter((v) => HEADER_SAFE.test(v));
        paramModel[`${p.in}:${p.name}`] = value;
      }
      const paramsArb = fc.record(paramModel, {
        requiredKeys: params.filter((p) => p.required).map((p) => `${p.in}:${p.name}`),
      });
      const bodyArb: fc.Arbitrary<string | undefined> = compiled.body
        ? validValueArbitrary(compiled.body.schema, schemaOptions).map((v) => JSON.stringify(v) ?? 'null')
        : fc.constant(undefined);
      const parts: fc.Arbitrary<Parts> = fc.record({ params: paramsArb, body: bodyArb, auth }).map((p) => ({
        params: p.params as Record<string, unknown>,
        auth: p.auth,
        ...(p.body === undefined ? {} : { body: p.body }),
      }));

      const upper = method.toUpperCase();
      const assemble = (p: Parts, mutation?: Mutation): FuzzRequest =>
        build(compiled, operationId, upper, path, p, mutation);

      const hostile = fc
        .tuple(parts, mutationArbitrary(doc, compiled, schemaOptions))
        .map(([p, m]) => assemble(p, m));

      operations.push({
        operationId,
        method: upper,
        path,
        documentedStatuses: Object.keys(responses),
        secured,
        valid: parts.map((p) => assemble(p)),
        hostile,
        problems: (request, response, judge) =>
          judgeResponse(compiled, secured, operationId, request, response, judge),
      });
    }
  }
  return operations;
}

/**
 * The parameters (path item's, overridden by the operation's), the JSON request body and the
 * responses of one operation, with ajv validators compiled at their places in the document.
 */
function compileOperation(
  doc: OpenApiDocument,
  item: Obj,
  op: Obj,
  method: string,
  path: string,
  compileAt: (pointer: string) => ValidateFunction,
): Compiled {
  const base = `/paths/${escapePointer(path)}`;
  // Parameters of the path item, overridden by the operation's (by name and location).
  const parameters = new Map<string, Parameter>();
  const addParameters = (list: unknown, pointer: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((raw, i) => {
      const p = deref(doc, raw);
      if (!isObject(p) || typeof p.name !== 'string') return;
      if (p.in !== 'path' && p.in !== 'query' && p.in !== 'header' && p.in !== 'cookie') return;
      const direct = isObject(raw) && typeof raw.$ref === 'string' ? raw.$ref.slice(1) : `${pointer}/${i}`;
      parameters.set(`${p.in}:${p.name}`, {
        name: p.name,
        in: p.in,
        required: p.in === 'path' || p.required === true,
        schema: (isObject(p.schema) || typeof p.schema === 'boolean' ? p.schema : true) as JsonSchema,
        pointer: `${direct}/schema`,
      });
    });
  };
  addParameters(item.parameters, `${base}/parameters`);
  addParameters(op.parameters, `${base}/${method}/parameters`);
  const params = [...parameters.values()];
  const compiled: Compiled = {
    parameters: params,
    validateParam: new Map(params.map((p) => [`${p.in}:${p.name}`, compileAt(p.pointer)])),
    paramTypes: new Map(params.map((p) => [`${p.in}:${p.name}`, scalarTypes(doc, p.schema)])),
    responses: new Map(),
  };

  const requestBody = deref(doc, op.requestBody);
  if (isObject(requestBody) && isObject(requestBody.content)) {
    const json = requestBody.content['application/json'];
    if (isObject(json)) {
      const direct =
        isObject(op.requestBody) && typeof op.requestBody.$ref === 'string'
          ? op.requestBody.$ref.slice(1)
          : `${base}/${method}/requestBody`;
      compiled.body = {
        schema: (json.schema ?? true) as JsonSchema,
        required: requestBody.required === true,
        validate: compileAt(`${direct}/content/${escapePointer('application/json')}/schema`),
      };
    }
  }

  const responses = isObject(op.responses) ? op.responses : {};
  for (const [status, rawResponse] of Object.entries(responses)) {
    const response = deref(doc, rawResponse);
    const content =
      isObject(response) && isObject(response.content) ? response.content['application/json'] : undefined;
    if (!isObject(content) || content.schema === undefined) {
      compiled.responses.set(status, {});
      continue;
    }
    const direct =
      isObject(rawResponse) && typeof rawResponse.$ref === 'string'
        ? rawResponse.$ref.slice(1)
        : `${base}/${method}/responses/${escapePointer(status)}`;
    const ref =
      isObject(content.schema) && typeof content.schema.$ref === 'string' ? content.schema.$ref : undefined;
    compiled.responses.set(status, {
      validate: compileAt(`${direct}/content/${escapePointer('application/json')}/schema`),
      schemaName: ref?.split('/').pop(),
    });
  }
  return compiled;
}

/**
 * Credentials of one request: valid (a requirement whose schemes the test holds), none, or garbage
 * in one scheme's slot; garbage dominates when the test holds no valid credential.
 */
function authArbitrary(
  security: readonly Obj[],
  held: ReadonlySet<string>,
  slotOf: (scheme: string) => CredentialSlot,
  garbage: FuzzOptions['garbageCredentials'],
): fc.Arbitrary<FuzzAuth> {
  const schemeNames = [...new Set(security.flatMap((req) => Object.keys(req)))];
  const validAlternatives = security
    .map((req) => Object.keys(req))
    .filter((names) => names.length > 0 && names.every((n) => held.has(n)))
    .map((names) => names.map(slotOf));
  const choices: fc.WeightedArbitrary<FuzzAuth>[] = [];
  if (validAlternatives.length > 0)
    choices.push({
      weight: 4,
      arbitrary: fc.constantFrom(...validAlternatives).map((slots): FuzzAuth => ({ mode: 'valid', slots })),
    });
  choices.push({ weight: 1, arbitrary: fc.constant<FuzzAuth>({ mode: 'none' }) });
  if (schemeNames.length > 0) {
    choices.push({
      weight: validAlternatives.length > 0 ? 1 : 4,
      arbitrary: fc.constantFrom(...schemeNames).chain((name) =>
        (garbage?.[name] ?? defaultGarbage()).map((value): FuzzAuth => ({
          mode: 'garbage',
          slot: slotOf(name),
          value,
        })),
      ),
    });
  }
  return fc.oneof(...choices);
}

/** One hostile change to a valid request: see {@link fuzzOperations}. */
function mutationArbitrary(
  doc: OpenApiDocument,
  compiled: Compiled,
  schemaOptions: SchemaArbitraryOptions,
): fc.Arbitrary<Mutation> {
  const extraQuery = fc
    .oneof(
      fc.constantFrom(
        '__proto__',
        'constructor',
        'toString',
        'x[]',
        'x[__proto__][polluted]',
        '%',
        'key&key',
      ),
      fc.string({ maxLength: 12 }),
    )
    .chain((name) =>
      hostileStringArbitrary()
        .filter(fitsUrl)
        .map((value): Mutation => ({
          kind: 'extra-query',
          raw: `${encode(name).replace(/%5B/g, '[').replace(/%5D/g, ']')}=${encode(value)}`,
          what: `extra query parameter "${name}"`,
        })),
    );
  const requestId = headerSafeHostile().map((value): Mutation => ({
    kind: 'header',
    name: 'x-request-id',
    value,
    what: 'hostile x-request-id',
  }));
  const mutations: fc.MaybeWeightedArbitrary<Mutation>[] = [extraQuery, requestId];
  for (const p of compiled.parameters) mutations.push(parameterMutation(doc, p));
  if (compiled.body) {
    const body = hostileJsonArbitrary(compiled.body.schema, schemaOptions).map((h): Mutation => ({
      kind: 'body',
      text: h.text,
      what: `body: ${h.mutation}`,
    }));
    mutations.push({ weight: 2, arbitrary: body }, transportMutation());
  }
  return fc.oneof(...mutations);
}

function parameterMutation(doc: OpenApiDocument, p: Parameter): fc.Arbitrary<Mutation> {
  const id = `${p.in}:${p.name}`;
  const resolved = deref(doc, p.schema);
  const types = scalarTypes(doc, p.schema);
  const s = isObject(resolved) ? resolved : {};
  const set = (value: string | null | string[], what: string, raw = false): Mutation => ({
    kind: 'param',
    name: id,
    value,
    raw,
    what: `${p.in} parameter "${p.name}": ${what}`,
  });
  const choices: fc.Arbitrary<Mutation>[] = [];
  if (p.in === 'header') {
    choices.push(headerSafeHostile().map((v) => set(v, 'hostile value')));
    choices.push(fc.constant(set(null, 'missing')));
    return fc.oneof(...choices);
  }
  choices.push(
    hostileStringArbitrary()
      .filter((v) => !(p.in === 'path' && v.length === 0) && fitsUrl(v))
      .map((v) => set(v, 'hostile value')),
    fc.constantFrom(...RAW_ENCODED).map((v) => set(v, `malformed percent-encoding ${v}`, true)),
    fc.constantFrom(3000).map((n) => set('a'.repeat(n), `${n} characters`)),
  );
  if (types.includes('integer') || types.includes('number')) {
    const bounds: string[] = [];
    if (typeof s.minimum === 'number') bounds.push(String(s.minimum - 1), String(s.minimum - 0.5));
    if (typeof s.maximum === 'number') bounds.push(String(s.maximum + 1), String(s.maximum + 0.5));
    choices.push(
      fc
        .constantFrom(
          'abc',
          '',
          ' ',
          '1.5',
          '-1',
          '0',
          '1e999',
          'NaN',
          'Infinity',
          '-Infinity',
          '0x10',
          '٣',
          '9'.repeat(30),
          '1,2',
          '[1]',
          ...bounds,
        )
        .map((v) => set(v, `number ${JSON.stringify(v)}`)),
    );
  }
  if (Array.isArray(s.enum)) {
    const values = s.enum.map(String);
    choices.push(
      fc
        .constantFrom(...values.map((v) => v.toUpperCase()), ...values.map((v) => ` ${v}`), 'other')
        .map((v) => set(v, `not in the enum: ${JSON.stringify(v)}`)),
    );
  }
  if (p.in === 'query') {
    choices.push(
      fc
        .tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }))
        .map(([a, b]) => set([a, b], 'repeated')),
    );
    if (p.required) choices.push(fc.constant(set(null, 'missing')));
  }
  return fc.oneof(...choices);
}

function transportMutation(): fc.Arbitrary<Mutation> {
  const transport = (
    contentType: string | null,
    data: Extract<Mutation, { kind: 'transport' }>['data'],
    what: string,
  ): Mutation => ({
    kind: 'transport',
    contentType,
    data,
    what,
  });
  return fc.oneof(
    fc
      .uint8Array({ maxLength: 512 })
      .map((bytes) => transport('application/json', { bytes }, 'random bytes')),
    fc.constant(transport(null, 'none', 'no body')),
    fc.constant(transport('application/json', { text: '' }, 'empty body')),
    fc.constant(transport(null, 'valid', 'valid JSON without content-type')),
    fc
      .constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=utf-16',
        'application/json; charset=latin1',
        'application/xml',
        'application/json, text/plain',
        '*/*',
        '',
      )
      .map((contentType) => transport(contentType, 'valid', `content-type ${JSON.stringify(contentType)}`)),
  );
}

/** Builds the encoded request from valid parts and an optional mutation, and decides conformance. */
function build(
  compiled: Compiled,
  operationId: string,
  method: string,
  template: string,
  parts: Parts,
  mutation?: Mutation,
): FuzzRequest {
  const values = new Map<string, { value: string | string[]; raw: boolean }>();
  for (const [id, v] of Object.entries(parts.params)) values.set(id, { value: v as string, raw: false });
  if (mutation?.kind === 'param') {
    if (mutation.value === null) values.delete(mutation.name);
    else values.set(mutation.name, { value: mutation.value, raw: mutation.raw });
  }
  let path = template;
  const queryParts: string[] = [];
  const headers: Record<string, string> = {};
  for (const p of compiled.parameters) {
    const entry = values.get(`${p.in}:${p.name}`);
    if (!entry) continue;
    const list = Array.isArray(entry.value) ? entry.value : [entry.value];
    const enc = (v: string) => (entry.raw ? v : p.in === 'path' ? encodeSegment(v) : encode(v));
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(enc(list[0] ?? ''));
    else if (p.in === 'query')
      for (const v of list) queryParts.push(`${encodeURIComponent(p.name)}=${enc(v)}`);
    else if (p.in === 'header') headers[p.name] = list[0] ?? '';
    else if (p.in === 'cookie')
      headers.cookie = `${headers.cookie ? `${headers.cookie}; ` : ''}${p.name}=${enc(list[0] ?? '')}`;
  }
  if (mutation?.kind === 'extra-query') queryParts.push(mutation.raw);
  if (mutation?.kind === 'header') headers[mutation.name] = mutation.value;

  let body: FuzzRequest['body'];
  if (parts.body !== undefined) body = { contentType: 'application/json', data: parts.body };
  if (mutation?.kind === 'body') body = { contentType: 'application/json', data: mutation.text };
  if (mutation?.kind === 'transport') {
    const m = mutation;
    const data: string | Uint8Array | undefined =
      m.data === 'none'
        ? undefined
        : m.data === 'valid'
          ? (parts.body ?? '{}')
          : 'bytes' in m.data
            ? m.data.bytes
            : m.data.text;
    if (data === undefined)
      body = m.contentType === null ? undefined : { contentType: m.contentType, data: '' };
    else body = m.contentType === null ? { data } : { contentType: m.contentType, data };
  }

  const query = queryParts.join('&');
  const request: FuzzRequest = {
    operationId,
    method,
    path,
    query,
    headers,
    ...(body ? { body } : {}),
    auth: parts.auth,
    ...(mutation ? { mutation: mutation.what } : {}),
    conforms: conforms(compiled, template, path, query, body),
  };
  Object.defineProperty(request, fc.toStringMethod, { value: () => summarize(request), enumerable: false });
  return request;
}

/** Whether the path and query parameters and the body validate against the document. */
function conforms(
  compiled: Compiled,
  template: string,
  path: string,
  query: string,
  body: FuzzRequest['body'],
): boolean {
  // Path parameters: match the template, decode, validate.
  const names: string[] = [];
  const pattern = new RegExp(
    '^' +
      template
        .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
        .replace(/\{([^}]+)\}/g, (_m, n: string) => (names.push(n), '([^/]*)')) +
      '$',
  );
  const match = pattern.exec(path);
  if (!match) return false;
  const wire = parseQueryString(query);
  for (const p of compiled.parameters) {
    const id = `${p.in}:${p.name}`;
    const validate = compiled.validateParam.get(id);
    const types = compiled.paramTypes.get(id) ?? [];
    let raw: string | undefined;
    if (p.in === 'path') {
      const segment = match[names.indexOf(p.name) + 1] ?? '';
      try {
        raw = decodeURIComponent(segment);
      } catch {
        return false;
      }
      if (raw.length === 0) return false;
    } else if (p.in === 'query') {
      const v = wire[p.name];
      if (Array.isArray(v)) return false;
      raw = v;
    } else continue;
    if (raw === undefined) {
      if (p.required) return false;
      continue;
    }
    if (validate && !validate(fromWire(raw, types))) return false;
  }
  if (!compiled.body) return true;
  if (!body) return !compiled.body.required;
  const type = body.contentType?.split(';');
  if (!type || type[0]?.trim().toLowerCase() !== 'application/json') return false;
  const charset = /charset\s*=\s*"?([^";]+)/i.exec(body.contentType ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return false;
  if (typeof body.data !== 'string') return false;
  let value: unknown;
  try {
    // RFC 8259 lets a parser ignore a leading byte order mark, and body-parser does.
    value = JSON.parse(body.data.replace(/^\uFEFF/, ''));
  } catch {
    return false;
  }
  return compiled.body.validate(value) === true;
}

/**
 * Sends a {@link FuzzRequest} with `fetch`: credentials of a `valid` request come from `credentials`
 * (by scheme name), a garbage credential goes in its slot, redirects are not followed.
 * @param baseUrl e.g. `http://127.0.0.1:3001`
 * @param credentials credential values by security scheme name
 * @param timeoutMs how long to wait for the whole answer, in milliseconds (default 15 000)
 * @param extraHeaders headers added to the request (e.g. `x-forwarded-for` to choose the client
 *   address a service behind a trusted proxy sees); the request's own headers win
 * @returns the status, headers, text and parsed JSON (`undefined` when not JSON)
 * @throws Error when a `valid` request names a scheme missing from `credentials`, or `Error('transport
 *   failure')` with the fetch error as `cause` when the request fails at the transport level (refused
 *   connection, reset, timeout, a header fetch refuses): a crash is a finding too
 */
export async function sendFuzzRequest(
  baseUrl: string,
  request: FuzzRequest,
  credentials: Readonly<Record<string, string>> = {},
  timeoutMs = 15_000,
  extraHeaders: Readonly<Record<string, string>> = {},
): Promise<FuzzResponse> {
  const headers: Record<string, string> = { ...extraHeaders, ...request.headers };
  const query = request.query ? [request.query] : [];
  const cookies: string[] = headers.cookie ? [headers.cookie] : [];
  const place = (slot: CredentialSlot, value: string) => {
    if (slot.in === 'header') headers[slot.name] = slot.prefix + value;
    else if (slot.in === 'query') query.push(`${encode(slot.name)}=${encode(value)}`);
    else cookies.push(`${slot.name}=${encode(value)}`);
  };
  if (request.auth.mode === 'valid') {
    for (const slot of request.auth.slots) {
      const value = credentials[slot.scheme];
      if (value === undefined) throw new Error(`no credential for security scheme "${slot.scheme}"`);
      place(slot, value);
    }
  } else if (request.auth.mode === 'garbage') place(request.auth.slot, request.auth.value);
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  if (request.body?.contentType !== undefined) headers['content-type'] = request.body.contentType;
  const url = `${baseUrl}${request.path}${query.length > 0 ? `?${query.join('&')}` : ''}`;
  const init: RequestInit = {
    method: request.method,
    headers,
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
  };
  if (request.body) {
    // Without a content type fetch would add text/plain for a string body: send bytes instead.
    init.body =
      typeof request.body.data === 'string' && request.body.contentType === undefined
        ? Buffer.from(request.body.data)
        : request.body.data;
  }
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, init);
    text = await res.text();
  } catch (error) {
    // A refused, reset or closed connection is a finding too: say which.
    throw new Error('transport failure', { cause: error });
  }
  let json: unknown;
  try {
    json = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * What keeps `body` from being the one error envelope of the services (docs/architecture.md,
 * "Runtime"), `{ error: string, code: snake_case string, details?: any, requestId: non-empty string }`.
 * @param body a parsed JSON body
 * @returns one sentence per problem; empty for an envelope
 */
export function envelopeProblems(body: unknown): string[] {
  if (!isObject(body)) return ['the body is not a JSON object'];
  const problems: string[] = [];
  if (typeof body.error !== 'string') problems.push('`error` is not a string');
  if (typeof body.code !== 'string' || !SNAKE_CASE.test(body.code))
    problems.push('`code` is not a snake_case string');
  if (typeof body.requestId !== 'string' || body.requestId.length === 0)
    problems.push('`requestId` is not a non-empty string');
  return problems;
}

/** {@link FuzzOperation.problems} of one operation. */
function judgeResponse(
  compiled: Compiled,
  secured: boolean,
  operationId: string,
  request: FuzzRequest,
  response: FuzzResponse,
  options: JudgeOptions = {},
): string[] {
  const problems: string[] = [];
  const status = response.status;
  const key = String(status);
  const range = `${key[0] ?? ''}XX`;
  const documentedKey = compiled.responses.has(key)
    ? key
    : compiled.responses.has(range)
      ? range
      : compiled.responses.has('default')
        ? 'default'
        : undefined;
  const gap = (kind: KnownGap['kind']) =>
    options.knownGaps?.some(
      (g) =>
        g.kind === kind && g.status === status && (g.operationId === operationId || g.operationId === '*'),
    ) ?? false;
  const documented =
    documentedKey !== undefined ||
    (options.globalStatuses ?? []).includes(status) ||
    gap('undocumented-status');
  if (status >= 500 && !(status === 503 && documentedKey !== undefined))
    problems.push(
      `answered ${status}${documentedKey ? '' : ' (undocumented)'}: ${response.text.slice(0, 300)}`,
    );
  else if (!documented)
    problems.push(`status ${status} is not in the document: ${response.text.slice(0, 300)}`);
  const ok = status >= 200 && status < 300;
  if (!ok) {
    const contentType = response.headers.get('content-type') ?? '';
    if (!/^application\/json\b/i.test(contentType))
      problems.push(`non-2xx answer with content-type ${JSON.stringify(contentType)}`);
    const schema = documentedKey === undefined ? undefined : compiled.responses.get(documentedKey);
    const other =
      schema?.validate && schema.schemaName !== undefined && schema.schemaName !== 'ErrorEnvelope';
    if (other && schema.validate) {
      if (!schema.validate(response.json) && !gap('body-schema'))
        problems.push(
          `body does not match ${schema.schemaName}: ${ajvSummary(schema.validate)}; body ${response.text.slice(0, 300)}`,
        );
    } else {
      const envelope = envelopeProblems(response.json);
      if (envelope.length > 0)
        problems.push(`not the error envelope (${envelope.join(', ')}): ${response.text.slice(0, 300)}`);
      else if (schema?.validate && !schema.validate(response.json) && !gap('body-schema'))
        problems.push(
          `body does not match the documented schema: ${ajvSummary(schema.validate)}; body ${response.text.slice(0, 300)}`,
        );
    }
  } else {
    const schema = documentedKey === undefined ? undefined : compiled.responses.get(documentedKey);
    if (schema?.validate && !schema.validate(response.json) && !gap('body-schema'))
      problems.push(
        `${status} body does not match the document: ${ajvSummary(schema.validate)}; body ${response.text.slice(0, 300)}`,
      );
    if (secured && request.auth.mode !== 'valid')
      problems.push(`answered ${status} to a request with ${request.auth.mode} credentials`);
    if (!request.conforms)
      problems.push(`answered ${status} to a request that does not conform to the document`);
  }
  return problems;
}

function ajvSummary(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`)
    .join('; ');
}

/** An error's message with its chain of causes (duck-typed: fetch's errors come from another realm under jest). */
function describeError(error: unknown): string {
  if (typeof error !== 'object' || error === null || !('message' in error)) return String(error);
  const { message, cause, code } = error as { message: unknown; cause?: unknown; code?: unknown };
  const text = `${String(message)}${typeof code === 'string' ? ` [${code}]` : ''}`;
  return cause === undefined ? text : `${text} (cause: ${describeError(cause)})`;
}

/** Options of {@link fuzzCheck}. */
export interface FuzzCheckOptions extends JudgeOptions {
  baseUrl: string;
  /** Credential values by security scheme name (read at each request: a test may replace them). */
  credentials?: Readonly<Record<string, string>>;
  /** Headers added to every request ({@link sendFuzzRequest}'s `extraHeaders`). */
  headers?: Readonly<Record<string, string>>;
  /** Runs per operation (default 40). */
  numRuns?: number;
  /** Seed, to replay a failure (fast-check prints it). */
  seed?: number;
  /** Replay path printed with the seed. */
  path?: string;
  /** Called with every answer (statistics, refreshing a session a fuzzed log-out ended...). */
  onResponse?: (request: FuzzRequest, response: FuzzResponse) => void | Promise<void>;
}

/**
 * The run settings a fuzz suite reads from its environment: `FUZZ_RUNS` (runs per operation, default
 * `defaultRuns`), and `FUZZ_SEED` / `FUZZ_PATH` to replay a failure fast-check printed.
 * @param defaultRuns runs per operation when `FUZZ_RUNS` is unset
 */
export function fuzzRunSettings(defaultRuns: number): Pick<FuzzCheckOptions, 'numRuns' | 'seed' | 'path'> {
  return {
    numRuns: Number(process.env.FUZZ_RUNS ?? defaultRuns),
    ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
    ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}),
  };
}

/**
 * Runs one operation's valid or hostile arbitrary against a running service with fast-check and
 * judges every answer ({@link FuzzOperation.problems}).
 * @param operation from {@link fuzzOperations}
 * @param kind which arbitrary to run
 * @returns `undefined` when every answer passed, else fast-check's report (seed, path, shrunk
 *   counterexample and the problems, transport failures included), prefixed with the operation; it
 *   throws nothing of its own
 */
export async function fuzzCheck(
  operation: FuzzOperation,
  kind: 'valid' | 'hostile',
  options: FuzzCheckOptions,
): Promise<string | undefined> {
  const property = fc.asyncProperty(operation[kind], async (request) => {
    const response = await sendFuzzRequest(
      options.baseUrl,
      request,
      options.credentials,
      undefined,
      options.headers,
    );
    await options.onResponse?.(request, response);
    const problems = operation.problems(request, response, options);
    if (problems.length > 0) throw new Error(problems.join('\n'));
  });
  const details = await fc.check(property, {
    numRuns: options.numRuns ?? 40,
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...(options.path === undefined ? {} : { path: options.path }),
  });
  if (!details.failed) return undefined;
  // A transport failure (fetch failed) keeps its reason in `cause` (a reset or closed socket...).
  const error = describeError(details.errorInstance);
  return `${operation.method} ${operation.path} (${operation.operationId}, ${kind}): ${fc.defaultReportMessage(details)}\nProblems:\n${error}`;
}

/**
 * {@link fuzzCheck} for each operation in turn (sequentially, so the service sees one request at a time).
 * @returns the reports of the operations that failed (empty when all passed)
 */
export async function fuzzCheckAll(
  operations: readonly FuzzOperation[],
  kind: 'valid' | 'hostile',
  options: FuzzCheckOptions,
): Promise<string[]> {
  const failures: string[] = [];
  for (const operation of operations) {
    const report = await fuzzCheck(operation, kind, options);
    if (report !== undefined) failures.push(report);
  }
  return failures;
}
