import { z } from 'zod';

/** x402 networks this project settles on, as `PaymentRequirements.network` (README, "What runs where"). */
export const X402Network = z.enum(['solana', 'solana-devnet']);
/** `"solana"` (main network) or `"solana-devnet"` (test network). */
export type X402Network = z.infer<typeof X402Network>;

/** A decimal string of atomic token units (USDC has 6 decimals: `"100000"` is 0.10 USDC). */
export const AtomicAmount = z.string().regex(/^(0|[1-9][0-9]*)$/, 'must be a non-negative integer string');

/** Base58 alphabet (no 0, O, I, l). */
export const Base58 = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]+$/, 'must be base58');

/**
 * One way to pay for a resource: an element of `accepts` in a 402 body (docs/payments.md,
 * "Paying for data (x402)"). Amounts are atomic USDC units as strings; `maxTimeoutSeconds` is in
 * seconds.
 */
export const PaymentRequirements = z.object({
  scheme: z.literal('exact'),
  network: X402Network,
  maxAmountRequired: AtomicAmount,
  asset: Base58.describe('USDC mint address'),
  payTo: Base58.describe('merchant USDC associated token account'),
  resource: z.string().url(),
  description: z.string(),
  mimeType: z.string(),
  maxTimeoutSeconds: z.number().int().positive(),
  /**
   * x402 v1 discovery metadata (optional in the protocol, an addition to the fields above; docs/payments.md,
   * "Discovery"): how to call the resource (`input`: method, query parameters or body fields) and the
   * JSON Schema of its answer.
   */
  outputSchema: z.record(z.string(), z.unknown()).optional(),
  /** Scheme-specific extra fields (optional in the x402 protocol). */
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type PaymentRequirements = z.infer<typeof PaymentRequirements>;

/**
 * The body of an HTTP 402 (services/market-intel/README.md, "Paying, in three steps"): exactly
 * `x402Version`, `accepts`, `error`, plus the error envelope's optional `code`, `requestId` and
 * `details` (services/market-intel/README.md, "Endpoints"); the x402 package puts `{ reason }` in
 * `details` when a payment proof was refused (packages/x402-solana/README.md, "Verification order").
 */
export const Error402 = z.object({
  x402Version: z.literal(1),
  accepts: z.array(PaymentRequirements),
  error: z.string(),
  code: z.string().optional(),
  details: z.record(z.string(), z.unknown()).optional(),
  requestId: z.string().optional(),
});
export type Error402 = z.infer<typeof Error402>;

/**
 * The decoded `X-PAYMENT` header (docs/payments.md, "Paying for data (x402)"): version 1, scheme `exact`, the
 * network, and the base58 signature of the paying transaction.
 */
export const PaymentPayload = z.object({
  x402Version: z.literal(1),
  scheme: z.literal('exact'),
  network: X402Network,
  payload: z.object({ txSignature: Base58 }).passthrough(),
});
export type PaymentPayload = z.infer<typeof PaymentPayload>;

/**
 * The decoded `X-PAYMENT-RESPONSE` header set on a paid answer (base64 JSON): whether settlement
 * succeeded, the transaction signature, the network and the payer (the transfer authority).
 */
export const PaymentResponse = z.object({
  success: z.boolean(),
  transaction: Base58,
  network: X402Network,
  payer: Base58,
  /** Extension data, e.g. the signed receipt of x402 `offer-receipt` (`extensions["offer-receipt"].info.receipt`). */
  extensions: z.record(z.string(), z.unknown()).optional(),
});
export type PaymentResponse = z.infer<typeof PaymentResponse>;
