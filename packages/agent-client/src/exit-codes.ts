/** Exit codes of `agent-pay` (packages/agent-client/README.md, "Exit codes"). */
export const EXIT = {
  ok: 0,
  httpError: 1,
  usage: 2,
  insufficientFunds: 3,
  rpcUnreachable: 4,
  paymentFailed: 5,
  urlUnreachable: 6,
  /** `--wait`: the job failed, or could not be followed to its end. */
  jobFailed: 7,
  /** `verify-receipt`: the receipt does not check (signature, key, body). */
  receiptInvalid: 8,
} as const;
