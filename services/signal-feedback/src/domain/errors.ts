import { defineErrorCodes } from '@repo/errors';

/**
 * The error codes only signal-feedback answers with (README, "Endpoints"), beside the shared ones of
 * `@repo/errors`: thrown as `new AppError(SIGNAL_FEEDBACK_ERRORS.csrf_failed, message)`.
 * - `csrf_failed` (403): a cookie-authenticated write without the session's CSRF token, or from
 *   another origin;
 * - `product_limit_reached` (403): the plan's product limit is reached;
 * - `invalid_transition` (409): a proposal status change the state machine does not allow;
 * - `proposal_not_approved` (409): a deployment recorded for a proposal that is not approved;
 * - `quota_exceeded` (429, with Retry-After when waiting for the reset helps): the batch would cross the
 *   plan's monthly signal quota (the message says to split it or upgrade, see `signalQuotaError`), or a
 *   deployment the plan's monthly deployment limit.
 */
export const SIGNAL_FEEDBACK_ERRORS = defineErrorCodes({
  csrf_failed: 403,
  product_limit_reached: 403,
  invalid_transition: 409,
  proposal_not_approved: 409,
  quota_exceeded: 429,
});
