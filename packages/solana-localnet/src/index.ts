export { startLocalnet, rpcUrlFor, formatLocalnetAddresses } from './server';
export type { Localnet, LocalnetOptions, LocalnetNetworkInfo } from './server';
export { spawnLocalnet } from './spawn';
export type { SpawnLocalnetOptions } from './spawn';
export {
  LOCALNET_NETWORKS,
  USDC_DECIMALS,
  DEFAULT_FUND_USDC_ATOMIC,
  DEFAULT_FUND_LAMPORTS,
  LAMPORTS_PER_SIGNATURE,
  BLOCK_INTERVAL_MS,
  BLOCKHASH_VALIDITY_BLOCKS,
  CAIP2_NETWORK,
  FEE_PAYER_LAMPORTS,
  REFUND_WALLET_USDC_ATOMIC,
  REFUND_WALLET_LAMPORTS,
} from './ledger';
export type { LocalnetNetwork, FundResult } from './ledger';
export type { RpcTransactionMeta, RpcTokenBalance } from './tx-record';
export {
  callRpc,
  fundWallet,
  getLocalnetInfo,
  waitForSignature,
  sendUsdcTransfer,
  createTestMint,
  mintTestTokens,
  createLookupTable,
  deactivateLookupTable,
  lookupTableAccount,
} from './client';
export type { LocalnetRpcInfo, UsdcTransferArgs } from './client';
export { signedPayment, payUsdc } from './test-payments';
// For tests that build their own (often deliberately wrong) token transfers.
export { bs58, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from './deps';
export type { TestPaymentOverrides } from './test-payments';
export { RpcError, RpcErrorCode } from './rpc-error';
export type { RpcTransactionError } from './rpc-error';
export { RPC_METHODS } from './rpc';
export { parseUsdcAmount, formatUsdcAmount } from './amounts';
