import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, isAppError } from './app-error';
import { errorEnvelope } from './envelope';

/** The minimal logger the error middleware needs (pino's shape). */
export interface ErrorLogger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/**
 * The request id of a request: `req.id` set by pino-http, else the `x-request-id` header, else a new
 * UUID (stored on the request so every later reader sees the same one).
 */
export function requestIdOf(req: Request): string {
  const withId = req as Request & { id?: unknown };
  if (typeof withId.id === 'string' && withId.id) return withId.id;
  if (typeof withId.id === 'number') return String(withId.id);
  const header = req.headers['x-request-id'];
  const id = typeof header === 'string' && header.length > 0 && header.length <= 200 ? header : randomUUID();
  withId.id = id;
  return id;
}

/**
 * Sends an {@link AppError} as the error envelope, with its headers.
 * @param res the response
 * @param req the request (for the request id)
 * @param err the error
 */
export function sendAppError(req: Request, res: Response, err: AppError): void {
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  const message = err.isServerError && err.code === 'internal_error' ? 'Internal server error' : err.message;
  res.status(err.status).json(errorEnvelope(err.code, message, requestIdOf(req), err.details));
}

/** Express 404 handler for unknown routes: `404 not_found` in the envelope. Mount after every route. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError('not_found', `No route for ${req.method} ${req.path}`));
};

/** Errors raised by body-parser (express.json) carry `type` and `status`. */
interface BodyParserError {
  type: string;
  status?: number;
  expose?: boolean;
  /** The configured limit in bytes (`entity.too.large`). */
  limit?: number;
}

function isBodyParserError(err: unknown): err is Error & BodyParserError {
  return err instanceof Error && typeof (err as Partial<BodyParserError>).type === 'string';
}

/**
 * Maps body-parser failures to our codes: malformed JSON 400, too large 413 (with `details.limit_bytes`,
 * the limit in bytes), bad charset or content encoding 415.
 */
function fromBodyParser(err: Error & BodyParserError): AppError | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return new AppError('invalid_json', 'Request body is not valid JSON', { cause: err });
    case 'entity.too.large':
      return typeof err.limit === 'number'
        ? new AppError(
            'payload_too_large',
            `Request body is too large: the limit is ${err.limit} bytes (details.limit_bytes)`,
            { cause: err, details: { limit_bytes: err.limit } },
          )
        : new AppError('payload_too_large', 'Request body is too large', { cause: err });
    case 'charset.unsupported':
      return new AppError(
        'unsupported_media_type',
        'Send the body as UTF-8 JSON (Content-Type: application/json; charset=utf-8)',
        { cause: err },
      );
    case 'encoding.unsupported':
      return new AppError(
        'unsupported_media_type',
        'Unsupported Content-Encoding: send the body uncompressed, or as gzip, deflate or br',
        { cause: err },
      );
    case 'request.aborted':
    case 'request.size.invalid':
      return new AppError('invalid_request', 'Request body was incomplete', { cause: err });
    default:
      return undefined;
  }
}

/**
 * Client errors that Express itself raises with an http-errors style `status` (no `type`): the router
 * throws a `URIError` with status 400 when a path parameter is not valid percent-encoding (`/jobs/%`).
 */
function fromHttpError(err: unknown): AppError | undefined {
  if (!(err instanceof Error)) return undefined;
  const { status, statusCode } = err as Error & { status?: unknown; statusCode?: unknown };
  const code = typeof status === 'number' ? status : typeof statusCode === 'number' ? statusCode : undefined;
  if (code === 400 && err instanceof URIError)
    return new AppError('invalid_request', 'The URL path is not valid percent-encoding', { cause: err });
  if (code === 400) return new AppError('invalid_request', 'Invalid request', { cause: err });
  if (code === 404) return new AppError('not_found', 'Not found', { cause: err });
  if (code === 405) return new AppError('method_not_allowed', 'Method not allowed', { cause: err });
  if (code === 413) return new AppError('payload_too_large', 'Request body is too large', { cause: err });
  if (code === 415) return new AppError('unsupported_media_type', 'Unsupported media type', { cause: err });
  return undefined;
}

/** Driver adapter error kinds (Prisma 7) that mean the database cannot be used right now. */
const UNAVAILABLE_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
]);
/**
 * Error codes that mean a backing service is unreachable: Prisma's P1001 (cannot reach), P1002 (timed
 * out), P1017 (server closed the connection), P2024 (no pool connection in time); PostgreSQL's 57P01
 * (admin shutdown) and 57P03 (cannot connect now); socket errors.
 */
const UNAVAILABLE_CODES = new Set([
  'P1001',
  'P1002',
  'P1017',
  'P2024',
  '57P01',
  '57P03',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);
/** Messages of node-postgres errors that carry no code. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Can't reach database server/;

/**
 * Whether `err` (or one of its causes) says a backing service (PostgreSQL, usually) is unreachable,
 * rather than that the request or our code is wrong: such failures are answered 503 with `Retry-After`.
 * @param err anything caught
 */
export function isDependencyUnavailable(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const e = current as {
      code?: unknown;
      message?: unknown;
      meta?: { driverAdapterError?: { cause?: { kind?: unknown } } };
      cause?: unknown;
    };
    if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
    const kind = e.meta?.driverAdapterError?.cause?.kind;
    if (typeof kind === 'string' && UNAVAILABLE_KINDS.has(kind)) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return true;
    current = e.cause;
  }
  return false;
}

/** Seconds a client is asked to wait when a backing service is unavailable. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = '5';

/**
 * Any error as the {@link AppError} its answer is made of: AppErrors as they are (logged when 5xx);
 * body-parser errors as
 * 400/413/415; Express's own client errors (a path parameter that is not valid percent-encoding: 400)
 * with their 4xx status; a backing service that cannot be reached ({@link isDependencyUnavailable})
 * as `503 service_unavailable` with `Retry-After: 5` (seconds), logged as a warning; anything else as
 * `500 internal_error`, logged. Shared by {@link errorHandler} and the MCP endpoint's tool errors.
 * @param err anything caught
 * @param logger where unexpected errors are logged
 * @param requestId logged with them
 */
export function toAppError(err: unknown, logger: ErrorLogger, requestId: string): AppError {
  if (isAppError(err)) {
    if (err.status >= 500) logger.error({ err: err.cause ?? err, requestId }, err.message);
    return err;
  }
  const clientError = (isBodyParserError(err) ? fromBodyParser(err) : undefined) ?? fromHttpError(err);
  if (clientError) return clientError;
  if (!isBodyParserError(err) && isDependencyUnavailable(err)) {
    logger.warn({ err, requestId }, 'backing service unavailable');
    return new AppError('service_unavailable', 'A backing service is unavailable; retry later', {
      cause: err,
      headers: { 'Retry-After': UNAVAILABLE_RETRY_AFTER_SECONDS },
    });
  }
  const appError = internal(err);
  logger.error({ err, requestId }, appError.message);
  return appError;
}

/**
 * The last middleware of every app: turns any error into the envelope, as {@link toAppError} maps
 * (and logs) it.
 * @param logger where unexpected errors are logged
 */
export function errorHandler(logger: ErrorLogger): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    sendAppError(req, res, toAppError(err, logger, requestIdOf(req)));
  };
}

function internal(cause: unknown): AppError {
  return new AppError('internal_error', 'Internal server error', { cause });
}
