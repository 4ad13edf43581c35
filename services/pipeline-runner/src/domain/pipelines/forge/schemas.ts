import { z } from 'zod';
import { FeasibilityEstimates } from '../../feasibility';
import { clip, roundedInt, upTo } from '../render';

/**
 * One idea as a brainstorming agent sketches it: name (clipped to 120 characters), problem, target
 * market, why now and revenue model, all non-empty strings. The base of the round 1 and round 3
 * answers and of the candidates kept in the forge state (`./state`).
 */
export const IdeaSketch = z.object({
  name: z
    .string()
    .min(1)
    .transform((name) => clip(name, 120)),
  problem: z.string().min(1),
  target_market: z.string().min(1),
  why_now: z.string().min(1),
  revenue_model: z.string().min(1),
});

/** Round 1 answer (README, "forge/ideate", divergent generation): one agent's 1–3 ideas. */
export const IdeasAnswer = z.object({ ideas: upTo(IdeaSketch, 3, 1) });

/** Round 2 answer (README, "forge/ideate", critique): one agent's critiques of the candidates, by id. */
export const CritiqueAnswer = z.object({
  critiques: z
    .array(
      z.object({
        idea_id: z.string().min(1),
        critique: z.string().min(1),
        severity: z.enum(['minor', 'major', 'fatal']).describe('fatal: the idea should be dropped'),
      }),
    )
    .min(1),
});

/**
 * Round 3 answer (README, "forge/ideate", refinement): one idea, refined, with the
 * {@link FeasibilityEstimates} the feasibility math needs.
 */
export const RefineAnswer = IdeaSketch.extend({
  moat: z.string().min(1),
  key_metrics: upTo(z.string().min(1), 6, 1),
  validation_plan: upTo(z.string().min(1), 8, 1),
  kill_switches: upTo(z.string().min(1), 6, 1),
  tags: upTo(z.string().min(1), 8).default([]),
  ...FeasibilityEstimates.shape,
});

/**
 * Round 4 answer (README, "forge/ideate", scoring): one idea's RICE inputs (reach per quarter, impact
 * 0.25–3, confidence 0–1, effort in person-months) and kill score (0–100, higher = more reasons to kill).
 */
export const ScoreAnswer = z.object({
  rice: z.object({
    reach: roundedInt(0, 1e12).describe('people or accounts reached per quarter'),
    impact: z.number().min(0.25).max(3).describe('0.25 minimal, 0.5 low, 1 medium, 2 high, 3 massive'),
    confidence: z.number().min(0).max(1).describe('confidence in these estimates, 0-1'),
    effort: z.number().positive().describe('person-months'),
  }),
  kill_score: roundedInt(0, 100).describe('0-100, higher = more reasons to kill the idea'),
  kill_reasons: upTo(z.string().min(1), 5).default([]),
});

/** Round 5 answer (README, "forge/ideate", final ranking): the ranking by id, best first, and a summary. */
export const RankAnswer = z.object({
  ranking: z.array(z.object({ idea_id: z.string().min(1), rationale: z.string().min(1) })).min(1),
  summary: z.string().min(1),
});
