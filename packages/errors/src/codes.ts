/**
 * The machine-readable error codes every service may answer with, carried in the `code` field of the
 * error envelope, each with the HTTP status it is answered with; a code only one service answers with
 * is declared by that service ({@link defineErrorCodes}). Shared by every service (docs/architecture.md,
 * "Runtime": one error envelope, `@repo/errors`).
 */
export const ERROR_CODES = {
  /** The request body is not valid JSON. */
  invalid_json: 400,
  /**
   * Query, path or body failed validation, or names a parameter or field the operation does not
   * know: 400, or 422 where a spec names it (market-intel's compute bodies), with `details.issues`
   * (docs/architecture.md, "One error dialect").
   */
  invalid_request: 400,
  /** X-PAYMENT is present but not a valid x402 payment header. */
  invalid_payment_header: 400,
  /**
   * The payment proof was already used for another endpoint, or another request of this one (docs/payments.md,
   * "Paying with our client" and "Request-bound payments").
   */
  payment_reused: 400,
  /** The transaction pays a different amount than required (docs/payments.md, "Paying with our client"). */
  amount_mismatch: 400,
  /** The transaction transfers a different mint than advertised (docs/payments.md, "Paying with our client"). */
  mint_mismatch: 400,
  /** Payment missing or not acceptable: the answer is an Error402 body. */
  payment_required: 402,
  /** The payment proof was already used on an asynchronous endpoint: it paid for a job already. */
  payment_conflict: 409,
  /**
   * The x402 `payment-identifier` id was already used by this payer for another request (another
   * endpoint, network, query or body): a new request needs a new identifier (docs/payments.md,
   * "Retrying safely: payment identifiers").
   */
  payment_identifier_conflict: 409,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
} as const satisfies Record<string, number>;

/** One of {@link ERROR_CODES}' keys, e.g. `"invalid_request"`. */
export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * An error code that belongs to one service, declared by that service with {@link defineErrorCodes}
 * (e.g. signal-feedback's `csrf_failed`, 403) and thrown as `new AppError(CODES.csrf_failed, ...)`.
 */
export interface ServiceErrorCode<C extends string = string> {
  /** The snake_case code sent in the envelope's `code`. */
  readonly code: C;
  /** The HTTP status answered with it, 400–599. */
  readonly status: number;
}

/**
 * Declares the error codes only one service answers with, so that the shared list stays the codes
 * every service may answer.
 * @param codes snake_case code -> HTTP status (400–599)
 * @returns one {@link ServiceErrorCode} per code, to pass to `AppError`
 * @throws Error when a code is not snake_case, its status is outside 400–599, or it is a shared code
 */
export function defineErrorCodes<const T extends Record<string, number>>(
  codes: T,
): { readonly [K in keyof T & string]: ServiceErrorCode<K> } {
  const out: Record<string, ServiceErrorCode> = {};
  for (const [code, status] of Object.entries(codes)) {
    if (!/^[a-z][a-z0-9_]*$/.test(code)) throw new Error(`error code "${code}" is not snake_case`);
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new Error(`error code "${code}" has status ${status}, not 400–599`);
    }
    if (code in ERROR_CODES) throw new Error(`error code "${code}" is already a shared code`);
    out[code] = Object.freeze({ code, status });
  }
  return Object.freeze(out) as { readonly [K in keyof T & string]: ServiceErrorCode<K> };
}

/**
 * The HTTP status answered for a code.
 * @param code an {@link ErrorCode}
 * @returns the status, 400–599
 */
export function statusForCode(code: ErrorCode): number {
  return ERROR_CODES[code];
}
