import type { Request, RequestHandler } from 'express';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { AppError, fieldErrors, validationError, type ValidationIssue } from '@repo/errors';

/** Schemas for the parts of a request {@link validate} checks. */
export interface RequestSchemas {
  query?: z.ZodType;
  params?: z.ZodType;
  body?: z.ZodType;
}

/** Options of {@link validate}. */
export interface ValidateOptions {
  /**
   * Status of a failed body: 400 (default), or 422 where the service's spec names it (market-intel's
   * compute bodies). The code is `invalid_request` either way (docs/architecture.md, "One error dialect").
   */
  bodyStatus?: 400 | 422;
  /**
   * Dotted paths of strings that may hold U+0000 because they are never stored as text (e.g.
   * `body.password`, which is only hashed); every other string is refused with it.
   */
  nulAllowed?: readonly string[];
}

/** The parsed values stored on `res.locals.valid` by {@link validate}. */
export interface Validated<Q = unknown, P = unknown, B = unknown> {
  query: Q;
  params: P;
  body: B;
}

/**
 * The path (starting with `prefix`) of the first string, value or object key, in `value` that contains
 * U+0000, which PostgreSQL can store neither in `text` nor in `jsonb`; string values at `allowed`
 * paths are skipped; `undefined` when there is none. Iterative, so deep JSON cannot overflow the stack.
 */
function nulPath(value: unknown, prefix: string, allowed: ReadonlySet<string>): string[] | undefined {
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [prefix] }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const current = item.value;
    if (typeof current === 'string') {
      if (current.includes('\u0000') && !allowed.has(item.path.join('.'))) return item.path;
    } else if (Array.isArray(current)) {
      current.forEach((v, i) => stack.push({ value: v, path: [...item.path, String(i)] }));
    } else if (typeof current === 'object' && current !== null) {
      for (const [k, v] of Object.entries(current)) {
        if (k.includes('\u0000')) return [...item.path, k];
        stack.push({ value: v, path: [...item.path, k] });
      }
    }
  }
  return undefined;
}

/** What {@link check} found: the parsed value, or the field errors. */
type Checked = { ok: true; data: unknown } | { ok: false; problems: ValidationIssue[] };

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The paths (starting with `prefix`) of the keys of `input` that parsing dropped: a key of an input
 * object that the parsed object at the same place does not have. zod's plain objects strip the keys
 * they do not declare, so these are the fields (or query parameters) the operation does not know,
 * whatever unions or defaults the schema has; a free-form object (`z.record`, `z.unknown`, a loose
 * object) keeps its keys and is never reported. Iterative, so deep JSON cannot overflow the stack.
 */
function droppedKeys(input: unknown, output: unknown, prefix: string): string[] {
  const found: string[] = [];
  const stack: { input: unknown; output: unknown; path: string }[] = [{ input, output, path: prefix }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const { input: i, output: o, path } = item;
    if (i === o) continue; // passed through untouched: nothing was dropped below
    if (isPlainObject(i) && isPlainObject(o)) {
      for (const key of Object.keys(i)) {
        if (!Object.hasOwn(o, key)) found.push(`${path}.${key}`);
        else stack.push({ input: i[key], output: o[key], path: `${path}.${key}` });
      }
    } else if (Array.isArray(i) && Array.isArray(o) && i.length === o.length) {
      i.forEach((v, n) => stack.push({ input: v, output: o[n], path: `${path}.${n}` }));
    }
  }
  return found.sort();
}

/** Edit distance of two short names, for "did you mean". */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(
        (row[j] ?? 0) + 1,
        (next[j - 1] ?? 0) + 1,
        (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The declared property names of an object schema (top level), for suggestions; empty otherwise. */
function declaredNames(schema: z.ZodType): string[] {
  const shape = (schema as { shape?: unknown }).shape;
  return isPlainObject(shape) ? Object.keys(shape) : [];
}

/** One issue per dropped key, with the nearest declared name when one is close (`sectr` -> `sector`). */
function unknownIssues(paths: string[], location: string, names: readonly string[]): ValidationIssue[] {
  const code = location === 'query' ? 'unknown_parameter' : 'unknown_field';
  const known =
    location === 'query' ? 'is not a parameter of this operation' : 'is not a field of this operation';
  // The caller chose the names: the answer names at most MAX_UNKNOWN of them, each cut to a length.
  const issues = paths.slice(0, MAX_UNKNOWN).map((full): ValidationIssue => {
    const path = full.length > MAX_PATH ? `${full.slice(0, MAX_PATH)}…` : full;
    const key = full.slice(full.lastIndexOf('.') + 1);
    const topLevel = full === `${location}.${key}` && key.length <= 64;
    const near = topLevel
      ? names
          .map((name) => ({ name, d: distance(key.toLowerCase(), name.toLowerCase()) }))
          .filter((c) => c.d <= Math.max(1, Math.floor(c.name.length / 3)))
          .sort((x, y) => x.d - y.d)[0]
      : undefined;
    return { path, code, message: near ? `${known}; did you mean \`${near.name}\`?` : known };
  });
  if (paths.length > MAX_UNKNOWN)
    issues.push({ path: location, code, message: `has ${paths.length - MAX_UNKNOWN} more unknown names` });
  return issues;
}

/** Most unknown names one answer lists, and the longest path it repeats (characters). */
const MAX_UNKNOWN = 20;
const MAX_PATH = 200;

/**
 * Parses `input` with `schema`, refuses the keys parsing dropped (unknown fields and parameters),
 * then looks for NUL in what was parsed; paths start with `location`.
 */
function check(
  schema: z.ZodType,
  input: unknown,
  location: string,
  nulAllowed: ReadonlySet<string>,
): Checked {
  const result = schema.safeParse(input);
  if (!result.success) {
    // The unknown keys too, so that one answer names every problem.
    const problems = fieldErrors(result.error, location, input);
    return { ok: false, problems: [...unknownTopLevelKeys(schema, input, location), ...problems] };
  }
  const dropped = droppedKeys(input, result.data, location);
  if (dropped.length > 0)
    return { ok: false, problems: unknownIssues(dropped, location, declaredNames(schema)) };
  const nul = nulPath(result.data, location, nulAllowed);
  if (nul)
    return {
      ok: false,
      problems: [{ path: nul.join('.'), code: 'invalid_characters', message: NUL_MESSAGE }],
    };
  return { ok: true, data: result.data };
}

/**
 * The top-level keys of `input` an object schema does not declare, when parsing failed for another
 * reason (the parse cannot say what it would have dropped). A schema that is no plain object (a union,
 * a loose object) reports none.
 */
function unknownTopLevelKeys(schema: z.ZodType, input: unknown, location: string): ValidationIssue[] {
  const names = declaredNames(schema);
  const def = (schema as { def?: { type?: unknown; catchall?: unknown } }).def;
  if (!isPlainObject(input) || def?.type !== 'object' || def.catchall !== undefined) return [];
  const extra = Object.keys(input)
    .filter((k) => !names.includes(k))
    .map((k) => `${location}.${k}`);
  return unknownIssues(extra, location, names);
}

const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';

/** Valid query strings remembered per {@link validate} middleware, and the longest one remembered. */
const QUERY_CACHE_SIZE = 500;
const QUERY_CACHE_MAX_LENGTH = 512;

/** Freezes `value` and everything in it, so that one parsed query can be handed to many requests. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The raw query string of a request (`?` included), or `''`. */
function rawQuery(url: string): string {
  const at = url.indexOf('?');
  return at < 0 ? '' : url.slice(at);
}

/**
 * The name of the express app setting that lists the query parameters carrying a credential (an
 * `apiKey` security scheme `in: query` of the service's document, e.g. signal-feedback's `key`): they
 * are read by the authentication middleware, so validation neither parses nor refuses them.
 * `createServiceApp` sets it from the document.
 */
export const CREDENTIAL_QUERY_SETTING = 'credential query parameters';

/** `req.query` without the credential parameters of {@link CREDENTIAL_QUERY_SETTING}. */
function queryOf(req: Request): unknown {
  const query = req.query;
  const credentials = req.app?.get(CREDENTIAL_QUERY_SETTING) as readonly string[] | undefined;
  if (!credentials?.some((name) => Object.hasOwn(query, name))) return query;
  const rest: Record<string, unknown> = { ...query };
  for (const name of credentials) delete rest[name];
  return rest;
}

/** A JSON body was sent (its length is not zero, or it is chunked). */
function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Middleware of an operation that takes a JSON body (docs/architecture.md, "One error dialect"): a
 * body sent with another content type (or none) is a 415 `unsupported_media_type` that says what to
 * send, before anything else looks at the request; no body at all is left to validation ("the body is
 * required").
 * @throws AppError `unsupported_media_type` (415)
 */
export const jsonBodyOnly: RequestHandler = (req, _res, next) => {
  if (hasBody(req) && !req.is('application/json')) {
    const sent = req.headers['content-type'];
    next(
      new AppError(
        'unsupported_media_type',
        `Send the body as JSON with Content-Type: application/json (got ${sent ? JSON.stringify(sent.slice(0, 100)) : 'no Content-Type'})`,
      ),
    );
    return;
  }
  next();
};

/** The body's issues when it is absent or not JSON at all: one clear sentence instead of a type error. */
function missingBody(req: Request): ValidationIssue[] | undefined {
  if (req.body !== undefined) return undefined;
  return [
    {
      path: 'body',
      code: 'required',
      message: 'is required: send a JSON body with Content-Type: application/json',
    },
  ];
}

/**
 * Validate-at-the-edge middleware (docs/architecture.md, "Routes own their contracts": the route
 * validates with its request schemas, the handler reads what was parsed):
 * parses query, params and body with zod and stores the parsed values in `res.locals.valid`
 * (express 5's `req.query` is a read-only getter) and `req.body`. A string that contains U+0000
 * (NUL) anywhere in a parsed part (unless `options.nulAllowed` names it) is a field error too:
 * PostgreSQL stores it neither in `text` nor in `jsonb`, so it would otherwise fail as a 500 deep
 * inside a repository. A query parameter or body field the schemas do not declare is refused too
 * (`unknown_parameter`, `unknown_field`; docs/architecture.md, "One error dialect"), except the
 * credential query parameters of {@link CREDENTIAL_QUERY_SETTING}. Any failure is one
 * `invalid_request` listing every problem in `details.issues` (`[{ path: "query.limit", code:
 * "too_big", message: "must be at most 100" }]`) with a human `error`. A query string
 * that parsed before gets the same parsed query again, frozen, without parsing (the last 500 valid
 * ones of up to 512 characters are kept per middleware).
 * @throws AppError `invalid_request`: 400, or `options.bodyStatus` when the body failed
 */
export function validate(schemas: RequestSchemas, options: ValidateOptions = {}): RequestHandler {
  const nulAllowed = new Set(options.nulAllowed ?? []);
  // Query strings already parsed to a valid query, least recently used evicted: a repeated URL (the
  // same paid report asked by many agents) costs no schema work. Only valid ones: a flood of bad
  // queries stays a parse each and fills nothing. Values are wrapped: the cache takes no `undefined`.
  const queries = new LRUCache<string, { query: unknown }>({ max: QUERY_CACHE_SIZE });
  return (req, res, next) => {
    const problems: ValidationIssue[] = [];
    // express 5 parses the query string on every read of req.query: only read it when it is needed.
    const valid: Validated = {
      query: schemas.query ? undefined : req.query,
      params: req.params,
      body: req.body,
    };
    let bodyFailed = false;
    for (const part of ['query', 'params', 'body'] as const) {
      const schema = schemas[part];
      if (!schema) continue;
      const raw = part === 'query' ? rawQuery(req.url) : undefined;
      const known = raw === undefined ? undefined : queries.get(raw);
      if (known) {
        valid.query = known.query;
        continue;
      }
      const absent = part === 'body' && !schema.safeParse(undefined).success ? missingBody(req) : undefined;
      if (absent) {
        problems.push(...absent);
        bodyFailed = true;
        continue;
      }
      const input: unknown = part === 'body' ? req.body : part === 'query' ? queryOf(req) : req.params;
      const checked = check(schema, input, part, nulAllowed);
      if (checked.ok) {
        valid[part] = checked.data;
        if (raw !== undefined && raw.length <= QUERY_CACHE_MAX_LENGTH)
          queries.set(raw, { query: deepFreeze(checked.data) });
      } else {
        problems.push(...checked.problems);
        if (part === 'body') bodyFailed = true;
      }
    }
    if (problems.length > 0) {
      next(validationError(problems, bodyFailed ? (options.bodyStatus ?? 400) : 400));
      return;
    }
    res.locals.valid = valid;
    if (schemas.body) req.body = valid.body;
    next();
  };
}

/**
 * Parses one value exactly as {@link validate} parses a request part (zod, then no U+0000 in any
 * parsed string unless `options.nulAllowed` names its path): for inputs that arrive other than as a
 * query, path or body, such as an MCP tool's arguments.
 * @param location the first segment of every reported path, e.g. `"arguments"`
 * @returns the parsed value
 * @throws AppError `invalid_request` (400, or `options.bodyStatus`), listing every problem in
 *   `details.issues`, unknown fields included
 */
export function parseInput<T>(
  schema: z.ZodType<T>,
  input: unknown,
  location: string,
  options: ValidateOptions = {},
): T {
  const checked = check(schema, input, location, new Set(options.nulAllowed ?? []));
  if (!checked.ok) throw validationError(checked.problems, options.bodyStatus ?? 400);
  return checked.data as T;
}
