import { z } from 'zod';
import {
  Budget,
  FOUNDER_SIGNAL_MAX,
  GapItem,
  KeywordItem,
  PainCluster,
  Profile,
  RevenueThreshold,
  Timeline,
  TrendItem,
  type SessionConfig,
} from '@repo/schemas';

/*
 * Inputs and results of the compute jobs (README, "Job inputs and results"): what market-intel sends
 * for POST /api/v1/forge/ideate and POST /api/v1/prove/debate, and what the runner returns for a forge
 * job (the prove result, which reuses the session config and the feasibility assessment, is in
 * prove-result.ts). The public API leaves the forge result open; the shapes below are this
 * implementation's.
 * Money is in whole US dollars, durations in weeks, unless a field says otherwise.
 */

const DateTime = z.iso.datetime({ offset: true });

/** A fully resolved session_config as carried in job messages (every field present, see {@link SessionConfig}). */
export const ResolvedSessionConfig = z.strictObject({
  profile: Profile,
  budget: Budget,
  timeline: Timeline,
  revenue_threshold: RevenueThreshold,
  founder_signal: z.string().max(FOUNDER_SIGNAL_MAX).nullable(),
}) satisfies z.ZodType<SessionConfig>;

/** The latest scout data of one sector, sent by market-intel with a forge job. */
export const ScoutSectorData = z.strictObject({
  sector: z.string().min(1).max(64),
  /** When the scan behind this data was generated, or `null` when the sector has no scan yet. */
  generatedFrom: DateTime.nullable(),
  gaps: z.array(GapItem),
  painClusters: z.array(PainCluster),
  trends: z.array(TrendItem),
  keywords: z.array(KeywordItem),
});
export type ScoutSectorData = z.infer<typeof ScoutSectorData>;

/** Input of a forge/ideate job, as carried in the runner's step messages. */
export const ForgeJobInput = z.strictObject({
  sectors: z.array(z.string().min(1).max(64)).max(20),
  /** The caller's free-text context (≤ 10000 chars), or `null`. */
  context: z.string().max(10_000).nullable(),
  product_modes: z.array(z.string().min(1).max(200)).max(20),
  session_config: ResolvedSessionConfig,
  scout: z.array(ScoutSectorData),
});
export type ForgeJobInput = z.infer<typeof ForgeJobInput>;

/** Input of a prove/debate job, as carried in the runner's step messages. */
export const ProveJobInput = z.strictObject({
  /** The idea under debate, read verbatim (10–10000 chars, markdown allowed). */
  idea: z.string().min(10).max(10_000),
  session_config: ResolvedSessionConfig,
  /** The uuid returned with the 202. */
  proveSessionId: z.uuid(),
});
export type ProveJobInput = z.infer<typeof ProveJobInput>;

/**
 * Lean feasibility of an idea for the caller's session_config: `LEAN_FIT` (within budget and
 * timeline), `STRETCH` (up to 2x the budget and 1.5x the timeline), `NOT_LEAN` (beyond).
 */
export const LeanFeasibility = z.enum(['LEAN_FIT', 'STRETCH', 'NOT_LEAN']);
export type LeanFeasibility = z.infer<typeof LeanFeasibility>;

/** The tag added to ideas whose projected annual revenue is below session_config.revenue_threshold. */
export const LOW_ROI_TAG = 'LOW_ROI';

/**
 * The feasibility arithmetic behind a {@link LeanFeasibility} verdict, so callers can see why: the
 * estimates (for a reference team of 2–3 people), the session_config read as numbers, and the ratios.
 */
export const FeasibilityAssessment = z.strictObject({
  lean_feasibility: LeanFeasibility,
  /** Estimated cash cost of building the first sellable version, USD. */
  estimated_build_cost_usd: z.number().nonnegative(),
  /** Estimated build time for the reference team of 2–3 people, weeks. */
  estimated_build_weeks: z.number().positive(),
  /** Build time for the caller's profile: estimated weeks divided by the profile's capacity factor. */
  adjusted_build_weeks: z.number().positive(),
  /** Projected annual revenue once launched, USD per year. */
  projected_annual_revenue_usd: z.number().nonnegative(),
  /** The budget read as USD ($100K+ counts as 100000). */
  budget_usd: z.number().positive(),
  /** The timeline's upper bound in weeks (3-6 months counts as 26). */
  timeline_weeks: z.number().positive(),
  /** Team capacity relative to the reference team (Solo 0.5 … Enterprise 5). */
  capacity_factor: z.number().positive(),
  /** The revenue threshold read as USD per year ($1M+/year counts as 1000000). */
  revenue_threshold_usd: z.number().positive(),
  /** estimated_build_cost_usd / budget_usd. */
  cost_ratio: z.number().nonnegative(),
  /** adjusted_build_weeks / timeline_weeks. */
  time_ratio: z.number().nonnegative(),
  /** `true` when the projected revenue is below the threshold. */
  low_roi: z.boolean(),
});
export type FeasibilityAssessment = z.infer<typeof FeasibilityAssessment>;

/**
 * A RICE score (Intercom's prioritisation formula): `score = reach × impact × confidence / effort`,
 * rounded to 2 decimals.
 */
export const RiceScore = z.strictObject({
  /** People or accounts reached per quarter. */
  reach: z.number().int().nonnegative(),
  /** Impact per person: 0.25 minimal, 0.5 low, 1 medium, 2 high, 3 massive. */
  impact: z.number().min(0.25).max(3),
  /** Confidence in the estimates, 0–1. */
  confidence: z.number().min(0).max(1),
  /** Effort in person-months (> 0). */
  effort: z.number().positive(),
  score: z.number().nonnegative(),
});
export type RiceScore = z.infer<typeof RiceScore>;

/** One ranked idea of a forge result. */
export const ForgeIdea = z.strictObject({
  /** 1-based rank, 1 = best. */
  rank: z.number().int().positive(),
  name: z.string().min(1),
  problem: z.string().min(1),
  target_market: z.string().min(1),
  why_now: z.string().min(1),
  revenue_model: z.string().min(1),
  moat: z.string().min(1),
  rice: RiceScore,
  /** 0–100, higher = more reasons to kill the idea. */
  kill_score: z.number().int().min(0).max(100),
  key_metrics: z.array(z.string().min(1)).min(1),
  validation_plan: z.array(z.string().min(1)).min(1),
  /** Conditions that, when observed, end the venture. */
  kill_switches: z.array(z.string().min(1)).min(1),
  lean_feasibility: LeanFeasibility,
  feasibility: FeasibilityAssessment,
  projected_annual_revenue_usd: z.number().nonnegative(),
  estimated_build_cost_usd: z.number().nonnegative(),
  estimated_build_weeks: z.number().positive(),
  /** Free tags; includes `LOW_ROI` exactly when projected revenue < the revenue threshold. */
  tags: z.array(z.string().min(1)),
});
export type ForgeIdea = z.infer<typeof ForgeIdea>;

/** One contribution in a forge round's transcript. */
export const TranscriptEntry = z.strictObject({ agent: z.string().min(1), content: z.string() });
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;

/** One of the five forge rounds with its transcript. */
export const ForgeRound = z.strictObject({
  round: z.number().int().min(1).max(5),
  title: z.string().min(1),
  transcript: z.array(TranscriptEntry),
});
export type ForgeRound = z.infer<typeof ForgeRound>;

/** Result of a completed forge/ideate job (`AgentJob.result`). */
export const ForgeResult = z.strictObject({
  /** Ideas in rank order (ideas[0].rank === 1). */
  ideas: z.array(ForgeIdea).min(1),
  rounds: z.array(ForgeRound).length(5),
  session_config: ResolvedSessionConfig,
  sectors: z.array(z.string()),
  /** Which scan each sector's scout data came from (`null`: no scan for that sector). */
  scout_generated_from: z.array(z.strictObject({ sector: z.string(), generatedFrom: DateTime.nullable() })),
});
export type ForgeResult = z.infer<typeof ForgeResult>;
