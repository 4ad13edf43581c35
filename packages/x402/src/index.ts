// @repo/x402 — x402 payments on Solana (ARCHITECTURE.md, "Payments: x402 on Solana (packages/x402)").
// Server side here; the paying client is also exported from "@repo/x402/client".
export {
  X402_VERSION,
  X402_VERSION_HEADER,
  DEFAULT_MAX_TIMEOUT_SECONDS,
  buildPaymentRequirements,
  paymentRequiredBody,
  sendPaymentRequired,
  networkOfRequest,
  resourceUrlOf,
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
export {
  SolanaPaymentVerifier,
  PaymentVerificationError,
  isPaymentVerificationError,
  PAYMENT_VERIFICATION_REASONS,
  resolveAccountKeys,
  findTransfersChecked,
  balanceDelta,
} from './verifier';
export type {
  PaymentVerificationReason,
  VerifiedPayment,
  PaymentVerifier,
  SolanaPaymentVerifierConfig,
  SolanaPaymentVerifierOptions,
} from './verifier';
export { RpcResponseError } from './rpc-client';
export type { RpcTransaction, RpcInstruction, RpcTokenBalance } from './rpc-client';
export { RpcTransportError } from './rpc-fetch';
export { TOKEN_PROGRAM_ADDRESS, TOKEN_2022_PROGRAM_ADDRESS, decodeTransferChecked } from './transfers';
export type { TransferChecked, RawInstruction } from './transfers';
export { PrismaPaymentLedger, X402_PAYMENTS_TABLE, X402_PAYMENT_PRISMA_MODEL } from './ledger';
export type {
  SqlClient,
  PaymentKind,
  PaymentStatus,
  StoredResponse,
  PaymentRecord,
  ClaimRequest,
  PaymentClaim,
  ClaimOutcome,
  PaymentLedger,
  PaymentLedgerOptions,
} from './ledger';
export { parsePaymentProof } from './proof';
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
export type { PaymentRequiredV2, ResourceInfoV2, SettleResponseV2 } from './v2';
export {
  ExactSvmSettler,
  SettlementRefusedError,
  parseKeypairJson,
  associatedTokenAccountOf,
} from './exact-svm';
export type { ExactSvmSettlerConfig, SettlementOutcome } from './exact-svm';
export { processPayment, verificationErrorToAppError, RETRY_AFTER_SECONDS } from './process';
export type { ProcessPaymentInput, ProcessPaymentResult } from './process';
export {
  requirePayment,
  acceptPayment,
  requirementsForRequest,
  endpointOf,
  sendPaymentError,
  sendStoredResponse,
  paymentRequiredHeader,
} from './middleware';
export type {
  PaymentGateway,
  PaidRoute,
  RequirePaymentOptions,
  AcceptPaymentOptions,
  AcceptedPayment,
  PaidRequestLocals,
  OfferV2,
  SettlementGuard,
} from './middleware';
export { emitPaymentEvent } from './events';
export type { PaymentEvent, PaymentEventListener } from './events';
export {
  payForRequirements,
  fetchWithPayment,
  X402ClientError,
  InsufficientFundsError,
  RpcUnreachableError,
  PaymentConfirmationError,
  PaymentRefusedError,
  SpendCapExceededError,
  DEFAULT_MAX_AMOUNT_ATOMIC,
} from './client/index';
export type {
  PayForRequirementsInput,
  FetchWithPaymentOptions,
  FetchWithPaymentResult,
  PaymentMade,
  PaymentMode,
} from './client/index';
