import type { RiceScore } from '@repo/compute';

/**
 * RICE score (Intercom): reach × impact × confidence / effort, rounded to 2 decimals.
 * @param input reach (per quarter), impact (0.25–3), confidence (0–1), effort (person-months, > 0)
 */
export function riceScore(input: Omit<RiceScore, 'score'>): RiceScore {
  const effort = Math.max(0.01, input.effort);
  const score = Math.round(((input.reach * input.impact * input.confidence) / effort) * 100) / 100;
  return { ...input, effort, score };
}
