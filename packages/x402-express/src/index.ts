// @repo/x402-express — the Express adapter of x402 (README "@repo/x402-express"): the middleware that
// answers 402 with both offers, parses the payment header, claims and verifies or settles the payment
// through the ledger, stores and replays answers, and maps verification outcomes to HTTP.
export { sendPaymentRequired, networkOfRequest, resourceUrlOf, publicBaseOf } from './request';
export { receiptKeysHandler } from './receipts';
export { processPayment, verificationErrorToAppError, RETRY_AFTER_SECONDS } from './process';
export type { ProcessPaymentInput, ProcessPaymentResult } from './process';
export { requirePayment, acceptPayment } from './accept';
export {
  requirementsForRequest,
  endpointOf,
  offeredRequirements,
  paymentRequiredHeader,
} from './requirements';
export type { OfferV2 } from './requirements';
export { sendPaymentError, sendStoredResponse } from './responses';
export { recordPaymentSighting, VERIFIED_MARK_DELAY_MS } from './sightings';
export type {
  PaymentGateway,
  PaidRoute,
  RequirePaymentOptions,
  AcceptPaymentOptions,
  AcceptedPayment,
  PaidRequestLocals,
  PaidAnswer,
  AnswerStoredListener,
  SettlementGuard,
  SettlementLimit,
  VerificationGuard,
  VerificationAttempt,
} from './gateway';
export { emitPaymentEvent } from './events';
export type { PaymentEvent, PaymentEventListener } from './events';
export { createHotPath } from './hot-path';
export type { HotPath, HotPathOptions, HotRoute } from './hot-path';
export {
  MCP_PAYMENT_META,
  MCP_SIGN_IN_META,
  MCP_PAYMENT_MISSING,
  MCP_PAYMENT_RESPONSE_META,
  MCP_PUSH_PAYMENT_REQUIRED_META,
  MCP_PAYMENT_ERROR_META,
  mcpPaymentHeaders,
  mcpResultOfPaidAnswer,
} from './mcp';
export type { McpPaidAnswer } from './mcp';
export { mcpBazaarExtensions } from './discovery';
export type { McpToolDiscovery } from './discovery';
export {
  SIGN_IN_HEADER,
  SIGN_IN_CHALLENGE_SECONDS,
  signInChallenge,
  signInOriginOf,
  signedInAccess,
  verifySignIn,
  requirePayerSignIn,
} from './sign-in';
export type { SignInGuard, SignInLimit, SignInWithX, SignedIn, SignedInAccess } from './sign-in';
