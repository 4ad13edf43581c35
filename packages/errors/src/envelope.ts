import { z } from 'zod';
import type { ErrorCode } from './codes';
import { ERROR_CODES } from './codes';

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

/** Field errors as sent in `details` for a failed validation: one entry per issue. */
export interface FieldError {
  /** Dotted path of the offending field, e.g. `"query.limit"` or `"session_config.budget"`. */
  path: string;
  /** What is wrong with it. */
  message: string;
}

/**
 * Flattens a zod error into {@link FieldError}s.
 * @param error the zod error
 * @param prefix a location to put in front of each path, e.g. `"query"`
 */
export function fieldErrors(error: z.ZodError, prefix?: string): FieldError[] {
  return error.issues.map((issue) => {
    const parts = [...(prefix ? [prefix] : []), ...issue.path.map(String)];
    return { path: parts.join('.') || '(root)', message: issue.message };
  });
}

/** Every known code, for schema and documentation generation. */
export const ERROR_CODE_LIST = Object.keys(ERROR_CODES) as ErrorCode[];
