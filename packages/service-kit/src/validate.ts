import type { RequestHandler } from 'express';
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
}

/** The parsed values stored on `res.locals.valid` by {@link validate}. */
export interface Validated<Q = unknown, P = unknown, B = unknown> {
  query: Q;
  params: P;
  body: B;
}

/**
 * Validate-at-the-edge middleware (ARCHITECTURE.md, "Validate at the edge, use what was parsed"):
 * parses query, params and body with zod and stores the parsed values in `res.locals.valid`
 * (express 5's `req.query` is a read-only getter) and `req.body`. Any failure is one AppError listing
 * every field error in `details` (`[{ path: "query.limit", message }]`).
 * @throws AppError `invalid_request` (400) or `options.bodyCode` for the body
 */
export function validate(schemas: RequestSchemas, options: ValidateOptions = {}): RequestHandler {
  return (req, res, next) => {
    const problems: FieldError[] = [];
    const valid: Validated = { query: req.query, params: req.params, body: req.body };
    let bodyFailed = false;
    for (const part of ['query', 'params', 'body'] as const) {
      const schema = schemas[part];
      if (!schema) continue;
      const input: unknown = part === 'body' ? req.body : part === 'query' ? req.query : req.params;
      const result = schema.safeParse(input);
      if (result.success) valid[part] = result.data;
      else {
        problems.push(...fieldErrors(result.error, part));
        if (part === 'body') bodyFailed = true;
      }
    }
    if (problems.length > 0) {
      const code = bodyFailed && options.bodyCode ? options.bodyCode : 'invalid_request';
      next(
        new AppError(code, `Invalid request: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, {
          details: problems,
        }),
      );
      return;
    }
    res.locals.valid = valid;
    if (schemas.body) req.body = valid.body;
    next();
  };
}

/**
 * The values parsed by {@link validate}, typed by the caller.
 * @param locals `res.locals`
 */
export function validated<Q = unknown, P = unknown, B = unknown>(
  locals: Record<string, unknown>,
): Validated<Q, P, B> {
  return locals.valid as Validated<Q, P, B>;
}
