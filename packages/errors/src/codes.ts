/**
 * The closed set of machine-readable error codes carried in the `code` field of the error envelope,
 * each with the HTTP status it is answered with. Shared by every service (docs/architecture.md,
 * "Runtime": one error envelope, `@repo/errors`).
 */
export const ERROR_CODES = {
  /** The request body is not valid JSON. */
  invalid_json: 400,
  /** Query, path or body failed validation (market-intel's compute requests use 422 `validation_failed`). */
  invalid_request: 400,
  /** A compute request body failed validation: 422, nothing charged (README, "What runs where"). */
  validation_failed: 422,
  /** X-PAYMENT is present but not a valid x402 payment header. */
  invalid_payment_header: 400,
  /** The payment proof was already used for another endpoint (README, "Paying with our client"). */
  payment_reused: 400,
  /** The transaction pays a different amount than required (README, "Paying with our client"). */
  amount_mismatch: 400,
  /** The transaction transfers a different mint than advertised (README, "Paying with our client"). */
  mint_mismatch: 400,
  /** Payment missing or not acceptable: the answer is an Error402 body. */
  payment_required: 402,
  /** The payment proof was already used on an asynchronous endpoint: it paid for a job already. */
  payment_conflict: 409,
  unauthorized: 401,
  forbidden: 403,
  /** A cookie-authenticated write without the session's CSRF token, or from another origin (signal-feedback). */
  csrf_failed: 403,
  /** The plan's product limit is reached (services/signal-feedback/README.md, "Endpoints"). */
  product_limit_reached: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  /** A status change the state machine does not allow (signal-feedback proposals). */
  invalid_transition: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
} as const satisfies Record<string, number>;

/** One of {@link ERROR_CODES}' keys, e.g. `"invalid_request"`. */
export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The HTTP status answered for a code.
 * @param code an {@link ErrorCode}
 * @returns the status, 400–599
 */
export function statusForCode(code: ErrorCode): number {
  return ERROR_CODES[code];
}
