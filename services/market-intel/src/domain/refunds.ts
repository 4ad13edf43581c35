import type { JobErrorCode } from '@repo/compute';

/**
 * Which failures of a paid compute job are refunded (README, "Refunds"): those on our side. Every code
 * must be classified here, so a new failure cannot be added without deciding whether it is refunded.
 * None is caused by the request itself today: bodies are validated (422) before any payment is asked.
 */
export const REFUNDED_JOB_FAILURES: Readonly<Record<JobErrorCode, boolean>> = {
  llm_unavailable: true,
  llm_config: true,
  // The model refused a prompt we built from a body that passed validation: still our side.
  llm_request: true,
  llm_output: true,
  search_unavailable: true,
  search_config: true,
  invalid_step: true,
  internal: true,
  delivery_limit: true,
  stalled: true,
};

/** The reason a refund of a job failed with `code` records (`x402_refunds.reason`). */
export function refundReason(code: JobErrorCode): string {
  return `job_failed:${code}`;
}
