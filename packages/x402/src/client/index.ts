// @repo/x402/client — the paying side of x402 on Solana (market-intel spec, "Authentication").
export { payForRequirements, connectionFor, isUnreachable } from './pay';
export type { PayForRequirementsInput } from './pay';
export { fetchWithPayment } from './fetch';
export type { FetchWithPaymentOptions, FetchWithPaymentResult } from './fetch';
export {
  X402ClientError,
  InsufficientFundsError,
  RpcUnreachableError,
  PaymentConfirmationError,
  PaymentRefusedError,
} from './errors';
export type { InsufficientFundsKind } from './errors';
export { encodePaymentHeader, decodePaymentResponse } from '../header';
