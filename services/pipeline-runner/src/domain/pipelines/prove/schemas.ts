// What the model is asked for: tolerant objects, unknown keys are dropped, not refused.
import { z } from 'zod';
import { FeasibilityEstimates } from '../../feasibility';
import { roundedInt, upTo } from '../render';

/** Search queries run per turn at most (README, "prove/debate", turns). */
export const MAX_QUERIES_PER_TURN = 2;

const PivotOut = z.object({
  reason: z.string().min(1).describe('why the idea is unsalvageable in its current form'),
  new_direction: z.string().min(1).describe('the direction the founders should pursue instead'),
});

/**
 * A debate turn as answered by the model (README, "prove/debate", turns): `content`, at most
 * {@link MAX_QUERIES_PER_TURN} `search_queries`, `pivot_out` (PIVOT_OUT) and `end_debate` (early close).
 */
export const TurnAnswer = z.object({
  content: z.string().min(1).describe('your contribution to the debate, 80-250 words'),
  search_queries: upTo(z.string(), MAX_QUERIES_PER_TURN)
    .default([])
    .describe(`at most ${MAX_QUERIES_PER_TURN} web searches whose results should be shared with the panel`),
  pivot_out: PivotOut.nullable()
    .default(null)
    .describe(
      'only when you are convinced the idea cannot be saved and a different direction is clearly better; this ends the debate without a vote',
    ),
  end_debate: z
    .boolean()
    .default(false)
    .describe('Strategist only: true when another round would not change the outcome'),
});
export type TurnAnswer = z.infer<typeof TurnAnswer>;

/**
 * The Analyst's turn (README, "prove/debate", feasibility): a turn plus the
 * {@link FeasibilityEstimates} the feasibility math needs.
 */
export const AnalystTurnAnswer = TurnAnswer.extend({
  estimates: FeasibilityEstimates,
});

/**
 * A final vote as answered by the model (README, "prove/debate", vote and tally); a CONDITIONAL vote
 * names its conditions (1–5), otherwise validation fails.
 */
export const VoteAnswer = z
  .object({
    vote: z.enum(['APPROVE', 'CONDITIONAL', 'REJECT']),
    rationale: z.string().min(1),
    conditions: upTo(z.string().min(1), 5)
      .default([])
      .describe('at most 5; required with CONDITIONAL: what must be true to proceed'),
  })
  .refine((v) => v.vote !== 'CONDITIONAL' || v.conditions.length > 0, {
    message: 'a CONDITIONAL vote needs at least one condition',
    path: ['conditions'],
  });

/**
 * The execution roadmap as answered by the model (README, "prove/debate", report): 1–8 phases
 * (duration in weeks, 1–520), 1–12 milestones by week, at most 10 risks with mitigations.
 */
export const RoadmapAnswer = z.object({
  phases: upTo(
    z.object({
      name: z.string().min(1),
      weeks: roundedInt(1, 520),
      goals: z.array(z.string().min(1)).min(1),
      deliverables: z.array(z.string().min(1)).min(1),
    }),
    8,
    1,
  ),
  milestones: upTo(z.object({ week: roundedInt(1, 520), milestone: z.string().min(1) }), 12, 1),
  risks: upTo(z.object({ risk: z.string().min(1), mitigation: z.string().min(1) }), 10),
});

/** The Lean Canvas as answered by the model (README, "prove/debate", report): its nine boxes. */
export const LeanCanvasAnswer = z.object({
  problem: upTo(z.string().min(1), 3, 1),
  customer_segments: z.array(z.string().min(1)).min(1),
  unique_value_proposition: z.string().min(1),
  solution: upTo(z.string().min(1), 3, 1),
  channels: z.array(z.string().min(1)).min(1),
  revenue_streams: z.array(z.string().min(1)).min(1),
  cost_structure: z.array(z.string().min(1)).min(1),
  key_metrics: z.array(z.string().min(1)).min(1),
  unfair_advantage: z.string().min(1),
});

/**
 * The kill brief as answered by the model (README, "prove/debate", report): exactly 3 top reasons with
 * evidence, and 1–5 salvage paths.
 */
export const KillBriefAnswer = z.object({
  top_reasons: upTo(z.object({ reason: z.string().min(1), evidence: z.string().min(1) }), 3, 3).describe(
    'exactly 3 items, strongest first',
  ),
  salvage_paths: upTo(z.string().min(1), 5, 1),
});

/**
 * The decision brief as answered by the model (README, "prove/debate", report): headline, rationale,
 * what would change the decision, next steps.
 */
export const DecisionBriefAnswer = z.object({
  headline: z.string().min(1),
  rationale: z.string().min(1),
  what_would_change_the_decision: z.array(z.string().min(1)).min(1),
  next_steps: z.array(z.string().min(1)).min(1),
});
