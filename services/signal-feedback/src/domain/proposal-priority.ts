/**
 * The priority feedback of proposals (README, "Priority feedback"): a proposal's `priority_score` is
 * the analysis's score scaled by what happened to the last change of its kind, that is the latest
 * deployment (by `deployed_at`) of any proposal of the same context whose compared failing type is the
 * proposal's own most frequent failing type.
 *
 * - last change `regressed` (final verdict, or a regression the open-window monitor detected): × 0.5;
 * - last change `improved`: × 1.25, at most 100;
 * - `inconclusive`, still `pending`, or no change of its kind yet: unchanged.
 *
 * The result stays in [0, 100], and one outcome moves a score by at most half of it down or a quarter
 * up: the newest change decides, so a streak of regressions does not push a kind to zero. A "revert"
 * proposal raised by a regression is not scaled (it answers that very change).
 */

import type { ChangeOutcome, PriorityFeedback } from '../data/proposals';

export type { ChangeOutcome };

/** The factor of a regressed kind. */
export const REGRESSED_FACTOR = 0.5;
/** The factor of an improved kind. */
export const IMPROVED_FACTOR = 1.25;

/**
 * The outcome of a deployment as the feedback reads it: a regression the monitor detected counts as
 * `regressed` before the final verdict exists.
 * @param verdict the stored verdict (`pending` while the window is open)
 * @param regressionDetected whether the open-window monitor crossed its boundary
 */
export function changeOutcome(
  verdict: 'pending' | 'improved' | 'regressed' | 'inconclusive',
  regressionDetected: boolean,
): ChangeOutcome {
  return regressionDetected && verdict !== 'improved' ? 'regressed' : verdict;
}

/** The factor an outcome applies to the analysis's score (1 for `inconclusive`, `pending` or none). */
export function priorityFactor(outcome: ChangeOutcome | null): number {
  if (outcome === 'regressed') return REGRESSED_FACTOR;
  if (outcome === 'improved') return IMPROVED_FACTOR;
  return 1;
}

/**
 * A proposal's priority after the feedback.
 * @param base the analysis's score, 0 to 100
 * @param outcome what happened to the last change of its kind; null when there was none
 * @param isRevert a proposal raised by a regression is never scaled
 * @returns the score in [0, 100], one decimal
 */
export function feedbackPriority(base: number, outcome: ChangeOutcome | null, isRevert = false): number {
  const scaled = isRevert ? base : base * priorityFactor(outcome);
  return Math.round(Math.min(100, Math.max(0, scaled)) * 10) / 10;
}

/** The rule as the proposal repository applies it (wired by the composition root). */
export const PRIORITY_FEEDBACK: PriorityFeedback = {
  outcome: changeOutcome,
  factor: priorityFactor,
  score: feedbackPriority,
};
