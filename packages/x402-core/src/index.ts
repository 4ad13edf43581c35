// @repo/x402-core — the x402 protocol, knowing nothing of Solana, PostgreSQL or Express (README
// "@repo/x402-core"): payment requirements and the 402 body, the v1 and v2 payment headers and payloads,
// the settlement response, and the typed outcome of a verification.
export {
  X402_VERSION,
  X402_VERSION_HEADER,
  DEFAULT_MAX_TIMEOUT_SECONDS,
  buildPaymentRequirements,
  paymentRequiredBody,
} from './requirements';
export type { BuildPaymentRequirementsInput } from './requirements';
export {
  PAYMENT_HEADER,
  PAYMENT_RESPONSE_HEADER,
  parsePaymentHeader,
  encodePaymentHeader,
  encodePaymentResponse,
  decodePaymentResponse,
} from './header';
export type { PaymentHeaderReason } from './header';
export { v1OutputSchema, discoveryFields } from './discovery';
export type { ResourceDiscovery, JsonSchemaObject, QueryMethod, BodyMethod } from './discovery';
export { parsePaymentProof, PaymentHeaderJson } from './proof';
export type { PaymentProof } from './proof';
export {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
  CAIP2_NETWORKS,
  networkOfCaip2,
  encodeBase64Json,
  PaymentRequirementsV2,
  PaymentPayloadV2,
} from './v2';
export { PaymentRequiredV2, ResourceInfoV2, SettleResponseV2, SignInWithXProof } from './v2';
export {
  PaymentVerificationError,
  isPaymentVerificationError,
  PAYMENT_VERIFICATION_REASONS,
} from './verification';
export type {
  PaymentVerificationReason,
  VerifiedPayment,
  PaymentVerifier,
  VerifyOptions,
} from './verification';
export { canonicalRequestText, requestHash, requestReference, sha256Hex } from './reference';
export type { CanonicalRequest } from './reference';
