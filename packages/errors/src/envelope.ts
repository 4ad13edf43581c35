import { z } from 'zod';
import type { ErrorCode } from './codes';
import { ERROR_CODES } from './codes';
import { AppError } from './app-error';

/**
 * The body of every non-2xx answer of every service (docs/architecture.md, "Runtime"; docs/payments.md,
 * "Paying with our client"):
 * `{ error: string, code: snake_case, details?: unknown, requestId: string }`.
 */
export const ErrorEnvelope = z.object({
  error: z.string(),
  code: z.string().regex(/^[a-z][a-z0-9_]*$/),
  details: z.unknown().optional(),
  requestId: z.string(),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

/**
 * Builds an envelope.
 * @param code the error code
 * @param message human-readable message
 * @param requestId the request id (from `x-request-id` or generated)
 * @param details optional detail; omitted from the body when `undefined`
 */
export function errorEnvelope(
  code: ErrorCode | (string & {}),
  message: string,
  requestId: string,
  details?: unknown,
): ErrorEnvelope {
  return details === undefined
    ? { error: message, code, requestId }
    : { error: message, code, details, requestId };
}

/**
 * One problem of a request that failed validation, as listed in `details.issues` of a 400 (or 422)
 * `invalid_request` (docs/architecture.md, "One error dialect").
 */
export interface ValidationIssue {
  /** Dotted path of the offending field, e.g. `"query.limit"` or `"body.session_config.budget"`. */
  path: string;
  /**
   * What kind of problem, snake_case: `required`, `invalid_type`, `too_small`, `too_big`,
   * `invalid_format`, `invalid_value`, `invalid_union`, `not_multiple_of`, `unknown_field`,
   * `unknown_parameter`, `invalid_characters` or `custom`.
   */
  code: string;
  /** What is wrong with it, in words (`"is required"`, `"must be at most 100"`), never a parser's wording. */
  message: string;
}

/** The issues of a failed validation; the older name of {@link ValidationIssue}. */
export type FieldError = ValidationIssue;

/** zod's own (English) messages, which say what the parser expected rather than what to send. */
const PARSER_WORDING = /^(Invalid|Too (small|big)|Unrecognized key|Expected |Required$)/;

const article = (noun: string) => (/^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`);

/** A JSON-ish name of what zod expected. */
function typeName(expected: unknown): string {
  switch (expected) {
    case 'int':
      return 'integer';
    case 'record':
    case 'map':
      return 'object';
    case 'nan':
      return 'number';
    default:
      return typeof expected === 'string' ? expected : 'value';
  }
}

const FORMATS: Readonly<Record<string, string>> = {
  url: 'a URL',
  uuid: 'a UUID',
  guid: 'a UUID',
  email: 'an email address',
  datetime: 'an ISO 8601 date-time (e.g. 2026-01-31T12:00:00Z)',
  date: 'an ISO 8601 date (e.g. 2026-01-31)',
  time: 'an ISO 8601 time',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
  base64: 'base64',
  base64url: 'base64url',
};

/** The bound of a too_small/too_big issue in words, by what was measured. */
function bound(issue: Record<string, unknown>, which: 'least' | 'most'): string {
  const limit = String(which === 'least' ? issue.minimum : issue.maximum);
  const inclusive = issue.inclusive !== false;
  switch (issue.origin) {
    case 'string':
      if (which === 'least' && limit === '1') return 'must not be empty';
      return `must be at ${which} ${limit} character${limit === '1' ? '' : 's'} long`;
    case 'array':
    case 'set':
      if (which === 'least' && limit === '1') return 'must have at least one item';
      return `must have at ${which} ${limit} item${limit === '1' ? '' : 's'}`;
    case 'file':
      return `must be at ${which} ${limit} bytes`;
    default:
      if (!inclusive) return `must be ${which === 'least' ? 'greater' : 'less'} than ${limit}`;
      return `must be at ${which} ${limit}`;
  }
}

/**
 * One zod issue in words, without the field's name: `"is required"`, `"must be a string"`,
 * `"must be at most 100"`, `"must be one of \"a\", \"b\""`. A message the schema wrote itself (a
 * refinement's, or an `error` option's) is kept as written.
 */
function describe(issue: z.core.$ZodIssue): { code: string; message: string } {
  const raw = issue as unknown as Record<string, unknown>;
  const own = !PARSER_WORDING.test(issue.message);
  if (issue.code === 'custom') return { code: 'custom', message: issue.message };
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message))
    return { code: 'required', message: 'is required' };
  if (own) return { code: issue.code, message: issue.message };
  switch (issue.code) {
    case 'invalid_type': {
      const received = /received (\w+)$/.exec(issue.message)?.[1];
      const got =
        received && received !== 'undefined'
          ? ` (got ${received === 'null' ? 'null' : article(received)})`
          : '';
      return { code: issue.code, message: `must be ${article(typeName(raw.expected))}${got}` };
    }
    case 'too_small':
      return { code: issue.code, message: bound(raw, 'least') };
    case 'too_big':
      return { code: issue.code, message: bound(raw, 'most') };
    case 'invalid_format': {
      const format = String(raw.format);
      if (format === 'starts_with')
        return { code: issue.code, message: `must start with "${String(raw.prefix)}"` };
      if (format === 'ends_with')
        return { code: issue.code, message: `must end with "${String(raw.suffix)}"` };
      if (format === 'includes')
        return { code: issue.code, message: `must contain "${String(raw.includes)}"` };
      const named = FORMATS[format];
      return { code: issue.code, message: named ? `must be ${named}` : 'is not in the expected format' };
    }
    case 'invalid_value': {
      const values = (Array.isArray(raw.values) ? raw.values : []).map((v) => JSON.stringify(v));
      return {
        code: issue.code,
        message: values.length === 1 ? `must be ${values[0]}` : `must be one of ${values.join(', ')}`,
      };
    }
    case 'not_multiple_of':
      return { code: issue.code, message: `must be a multiple of ${String(raw.divisor)}` };
    case 'invalid_union':
      return { code: issue.code, message: 'matches none of the accepted forms (see the API reference)' };
    case 'invalid_key':
      return { code: issue.code, message: 'has a key that is not accepted' };
    case 'invalid_element':
      return { code: issue.code, message: 'has an element that is not accepted' };
    default:
      return { code: issue.code, message: 'is not valid' };
  }
}

/** Whether the field at `path` is absent from an object that is there. */
function isMissing(input: unknown, path: readonly PropertyKey[]): boolean {
  let parent: unknown = input;
  for (const segment of path.slice(0, -1)) {
    if (typeof parent !== 'object' || parent === null) return false;
    parent = (parent as Record<PropertyKey, unknown>)[segment];
  }
  const last = path[path.length - 1];
  return (
    typeof parent === 'object' &&
    parent !== null &&
    !Array.isArray(parent) &&
    last !== undefined &&
    (parent as Record<PropertyKey, unknown>)[last] === undefined
  );
}

/**
 * Flattens a zod error into {@link ValidationIssue}s worded for people (`"is required"`, `"must be at
 * most 100"`): zod's own wording never reaches a client; messages a schema wrote itself are kept.
 * An `unrecognized_keys` issue of a strict object becomes one `unknown_field` issue per key.
 * @param error the zod error
 * @param prefix a location to put in front of each path, e.g. `"query"`
 * @param input what was parsed: with it, a field absent from its object is `required` whatever the
 *   schema's kind (an enum's missing value included)
 */
export function fieldErrors(error: z.ZodError, prefix?: string, input?: unknown): ValidationIssue[] {
  const pathOf = (segments: readonly PropertyKey[]) =>
    [...(prefix ? [prefix] : []), ...segments.map(String)].join('.') || '(root)';
  return error.issues.flatMap((issue): ValidationIssue[] => {
    if (
      input !== undefined &&
      issue.code !== 'custom' &&
      issue.path.length > 0 &&
      isMissing(input, issue.path)
    )
      return [{ path: pathOf(issue.path), code: 'required', message: 'is required' }];
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((key) => ({
        path: pathOf([...issue.path, key]),
        code: prefix === 'query' ? 'unknown_parameter' : 'unknown_field',
        message: 'is not a known field',
      }));
    return [{ path: pathOf(issue.path), ...describe(issue) }];
  });
}

/** `body.a.b` -> how a message names it: ``query parameter `limit` ``, `` `a.b` ``, `the body`. */
function subject(path: string): string {
  const [location = '', ...rest] = path.split('.');
  const field = rest.join('.');
  if (location === 'query') return field ? `query parameter \`${field}\`` : 'the query';
  if (location === 'params') return field ? `path parameter \`${field}\`` : 'the path';
  if (location === 'body') return field ? `\`${field}\`` : 'the body';
  if (location === 'arguments') return field ? `\`${field}\`` : 'the arguments';
  return `\`${path}\``;
}

/** At most this many issues are spelled out in the envelope's `error`; `details.issues` has them all. */
const ISSUES_IN_MESSAGE = 5;

/**
 * The human message of a failed validation: each issue as its subject and what is wrong
 * (`` `type` is required; query parameter `limit` must be at most 100 ``), at most five, then how many
 * more. A message that already names its field (`"idea is required ..."`) is not prefixed again.
 * @param issues the issues, in order
 */
export function describeIssues(issues: readonly ValidationIssue[]): string {
  const parts = issues.slice(0, ISSUES_IN_MESSAGE).map((issue) => {
    const name = issue.path.split('.').pop() ?? '';
    if (name && issue.message.startsWith(`${name} `)) return issue.message;
    return `${subject(issue.path)} ${issue.message}`;
  });
  const more = issues.length - ISSUES_IN_MESSAGE;
  return `${parts.join('; ')}${more > 0 ? `; and ${more} more (see details.issues)` : ''}`;
}

/**
 * The one error of a failed validation (docs/architecture.md, "One error dialect"): code
 * `invalid_request`, status 400 unless the contract names another (market-intel's compute bodies:
 * 422), a human `error` from {@link describeIssues} and `details: { issues }`.
 * @param issues every problem found; at least one
 * @param status 400 by default; 422 where a spec names it
 */
export function validationError(issues: readonly ValidationIssue[], status = 400): AppError {
  return new AppError('invalid_request', describeIssues(issues), {
    status,
    details: { issues: [...issues] },
  });
}

/** Every known code, for schema and documentation generation. */
export const ERROR_CODE_LIST = Object.keys(ERROR_CODES) as ErrorCode[];
