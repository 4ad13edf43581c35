// @repo/agent-client — the `agent-pay` command as a library (for tests and scripts).
export { runAgentPay, EXIT } from './run';
export type { AgentPayIo } from './run';
export {
  parseAgentPayArgs,
  loadKeypair,
  UsageError,
  USAGE,
  DEFAULT_RPC_URL,
  DEFAULT_DEVNET_RPC_URL,
  LOCAL_AGENT_KEYPAIR,
} from './options';
export type { AgentPayOptions } from './options';
