import { type Error402, PaymentRequirements, type X402Network } from '@repo/schemas';

/** The x402 protocol version this package speaks, sent in bodies and in the `x402-version` header. */
export const X402_VERSION = 1;

/** Name of the response header carrying the protocol version (value `"1"`). */
export const X402_VERSION_HEADER = 'x402-version';

/**
 * Default advertised `maxTimeoutSeconds`, in seconds: 60, like the default of market-intel's
 * `PAYMENT_MAX_TIMEOUT_SECONDS` (README, "Configuration").
 */
export const DEFAULT_MAX_TIMEOUT_SECONDS = 60;

/** Input of {@link buildPaymentRequirements}. */
export interface BuildPaymentRequirementsInput {
  /** The network the payment must be made on. */
  network: X402Network;
  /** The USDC mint address (base58). */
  asset: string;
  /** The merchant's USDC token account (base58) that must receive the transfer. */
  payTo: string;
  /** The exact price in atomic USDC units (6 decimals: `100000n` is 0.10 USDC). Must be positive. */
  amountAtomic: bigint;
  /** Absolute URL of the resource being paid for. */
  resource: string;
  /** Human-readable description of what is sold. */
  description: string;
  /** MIME type of the paid response, e.g. `"application/json"`. */
  mimeType: string;
  /** Seconds the payer has to complete the payment; default {@link DEFAULT_MAX_TIMEOUT_SECONDS}. */
  maxTimeoutSeconds?: number;
  /** x402 v1 discovery metadata, e.g. from {@link v1OutputSchema}; omitted when absent. */
  outputSchema?: Record<string, unknown>;
  /** Scheme-specific extra fields; omitted when absent. */
  extra?: Record<string, unknown>;
}

/**
 * Builds one element of `accepts` for a 402 answer (docs/payments.md, "Paying for data (x402)", step 1):
 * scheme `exact`, `maxAmountRequired` as a decimal string of atomic units, and the protocol's optional
 * `outputSchema` and `extra` when given.
 *
 * @returns the requirements, validated against the shared zod schema
 * @throws Error when the amount is not positive or a field does not satisfy the schema (a programming
 *   or configuration error, not a client error)
 */
export function buildPaymentRequirements(input: BuildPaymentRequirementsInput): PaymentRequirements {
  if (input.amountAtomic <= 0n) throw new Error(`amountAtomic must be positive, got ${input.amountAtomic}`);
  return PaymentRequirements.parse({
    scheme: 'exact',
    network: input.network,
    maxAmountRequired: input.amountAtomic.toString(),
    asset: input.asset,
    payTo: input.payTo,
    resource: input.resource,
    description: input.description,
    mimeType: input.mimeType,
    maxTimeoutSeconds: input.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS,
    ...(input.outputSchema ? { outputSchema: input.outputSchema } : {}),
    ...(input.extra ? { extra: input.extra } : {}),
  });
}

/**
 * The body of an HTTP 402 (docs/payments.md, "Paying for data (x402)", step 1): `x402Version: 1`, `accepts`,
 * `error`, plus `code: "payment_required"` and `requestId` as every error envelope carries
 * (`{ error, code, details?, requestId }`: docs/architecture.md, "Runtime"; docs/payments.md, "Paying with our
 * client"), and `details` when given (e.g. `{ reason: "not_found" }`).
 *
 * @param accepts the ways to pay, usually one {@link buildPaymentRequirements} result
 * @param error human-readable reason why payment is required
 * @param requestId the request id
 * @param details optional machine-readable detail
 */
export function paymentRequiredBody(
  accepts: PaymentRequirements[],
  error: string,
  requestId: string,
  details?: Record<string, unknown>,
): Error402 {
  const body: Error402 = { x402Version: X402_VERSION, accepts, error, code: 'payment_required', requestId };
  if (details !== undefined) body.details = details;
  return body;
}
