/**
 * The progress to report after a step: proportional to steps done over the steps now planned, but
 * always at least one point above the previous report and never above 99 (100 is reserved for the
 * terminal event). Jobs have far fewer than 99 steps, so the sequence strictly rises.
 * @param previous the progress reported after the previous step (0 before the first)
 * @param stepsDone steps completed including this one
 * @param stepsPlanned the current estimate of the job's total steps (≥ stepsDone)
 */
export function nextProgress(previous: number, stepsDone: number, stepsPlanned: number): number {
  const proportional = Math.floor((stepsDone * 99) / Math.max(stepsPlanned, stepsDone + 1));
  return Math.min(99, Math.max(previous + 1, proportional));
}
