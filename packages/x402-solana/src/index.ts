// @repo/x402-solana — x402 on Solana (README "@repo/x402-solana"): the push-mode verifier and its RPC
// client, the official exact SVM scheme's settlement (`ExactSvmSettler`), and the SPL token
// helpers both use. The paying side is `@repo/x402-solana/client`.
export { SolanaPaymentVerifier, resolveAccountKeys, findTransfersChecked, balanceDelta } from './verifier';
export type { SolanaPaymentVerifierConfig, SolanaPaymentVerifierOptions, RpcCallEvent } from './verifier';
export { createCircuitBreaker } from './circuit-breaker';
export type { CircuitBreaker, CircuitBreakerOptions } from './circuit-breaker';
export { RpcResponseError } from './rpc-client';
export type { RpcTransaction, RpcInstruction, RpcTokenBalance, RpcSignatureStatus } from './rpc-client';
export { SignatureStatusPoller } from './settlement-signer';
export type { ConfirmationOptions } from './settlement-signer';
export { RpcTransportError } from './rpc-fetch';
export { TOKEN_PROGRAM_ADDRESS, TOKEN_2022_PROGRAM_ADDRESS, decodeTransferChecked } from './transfers';
export type { TransferChecked, RawInstruction } from './transfers';
export {
  ExactSvmSettler,
  SettlementRefusedError,
  parseKeypairJson,
  associatedTokenAccountOf,
} from './exact-svm';
export type { ExactSvmSettlerConfig, SettlementKey, SettlementOutcome } from './exact-svm';
export { RefundSender, RefundSendError } from './refund';
export type {
  RefundSenderConfig,
  RefundOrder,
  SignedRefund,
  RefundState,
  RefundBuild,
  UnclaimableReason,
} from './refund';
