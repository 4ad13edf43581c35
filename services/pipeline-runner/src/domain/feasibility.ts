import { z } from 'zod';
import type { SessionConfig } from '@repo/schemas';
import { LOW_ROI_TAG, type FeasibilityAssessment, type LeanFeasibility } from '@repo/compute';

/** Budget values read as USD (`$100K+` counts as its lower bound, 100000). */
export const BUDGET_USD: Record<SessionConfig['budget'], number> = {
  $1K: 1_000,
  $5K: 5_000,
  $10K: 10_000,
  $25K: 25_000,
  $50K: 50_000,
  '$100K+': 100_000,
};

/** Timelines read as their upper bound in weeks (`3-6 months` counts as 26). */
export const TIMELINE_WEEKS: Record<SessionConfig['timeline'], number> = {
  '2 weeks': 2,
  '4 weeks': 4,
  '4-8 weeks': 8,
  '8-12 weeks': 12,
  '3-6 months': 26,
};

/** Revenue thresholds read as USD per year (`$1M+/year` counts as 1000000). */
export const REVENUE_THRESHOLD_USD: Record<SessionConfig['revenue_threshold'], number> = {
  '$10K/year': 10_000,
  '$50K/year': 50_000,
  '$100K/year': 100_000,
  '$500K/year': 500_000,
  '$1M+/year': 1_000_000,
};

/**
 * Build capacity of each profile relative to the reference team the estimates are made for (2–3
 * people = 1): a solo founder builds at half that pace; larger teams faster, but less than
 * proportionally (coordination cost).
 */
export const CAPACITY_FACTOR: Record<SessionConfig['profile'], number> = {
  Solo: 0.5,
  'Small Team (2-3)': 1,
  'Small Team (4-5)': 1.6,
  'Funded Team (6-15)': 3,
  Enterprise: 5,
};

/** STRETCH allows up to this multiple of the budget. */
export const STRETCH_BUDGET_FACTOR = 2;
/** STRETCH allows up to this multiple of the timeline. */
export const STRETCH_TIMELINE_FACTOR = 1.5;

/**
 * The LLM's estimates for one idea, as the model is asked for them (forge's refinement, the prove
 * Analyst's turn): the cash cost of building the first sellable version in USD (≥ 0), the build time
 * for the reference team of 2–3 people in weeks (> 0) and the projected annual revenue once launched
 * in USD per year (≥ 0).
 */
export const FeasibilityEstimates = z.object({
  estimated_build_cost_usd: z.number().nonnegative().describe('cash cost of a first sellable version, USD'),
  estimated_build_weeks: z.number().positive().describe('build time for a team of 2-3 people, weeks'),
  projected_annual_revenue_usd: z
    .number()
    .nonnegative()
    .describe('annual revenue once launched, USD per year'),
});
export type FeasibilityEstimates = z.infer<typeof FeasibilityEstimates>;

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/**
 * Lean feasibility of an idea for a session_config (services/pipeline-runner/README.md,
 * "session_config in the math": budget scales the LEAN_FIT band, profile calibrates the feasibility
 * math, LOW_ROI below the revenue threshold):
 *
 * - adjusted weeks = estimated weeks / capacity factor of the profile ({@link CAPACITY_FACTOR});
 * - cost ratio = cost / budget, time ratio = adjusted weeks / timeline weeks;
 * - `LEAN_FIT` when both ratios are ≤ 1; `STRETCH` when cost ratio ≤ {@link STRETCH_BUDGET_FACTOR} and
 *   time ratio ≤ {@link STRETCH_TIMELINE_FACTOR}; `NOT_LEAN` otherwise;
 * - `low_roi` when projected revenue < the revenue threshold.
 *
 * Pure; ratios and adjusted weeks are rounded to 2 decimals, the classification uses exact values.
 * @param estimates the LLM's estimates (non-negative; weeks > 0 — smaller values are clamped)
 * @param config the resolved session_config
 */
export function assessFeasibility(
  estimates: FeasibilityEstimates,
  config: SessionConfig,
): FeasibilityAssessment {
  const cost = Math.max(0, estimates.estimated_build_cost_usd);
  const weeks = Math.max(0.1, estimates.estimated_build_weeks);
  const revenue = Math.max(0, estimates.projected_annual_revenue_usd);
  const budget = BUDGET_USD[config.budget];
  const timeline = TIMELINE_WEEKS[config.timeline];
  const capacity = CAPACITY_FACTOR[config.profile];
  const threshold = REVENUE_THRESHOLD_USD[config.revenue_threshold];
  const adjustedWeeks = weeks / capacity;
  const costRatio = cost / budget;
  const timeRatio = adjustedWeeks / timeline;
  return {
    lean_feasibility: classify(costRatio, timeRatio),
    estimated_build_cost_usd: cost,
    estimated_build_weeks: weeks,
    adjusted_build_weeks: Math.max(0.01, round2(adjustedWeeks)),
    projected_annual_revenue_usd: revenue,
    budget_usd: budget,
    timeline_weeks: timeline,
    capacity_factor: capacity,
    revenue_threshold_usd: threshold,
    cost_ratio: round2(costRatio),
    time_ratio: round2(timeRatio),
    low_roi: revenue < threshold,
  };
}

/**
 * The band of a cost ratio and a time ratio (see {@link assessFeasibility}).
 * @param costRatio cost / budget
 * @param timeRatio adjusted weeks / timeline weeks
 */
export function classify(costRatio: number, timeRatio: number): LeanFeasibility {
  if (costRatio <= 1 && timeRatio <= 1) return 'LEAN_FIT';
  if (costRatio <= STRETCH_BUDGET_FACTOR && timeRatio <= STRETCH_TIMELINE_FACTOR) return 'STRETCH';
  return 'NOT_LEAN';
}

/**
 * An idea's tags with `LOW_ROI` present exactly when the assessment says so: a `LOW_ROI` the model
 * added on its own is removed, duplicates and blanks dropped, order kept.
 * @param tags the model's tags
 * @param assessment the idea's assessment
 */
export function tagsFor(
  tags: readonly string[],
  assessment: Pick<FeasibilityAssessment, 'low_roi'>,
): string[] {
  const out: string[] = [];
  for (const raw of tags) {
    const tag = raw.trim();
    if (tag && tag.toUpperCase() !== LOW_ROI_TAG && !out.includes(tag)) out.push(tag);
  }
  if (assessment.low_roi) out.push(LOW_ROI_TAG);
  return out;
}
