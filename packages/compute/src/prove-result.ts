import { z } from 'zod';
import { FeasibilityAssessment, ResolvedSessionConfig } from './results';

/*
 * The result of a prove/debate job (README, "Job inputs and results"): the debate rounds, the panel's
 * votes and the verdict's reports. The public API leaves most of it open; the shapes below are this
 * implementation's.
 */

/** The six debate personas, in speaking order. */
export const ProvePersona = z.enum([
  'Proposer',
  'Challenger',
  'Analyst',
  'Reviewer',
  'Defender',
  'Strategist',
]);
export type ProvePersona = z.infer<typeof ProvePersona>;

/** A web source found by a search a panelist asked for. */
export const DebateSource = z.strictObject({ title: z.string(), url: z.string(), snippet: z.string() });
export type DebateSource = z.infer<typeof DebateSource>;

/** One panelist's turn in a debate round; `sources` are the results of the searches it asked for. */
export const DebateTurn = z.strictObject({
  persona: ProvePersona,
  content: z.string().min(1),
  search_queries: z.array(z.string()).optional(),
  sources: z.array(DebateSource).optional(),
});
export type DebateTurn = z.infer<typeof DebateTurn>;

/** One debate round (1–3) with its turns in speaking order. */
export const DebateRound = z.strictObject({
  round: z.number().int().min(1).max(3),
  turns: z.array(DebateTurn),
});
export type DebateRound = z.infer<typeof DebateRound>;

/** A panelist's vote. */
export const VoteChoice = z.enum(['APPROVE', 'CONDITIONAL', 'REJECT']);
export type VoteChoice = z.infer<typeof VoteChoice>;

/** One panelist's final vote; `conditions` only on CONDITIONAL votes. */
export const PanelVote = z.strictObject({
  persona: ProvePersona,
  vote: VoteChoice,
  rationale: z.string().min(1),
  conditions: z.array(z.string().min(1)).optional(),
});
export type PanelVote = z.infer<typeof PanelVote>;

/** Vote tally. */
export const VoteCounts = z.strictObject({
  approve: z.number().int().min(0).max(6),
  conditional: z.number().int().min(0).max(6),
  reject: z.number().int().min(0).max(6),
});
export type VoteCounts = z.infer<typeof VoteCounts>;

/** `report.output` of an approved idea: the execution roadmap. */
export const ExecutionRoadmap = z.strictObject({
  kind: z.literal('execution_roadmap'),
  phases: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        weeks: z.number().int().positive(),
        goals: z.array(z.string().min(1)).min(1),
        deliverables: z.array(z.string().min(1)).min(1),
      }),
    )
    .min(1),
  milestones: z
    .array(z.strictObject({ week: z.number().int().positive(), milestone: z.string().min(1) }))
    .min(1),
  risks: z.array(z.strictObject({ risk: z.string().min(1), mitigation: z.string().min(1) })),
  /** The conditions attached by CONDITIONAL votes, to be met during execution (empty when none). */
  conditions: z.array(z.string().min(1)),
});
export type ExecutionRoadmap = z.infer<typeof ExecutionRoadmap>;

/** `report.summary` of an approved idea: the one-page Lean Canvas (its nine boxes). */
export const LeanCanvas = z.strictObject({
  kind: z.literal('lean_canvas'),
  problem: z.array(z.string().min(1)).min(1).max(3),
  customer_segments: z.array(z.string().min(1)).min(1),
  unique_value_proposition: z.string().min(1),
  solution: z.array(z.string().min(1)).min(1).max(3),
  channels: z.array(z.string().min(1)).min(1),
  revenue_streams: z.array(z.string().min(1)).min(1),
  cost_structure: z.array(z.string().min(1)).min(1),
  key_metrics: z.array(z.string().min(1)).min(1),
  unfair_advantage: z.string().min(1),
});
export type LeanCanvas = z.infer<typeof LeanCanvas>;

/** `report.output` of a rejected idea: the kill brief, exactly three reasons and the salvage paths. */
export const KillBrief = z.strictObject({
  kind: z.literal('kill_brief'),
  top_reasons: z.array(z.strictObject({ reason: z.string().min(1), evidence: z.string().min(1) })).length(3),
  salvage_paths: z.array(z.string().min(1)).min(1),
});
export type KillBrief = z.infer<typeof KillBrief>;

/** `report.summary` of a rejected idea: the one-page decision brief. */
export const DecisionBrief = z.strictObject({
  kind: z.literal('decision_brief'),
  decision: z.literal('REJECTED'),
  headline: z.string().min(1),
  rationale: z.string().min(1),
  /** The tally in words, e.g. "1 approve, 1 conditional, 4 reject". */
  vote_summary: z.string().min(1),
  what_would_change_the_decision: z.array(z.string().min(1)).min(1),
  next_steps: z.array(z.string().min(1)).min(1),
});
export type DecisionBrief = z.infer<typeof DecisionBrief>;

/** `report.pivot_report`: who declared the idea unsalvageable, when, why, and where to go instead. */
export const PivotReport = z.strictObject({
  declared_by: ProvePersona,
  round: z.number().int().min(1).max(3),
  reason: z.string().min(1),
  new_direction: z.string().min(1),
});
export type PivotReport = z.infer<typeof PivotReport>;

/** Fields every prove result carries. */
const ProveCommon = {
  rounds: z.array(DebateRound).min(1).max(3),
  /** The Analyst's latest lean-feasibility assessment, `null` when the debate ended before the Analyst spoke. */
  feasibility: FeasibilityAssessment.nullable(),
  session_config: ResolvedSessionConfig,
  proveSessionId: z.uuid(),
};

/** Fields of a result the panel voted on (approved or rejected): the six votes and their tally. */
const ProveVoted = {
  votes: z.array(PanelVote).length(6),
  vote_counts: VoteCounts,
};

/** APPROVED or CONDITIONAL_APPROVED: execution roadmap + Lean Canvas. */
export const ProveApprovedResult = z.strictObject({
  verdict: z.enum(['APPROVED', 'CONDITIONAL_APPROVED']),
  report: z.strictObject({ output: ExecutionRoadmap, summary: LeanCanvas, pivot_report: z.null() }),
  ...ProveVoted,
  ...ProveCommon,
});

/** REJECTED (by vote): kill brief + decision brief. */
export const ProveRejectedResult = z.strictObject({
  verdict: z.literal('REJECTED'),
  report: z.strictObject({ output: KillBrief, summary: DecisionBrief, pivot_report: z.null() }),
  ...ProveVoted,
  ...ProveCommon,
});

/** PIVOT_OUT: no vote, no output or summary, the pivot report. */
export const ProvePivotResult = z.strictObject({
  verdict: z.literal('PIVOT_OUT'),
  report: z.strictObject({ output: z.null(), summary: z.null(), pivot_report: PivotReport }),
  votes: z.array(PanelVote).length(0),
  vote_counts: z.strictObject({ approve: z.literal(0), conditional: z.literal(0), reject: z.literal(0) }),
  ...ProveCommon,
});

/**
 * Result of a completed prove/debate job (`AgentJob.result`), discriminated by `verdict` (README, "Job
 * inputs and results").
 */
export const ProveResult = z.discriminatedUnion('verdict', [
  ProveApprovedResult,
  ProveRejectedResult,
  ProvePivotResult,
]);
export type ProveResult = z.infer<typeof ProveResult>;
/** The verdicts of a prove result. */
export const ProveVerdict = z.enum(['APPROVED', 'CONDITIONAL_APPROVED', 'REJECTED', 'PIVOT_OUT']);
export type ProveVerdict = z.infer<typeof ProveVerdict>;
