import { type ErrorCode, type ServiceErrorCode, statusForCode } from './codes';

/** Options accepted by {@link AppError}'s constructor. */
export interface AppErrorOptions {
  /** Extra machine-readable detail sent as `details` in the envelope (field errors, a job id...). */
  details?: unknown;
  /** The underlying error, kept for logs and never sent to the client. */
  cause?: unknown;
  /** Overrides the status implied by the code (rarely needed). */
  status?: number;
  /** Response headers to set with the error, e.g. `{ 'Retry-After': '30' }`. */
  headers?: Record<string, string>;
}

/**
 * The one error type our code throws on purpose. The error middleware turns it into the envelope
 * `{ error, code, details?, requestId }` with {@link AppError.status}.
 */
export class AppError extends Error {
  /** The error code: a shared one, e.g. `"not_found"`, or one a service declared. */
  readonly code: ErrorCode | (string & {});
  /** The HTTP status, 400–599. */
  readonly status: number;
  /** Optional detail sent to the client. */
  readonly details: unknown;
  /** Extra response headers. */
  readonly headers: Record<string, string>;

  /**
   * @param code a shared error code, or one the service declared with `defineErrorCodes`; it
   *   determines the status unless `options.status` is given
   * @param message a human-readable message (sent to clients for 4xx; 5xx messages are generic)
   */
  constructor(code: ErrorCode | ServiceErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = typeof code === 'string' ? code : code.code;
    this.status = options.status ?? (typeof code === 'string' ? statusForCode(code) : code.status);
    this.details = options.details;
    this.headers = options.headers ?? {};
  }

  /** `true` for a 5xx error, whose message is replaced by a generic one on the wire. */
  get isServerError(): boolean {
    return this.status >= 500;
  }
}

/**
 * Type guard for {@link AppError}, also across duplicated module instances.
 * @param value anything caught
 */
export function isAppError(value: unknown): value is AppError {
  return (
    value instanceof AppError || (value instanceof Error && value.name === 'AppError' && 'code' in value)
  );
}

/**
 * A 404 `not_found` saying `"<What> not found"` (`notFound('job')`: `"Job not found"`).
 * @param what the thing that was not found, e.g. `"job"`, without "unknown" (the message says it)
 */
export function notFound(what: string): AppError {
  return new AppError('not_found', `${what.charAt(0).toUpperCase()}${what.slice(1)} not found`);
}
