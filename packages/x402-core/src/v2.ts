import { z } from 'zod';
import type { X402Network } from '@repo/schemas';

/**
 * x402 version 2 on the wire (the official `@x402/core` types; docs/payments.md, "Paying with an official x402
 * client"): CAIP-2 network ids, the `PAYMENT-REQUIRED`, `PAYMENT-SIGNATURE` and
 * `PAYMENT-RESPONSE` headers, and the shapes they carry. Nothing here knows Solana.
 */

/** Response header of a 402 carrying base64 JSON of a {@link PaymentRequiredV2}. */
export const PAYMENT_REQUIRED_HEADER = 'payment-required';
/** Request header carrying base64 JSON of a {@link PaymentPayloadV2} (the v2 name of `X-PAYMENT`). */
export const PAYMENT_SIGNATURE_HEADER = 'payment-signature';
/** Response header of a paid answer carrying base64 JSON of a {@link SettleResponseV2}. */
export const PAYMENT_V2_RESPONSE_HEADER = 'payment-response';

/** The CAIP-2 id of each network (genesis hash prefix), as the official clients name them. */
export const CAIP2_NETWORKS: Readonly<Record<X402Network, string>> = {
  solana: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  'solana-devnet': 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
};

/**
 * The network of a CAIP-2 id, or of a v1 name.
 * @returns `undefined` for any network this project does not settle on
 */
export function networkOfCaip2(id: string): X402Network | undefined {
  for (const [network, caip2] of Object.entries(CAIP2_NETWORKS) as [X402Network, string][])
    if (caip2 === id || network === id) return network;
  return undefined;
}

const NonEmpty = z.string().min(1);

/**
 * The `extensions` of a 402, of a payment and of its settlement (x402 v2): each extension's data
 * under its name, such as `payment-identifier`, `offer-receipt` or `sign-in-with-x`; the extensions
 * this project reads are checked where they are read.
 */
const Extensions = z.record(z.string(), z.unknown());

/**
 * One v2 way to pay (`accepts[i]` of a {@link PaymentRequiredV2}, and `accepted` of a payload):
 * `amount` is atomic units as a decimal string, `payTo` the recipient wallet (its associated token
 * account receives the transfer), `maxTimeoutSeconds` in seconds, `extra.feePayer` the wallet that
 * pays the network fee for the exact SVM scheme.
 */
export const PaymentRequirementsV2 = z.object({
  scheme: NonEmpty,
  network: NonEmpty,
  amount: z.string().regex(/^(0|[1-9][0-9]*)$/, 'must be a non-negative integer string'),
  asset: NonEmpty,
  payTo: NonEmpty,
  maxTimeoutSeconds: z.number().positive(),
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type PaymentRequirementsV2 = z.infer<typeof PaymentRequirementsV2>;

/** What a v2 payment pays for: the resource URL, its description and MIME type. */
export const ResourceInfoV2 = z.object({
  url: z.string(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
});
export type ResourceInfoV2 = z.infer<typeof ResourceInfoV2>;

/**
 * The decoded `PAYMENT-REQUIRED` header of a 402, and the structured content of an MCP tool's
 * payment-required result (the x402 MCP transport).
 */
export const PaymentRequiredV2 = z.object({
  x402Version: z.literal(2),
  error: z.string().optional(),
  resource: ResourceInfoV2,
  accepts: z.array(PaymentRequirementsV2),
  extensions: Extensions.optional(),
});
export type PaymentRequiredV2 = z.infer<typeof PaymentRequiredV2>;

/** The decoded `PAYMENT-SIGNATURE` (or `X-PAYMENT`) header of a v2 payment. */
export const PaymentPayloadV2 = z.object({
  x402Version: z.literal(2),
  resource: z.object({ url: z.string() }).passthrough().nullish(),
  accepted: PaymentRequirementsV2,
  payload: z.record(z.string(), z.unknown()),
  extensions: Extensions.nullish(),
});
export type PaymentPayloadV2 = z.infer<typeof PaymentPayloadV2>;

/**
 * The decoded `PAYMENT-RESPONSE` header: whether settlement succeeded, the base58 signature of the
 * settled transaction (of the one that was to be settled, when it failed), the CAIP-2 `network`, the
 * payer (the transfer authority, base58; absent when unknown) and, when it failed or is still
 * pending, `errorReason` (a code such as `transaction_failed` or `settlement_pending`) and
 * `errorMessage`.
 */
export const SettleResponseV2 = z.object({
  success: z.boolean(),
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  transaction: z.string(),
  network: z.string(),
  payer: z.string().optional(),
  /**
   * Extension data of the settlement, e.g. the signed receipt of x402 `offer-receipt`
   * (`extensions["offer-receipt"].info.receipt`: docs/payments.md, "Signed offers and receipts").
   */
  extensions: Extensions.optional(),
});
export type SettleResponseV2 = z.infer<typeof SettleResponseV2>;

/**
 * The decoded `SIGN-IN-WITH-X` request header (x402 v2 `sign-in-with-x` extension, "Client Request"):
 * the 402's challenge (`domain`, `uri`, `version`, `nonce`, `issuedAt`, `expirationTime`, ...) as
 * signed, with the CAIP-2 `chainId`, the signature `type` (`ed25519` on Solana), the signing wallet's
 * `address` (base58 on Solana) and its `signature` of the CAIP-122 message (base58 on Solana). Times
 * are ISO 8601. Documents the header (docs/payments.md, "Signing in instead of paying again"); the
 * proof is parsed and checked with the extension's own functions.
 */
export const SignInWithXProof = z.object({
  domain: NonEmpty,
  address: NonEmpty,
  statement: z.string().optional(),
  uri: NonEmpty,
  version: NonEmpty,
  chainId: NonEmpty,
  type: z.enum(['eip191', 'ed25519']),
  nonce: NonEmpty,
  issuedAt: NonEmpty,
  expirationTime: z.string().optional(),
  notBefore: z.string().optional(),
  requestId: z.string().optional(),
  resources: z.array(z.string()).optional(),
  signatureScheme: z.enum(['eip191', 'eip1271', 'eip6492', 'siws']).optional(),
  signature: NonEmpty,
});
export type SignInWithXProof = z.infer<typeof SignInWithXProof>;

/** Base64 of the JSON of `value` (every x402 header's encoding). */
export function encodeBase64Json(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}
