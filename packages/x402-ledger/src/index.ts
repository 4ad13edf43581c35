// @repo/x402-ledger — the PostgreSQL payment ledger (README "@repo/x402-ledger"): one row per payment
// signature, claimed before any network call, holding the stored answer that a replay returns.
export { PoolSqlClient } from './pool-sql-client';
export { PrismaPaymentLedger } from './ledger';
export { X402_PAYMENTS_TABLE, X402_PAYMENT_PRISMA_MODEL } from './payments-table';
export {
  VerificationAttemptLimit,
  X402_VERIFICATION_ATTEMPTS_TABLE,
  X402_VERIFICATION_ATTEMPT_PRISMA_MODEL,
} from './attempts';
export type { AttemptCounter, CountedAttempt, VerificationAttemptLimitOptions } from './attempts';
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
} from './types';
export {
  PrismaPaymentIdentifiers,
  X402_PAYMENT_IDENTIFIERS_TABLE,
  X402_PAYMENT_IDENTIFIER_PRISMA_MODEL,
} from './identifiers';
export type { BindOutcome, IdentifierBinding, PaymentIdentifiers } from './identifiers';
export { PrismaRefundLedger, X402_REFUNDS_TABLE, X402_REFUND_PRISMA_MODEL } from './refunds';
export type { RefundStatus, RefundRecord, RefundClaim } from './refunds';
export { PrismaSignInRecords, X402_SIWX_NONCES_TABLE, X402_SIWX_NONCE_PRISMA_MODEL } from './sign-in';
export type { PaidAccess, PaidAccessQuery, SignInRecords } from './sign-in';
