// @repo/agent-client — the `agent-pay` command as a library (for tests and scripts): run it with its
// arguments and I/O, or parse its arguments, and read its exit codes. The pieces it is built from
// (keypairs, amounts, funds) stay inside the package.
export { runAgentPay, EXIT } from './run';
export type { AgentPayIo } from './run';
export { parseAgentPayArgs, UsageError, USAGE } from './options';
export type { AgentPayOptions, VerifyReceiptOptions } from './options';
