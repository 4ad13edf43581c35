import type { JobErrorCode } from '@repo/compute';
import type { JobRefund } from '@repo/schemas';
import type { PrismaRefundLedger } from '@repo/x402-ledger';

/**
 * Which failures of a paid compute job are refunded on chain (README, "Refunds"): `true` for a
 * failure the request itself cannot cause, `false` for one its own text can. Every code must be
 * classified here, so a new failure cannot be added without deciding whether it is refunded.
 *
 * Not refunded: `llm_request` (the model's endpoint refused a request of the job: a content filter
 * or a refusal of the idea or context the payer wrote, as well as a prompt too long for the model)
 * and `llm_output` (the model's answers stayed unusable after repair: what a payer gets by writing
 * instructions into the idea, or text the model refuses to discuss). A body that passes validation
 * (422 before any payment) can still contain text that makes the model refuse or answer out of
 * schema, on every attempt. With an automatic refund such a job costs its payer only the network
 * fees while we pay the LLM for every step and attempt run before it failed and the runners are
 * busy meanwhile: anyone can repeat that as often as he likes, and no per-payer limit applies on the
 * main network. Without one, a failure costs the payer the price, as a success does, so there is
 * nothing to gain by provoking it. The honest payer whose job fails with one of them (an idea a
 * filter refuses wrongly, a prompt of ours over the model's context) goes to support, which the spec
 * names for refunds of failed jobs: the operator sees the input and the job's `last_error`, and such
 * failures of our own making show up on every job and in the logs, to be fixed and refunded by hand.
 *
 * Refunded: the failures the request cannot cause (upstreams unreachable or refusing our
 * configuration, a step command we cannot run, our own errors, a job no runner started) and
 * `delivery_limit`. A dead-lettered step is most often ours (a runner crashing, an upstream down
 * through every retry), but a step whose model output stays unusable is retried (`llm_output` is not
 * a poison failure in the runner) and so ends as `delivery_limit` too: the job does not keep the code
 * of its last retried failure, so that case is refunded until it does.
 */
export const REFUNDED_JOB_FAILURES: Readonly<Record<JobErrorCode, boolean>> = {
  llm_unavailable: true,
  llm_config: true,
  // The payer's own text can make the model refuse the request: not refunded (see above).
  llm_request: false,
  // The payer's own text can make the model's answers unusable: not refunded (see above).
  llm_output: false,
  search_unavailable: true,
  search_config: true,
  invalid_step: true,
  internal: true,
  delivery_limit: true,
  stalled: true,
};

/**
 * The reason a refund of a job failed with `code` records (`x402_refunds.reason`), e.g.
 * `job_failed:llm_unavailable` (README, "Refunds").
 */
export function refundReason(code: JobErrorCode): string {
  return `job_failed:${code}`;
}

/**
 * The refund of a payment as GET /api/v1/jobs/{jobId} shows it with a failed job (README, "Refunds"):
 * the landed transaction only once confirmed, the reason only when held as unclaimable; null when the
 * payment has no refund.
 * @param ledger the refunds table
 */
export function jobRefunds(
  ledger: Pick<PrismaRefundLedger, 'forPayment'>,
): (paymentSignature: string) => Promise<JobRefund | null> {
  return async (paymentSignature) => {
    const record = await ledger.forPayment(paymentSignature);
    if (!record) return null;
    const confirmed = record.status === 'confirmed';
    return {
      status: record.status,
      amount: record.amountAtomic.toString(),
      network: record.network,
      to: record.payer,
      transaction: confirmed ? record.signature : null,
      confirmedAt: confirmed && record.confirmedAt ? record.confirmedAt.toISOString() : null,
      reason: record.status === 'unclaimable' ? record.unclaimableReason : null,
    };
  };
}
