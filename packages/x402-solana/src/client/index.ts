// @repo/x402-solana/client — the paying side of x402 on Solana (docs/payments.md "Paying for data (x402)" and
// "Paying with an official x402 client"): push mode and the official exact SVM scheme.
export { payForRequirements, checkTokenFunds, connectionFor, isUnreachable } from './pay';
export type { PayForRequirementsInput, CheckTokenFundsInput } from './pay';
export {
  createOfficialPayment,
  decodePaymentRequired,
  decodeSettleResponse,
  officialOfferOf,
  PaymentRequiredHeader,
} from './official';
export type { CreateOfficialPaymentInput, OfficialPayment } from './official';
export { fetchWithPayment } from './fetch';
export type { FetchWithPaymentOptions, FetchWithPaymentResult, PaymentMade, PaymentMode } from './fetch';
export { DEFAULT_MAX_AMOUNT_ATOMIC, USDC_DECIMALS, formatAtomic, parseUsdc } from './amounts';
export {
  X402ClientError,
  InsufficientFundsError,
  RpcUnreachableError,
  PaymentConfirmationError,
  PaymentRefusedError,
  SpendCapExceededError,
} from './errors';
export type { InsufficientFundsKind, PaymentRefusalDetails } from './errors';
export { encodePaymentHeader, decodePaymentResponse } from '@repo/x402-core';
