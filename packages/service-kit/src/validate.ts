import type { RequestHandler } from 'express';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { AppError, fieldErrors, type FieldError } from '@repo/errors';

/** Schemas for the parts of a request {@link validate} checks. */
export interface RequestSchemas {
  query?: z.ZodType;
  params?: z.ZodType;
  body?: z.ZodType;
}

/** Options of {@link validate}. */
export interface ValidateOptions {
  /** Error code for a failed body: `invalid_request` (400, default) or `validation_failed` (422). */
  bodyCode?: 'invalid_request' | 'validation_failed';
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
type Checked = { ok: true; data: unknown } | { ok: false; problems: FieldError[] };

/** Parses `input` with `schema`, then looks for NUL in what was parsed; paths start with `location`. */
function check(
  schema: z.ZodType,
  input: unknown,
  location: string,
  nulAllowed: ReadonlySet<string>,
): Checked {
  const result = schema.safeParse(input);
  if (!result.success) return { ok: false, problems: fieldErrors(result.error, location) };
  const nul = nulPath(result.data, location, nulAllowed);
  if (nul) return { ok: false, problems: [{ path: nul.join('.'), message: NUL_MESSAGE }] };
  return { ok: true, data: result.data };
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

/** One AppError listing every field error in `details`. */
function invalid(code: NonNullable<ValidateOptions['bodyCode']>, problems: FieldError[]): AppError {
  return new AppError(code, `Invalid request: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, {
    details: problems,
  });
}

/**
 * Validate-at-the-edge middleware (docs/architecture.md, "Routes own their contracts": the route
 * validates with its request schemas, the handler reads what was parsed):
 * parses query, params and body with zod and stores the parsed values in `res.locals.valid`
 * (express 5's `req.query` is a read-only getter) and `req.body`. A string that contains U+0000
 * (NUL) anywhere in a parsed part (unless `options.nulAllowed` names it) is a field error too:
 * PostgreSQL stores it neither in `text` nor in `jsonb`, so it would otherwise fail as a 500 deep
 * inside a repository. Any failure is one AppError
 * listing every field error in `details` (`[{ path: "query.limit", message }]`). A query string
 * that parsed before gets the same parsed query again, frozen, without parsing (the last 500 valid
 * ones of up to 512 characters are kept per middleware).
 * @throws AppError `invalid_request` (400) or `options.bodyCode` for the body
 */
export function validate(schemas: RequestSchemas, options: ValidateOptions = {}): RequestHandler {
  const nulAllowed = new Set(options.nulAllowed ?? []);
  // Query strings already parsed to a valid query, least recently used evicted: a repeated URL (the
  // same paid report asked by many agents) costs no schema work. Only valid ones: a flood of bad
  // queries stays a parse each and fills nothing. Values are wrapped: the cache takes no `undefined`.
  const queries = new LRUCache<string, { query: unknown }>({ max: QUERY_CACHE_SIZE });
  return (req, res, next) => {
    const problems: FieldError[] = [];
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
      const input: unknown = part === 'body' ? req.body : part === 'query' ? req.query : req.params;
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
      next(invalid(bodyFailed && options.bodyCode ? options.bodyCode : 'invalid_request', problems));
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
 * @throws AppError `invalid_request` (400), or `options.bodyCode`, listing every field error in `details`
 */
export function parseInput<T>(
  schema: z.ZodType<T>,
  input: unknown,
  location: string,
  options: ValidateOptions = {},
): T {
  const checked = check(schema, input, location, new Set(options.nulAllowed ?? []));
  if (!checked.ok) throw invalid(options.bodyCode ?? 'invalid_request', checked.problems);
  return checked.data as T;
}
