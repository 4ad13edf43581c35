// @repo/agent-client — the `agent-pay` command as a library (for tests and scripts).
export { runAgentPay, EXIT } from './run';
export type { AgentPayIo } from './run';
export {
  parseAgentPayArgs,
  UsageError,
  USAGE,
  DEFAULT_RPC_URL,
  DEFAULT_DEVNET_RPC_URL,
  LOCAL_AGENT_KEYPAIR,
} from './options';
export type { AgentPayOptions, VerifyReceiptOptions } from './options';
export { loadKeypair } from './keypair';
export { describeShortfall, isLocalLedger } from './funds';
export type { PaymentNetwork, Shortfall, ShortfallInput } from './funds';
export { DEFAULT_MAX_AMOUNT_ATOMIC, formatUsdc, parseUsdc, usdcArgument } from './usdc';
