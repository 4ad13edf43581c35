// @repo/x402-express — the Express adapter of x402 (README "@repo/x402-express"): the middleware that
// answers 402 with both offers, parses the payment header, claims and verifies or settles the payment
// through the ledger, stores and replays answers, and maps verification outcomes to HTTP.
export { requirePayment, acceptPayment } from './accept';
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
export { processPayment, type ProcessPaymentInput, type ProcessPaymentResult } from './process';
export { recordPaymentSighting } from './sightings';
export { receiptKeysHandler } from './receipts';
export type { PaymentEvent, PaymentEventListener } from './events';
export { createHotPath, type HotPath, type HotPathOptions, type HotRoute } from './hot-path';
export {
  MCP_PAYMENT_META,
  MCP_SIGN_IN_META,
  MCP_PAYMENT_MISSING,
  MCP_PAYMENT_ERROR_META,
  mcpPaymentHeaders,
  mcpResultOfPaidAnswer,
  type McpPaidAnswer,
} from './mcp';
export { mcpBazaarExtensions, type McpToolDiscovery } from './discovery';
export type { SignInGuard, SignInLimit, SignedInAccess } from './sign-in';
