import { z } from 'zod';
import type { SearchResult } from '@repo/llm';
import {
  DebateRound,
  ExecutionRoadmap,
  FeasibilityAssessment,
  KillBrief,
  PanelVote,
  ProveJobInput,
  ProvePersona,
  ProveResult,
  type DebateSource,
  type DebateTurn,
  type DecisionBrief,
  type LeanCanvas,
  type PivotReport,
  type VoteCounts,
} from '@repo/compute';
import { assessFeasibility } from '../feasibility';
import { nextProgress } from '../progress';
import { countVotes, verdictFor } from '../tally';
import { clip, describeSessionConfig, isoDate, roundedInt, upTo } from './render';
import type { Pipeline, PipelineDeps, StepOutcome } from './types';

/** The panel in speaking (and voting) order. */
export const PERSONAS = ProvePersona.options;
/** Debate rounds at most. */
export const MAX_ROUNDS = 3;
/** Search queries run per turn at most. */
export const MAX_QUERIES_PER_TURN = 2;
/** Results kept per query. */
export const RESULTS_PER_QUERY = 3;

type Persona = z.infer<typeof ProvePersona>;

const PERSONA_BRIEFS: Record<Persona, string> = {
  Proposer:
    'You champion the idea: state its strongest form — who buys it, the pain it removes, how it makes money and why this team can win.',
  Challenger:
    'You attack the idea: hunt for fatal flaws, weak assumptions, incumbents and substitutes, and reasons customers will not pay.',
  Analyst:
    'You quantify the idea: market size, unit economics, pricing, and estimates of the cash cost and the build time of a first sellable version for a reference team of 2-3 people, plus the projected annual revenue once launched.',
  Reviewer:
    'You review the evidence and execution: quality of the claims so far, technical, legal and regulatory risks, and what is still unproven.',
  Defender:
    'You answer the strongest objections raised so far with concrete mitigations, or concede the ones that cannot be answered.',
  Strategist:
    'You synthesise the debate: positioning, sequencing and the decisive open questions. You also decide whether another round would change the outcome; if not, end the debate.',
};

/** The task name of a persona's debate turn, e.g. `prove_turn_challenger`. */
export function turnTask(persona: Persona): string {
  return `prove_turn_${persona.toLowerCase()}`;
}
/** The task name of a persona's final vote, e.g. `prove_vote_analyst`. */
export function voteTask(persona: Persona): string {
  return `prove_vote_${persona.toLowerCase()}`;
}
/** Task names of the report steps. */
export const REPORT_TASKS = {
  roadmap: 'prove_roadmap',
  leanCanvas: 'prove_lean_canvas',
  killBrief: 'prove_kill_brief',
  decisionBrief: 'prove_decision_brief',
} as const;

// ---- What the model is asked for (tolerant objects: unknown keys are dropped, not refused). ----

const PivotOut = z.object({
  reason: z.string().min(1).describe('why the idea is unsalvageable in its current form'),
  new_direction: z.string().min(1).describe('the direction the founders should pursue instead'),
});

/** A debate turn as answered by the model. */
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
type TurnAnswer = z.infer<typeof TurnAnswer>;

/** The Analyst's turn: a turn plus the estimates the feasibility math needs. */
export const AnalystTurnAnswer = TurnAnswer.extend({
  estimates: z.object({
    estimated_build_cost_usd: z.number().nonnegative().describe('cash cost of a first sellable version, USD'),
    estimated_build_weeks: z.number().positive().describe('build time for a team of 2-3 people, weeks'),
    projected_annual_revenue_usd: z
      .number()
      .nonnegative()
      .describe('annual revenue once launched, USD per year'),
  }),
});

/** A final vote as answered by the model; a CONDITIONAL vote names its conditions. */
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

const RoadmapAnswer = z.object({
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

const LeanCanvasAnswer = z.object({
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

const KillBriefAnswer = z.object({
  top_reasons: upTo(z.object({ reason: z.string().min(1), evidence: z.string().min(1) }), 3, 3).describe(
    'exactly 3 items, strongest first',
  ),
  salvage_paths: upTo(z.string().min(1), 5, 1),
});

const DecisionBriefAnswer = z.object({
  headline: z.string().min(1),
  rationale: z.string().min(1),
  what_would_change_the_decision: z.array(z.string().min(1)).min(1),
  next_steps: z.array(z.string().min(1)).min(1),
});

// ---- State ----

/** The debate's state between steps. */
export const ProveState = z.strictObject({
  phase: z.enum(['debate', 'vote', 'report']),
  /** Current debate round (1–3); after the debate, the last round held. */
  round: z.number().int().min(1).max(MAX_ROUNDS),
  /** Index into {@link PERSONAS} of the next speaker (debate) or voter (vote). */
  speaker: z
    .number()
    .int()
    .min(0)
    .max(PERSONAS.length - 1),
  rounds: z.array(DebateRound),
  feasibility: FeasibilityAssessment.nullable(),
  votes: z.array(PanelVote),
  verdict: z.enum(['APPROVED', 'CONDITIONAL_APPROVED', 'REJECTED']).nullable(),
  /** The first report section, once written. */
  output: z.union([ExecutionRoadmap, KillBrief]).nullable(),
  stepsDone: z.number().int().nonnegative(),
  progressPct: z.number().int().min(0).max(99),
});
/** Inferred type of {@link ProveState}. */
export type ProveState = z.infer<typeof ProveState>;

type ProveOutcome = StepOutcome<ProveState, ProveResult>;

function initialState(): ProveState {
  return {
    phase: 'debate',
    round: 1,
    speaker: 0,
    rounds: [],
    feasibility: null,
    votes: [],
    verdict: null,
    output: null,
    stepsDone: 0,
    progressPct: 0,
  };
}

/** Steps the job will take as far as known now: all debate turns still possible, six votes, two report sections. */
function plannedSteps(state: ProveState): number {
  const turns = state.rounds.reduce((n, r) => n + r.turns.length, 0);
  const debate = state.phase === 'debate' ? MAX_ROUNDS * PERSONAS.length : turns;
  return debate + PERSONAS.length + 2;
}

function advance(state: ProveState, patch: Partial<ProveState>, label: string): ProveOutcome {
  const next: ProveState = { ...state, ...patch, stepsDone: state.stepsDone + 1 };
  const progressPct = nextProgress(state.progressPct, next.stepsDone, plannedSteps(next));
  return { kind: 'continue', state: { ...next, progressPct }, progressPct, label };
}

// ---- Prompts ----

function renderDebate(state: ProveState, perTurnChars: number): string {
  if (state.rounds.length === 0) return '(nobody has spoken yet)';
  const sources: DebateSource[] = [];
  const lines: string[] = [];
  for (const round of state.rounds) {
    lines.push(`## Round ${round.round}`);
    for (const turn of round.turns) {
      lines.push(`### ${turn.persona}\n${clip(turn.content, perTurnChars)}`);
      for (const source of turn.sources ?? []) {
        sources.push(source);
        lines.push(`[S${sources.length}] ${source.title} — ${source.url}\n${clip(source.snippet, 400)}`);
      }
    }
  }
  return lines.join('\n\n');
}

function renderFeasibility(state: ProveState): string {
  const f = state.feasibility;
  if (!f) return 'Feasibility: not assessed yet (the Analyst has not spoken).';
  return (
    `Feasibility (computed from the Analyst's estimates and the session config): ${f.lean_feasibility}; ` +
    `cost $${f.estimated_build_cost_usd} vs budget $${f.budget_usd} (ratio ${f.cost_ratio}); ` +
    `${f.adjusted_build_weeks} weeks for this team vs a ${f.timeline_weeks}-week timeline (ratio ${f.time_ratio}); ` +
    `projected revenue $${f.projected_annual_revenue_usd}/year vs threshold $${f.revenue_threshold_usd}/year${f.low_roi ? ' (LOW_ROI)' : ''}.`
  );
}

function context(input: ProveJobInput, state: ProveState, deps: PipelineDeps, perTurnChars = 1500): string {
  return [
    `Today: ${isoDate(deps.now())}`,
    `# The idea under debate (verbatim)\n${input.idea}`,
    `# Session config\n${describeSessionConfig(input.session_config)}`,
    renderFeasibility(state),
    `# Debate so far\n${renderDebate(state, perTurnChars)}`,
  ].join('\n\n');
}

const PANEL_INTRO =
  'You sit on a six-person venture review panel (Proposer, Challenger, Analyst, Reviewer, Defender, Strategist) debating one startup idea for the founders described in the session config. Be specific and concise; cite search sources as [S<n>] when you use them.';

// ---- Steps ----

async function runSearches(queries: string[], deps: PipelineDeps): Promise<DebateSource[]> {
  if (!deps.search || queries.length === 0) return [];
  const seen = new Set<string>();
  const sources: DebateSource[] = [];
  for (const query of queries.slice(0, MAX_QUERIES_PER_TURN)) {
    let results: SearchResult[] = [];
    try {
      results = await deps.search.search(clip(query, 300), { limit: RESULTS_PER_QUERY });
    } catch (error) {
      // Search is an aid to the debate, not a precondition: the turn stands without these sources.
      deps.logger.warn({ err: (error as Error).message, provider: deps.search.name }, 'debate search failed');
    }
    for (const r of results) {
      if (seen.has(r.url)) continue;
      seen.add(r.url);
      sources.push({ title: r.title, url: r.url, snippet: r.snippet });
    }
  }
  return sources;
}

async function debateStep(
  input: ProveJobInput,
  state: ProveState,
  deps: PipelineDeps,
): Promise<ProveOutcome> {
  const persona = PERSONAS[state.speaker] as Persona;
  const isAnalyst = persona === 'Analyst';
  const searchNote = deps.search
    ? `You may ask for up to ${MAX_QUERIES_PER_TURN} web searches (search_queries); their results are shared with the panel.`
    : 'Web search is not available in this session: leave search_queries empty.';
  const endNote =
    persona === 'Strategist'
      ? 'Set end_debate to true when another round would not change the outcome.'
      : 'Leave end_debate false.';
  const system = `${PANEL_INTRO}\n\nYou are the ${persona}. ${PERSONA_BRIEFS[persona]}\n${searchNote}\n${endNote}\nSet pivot_out only if you are convinced the idea is unsalvageable as stated and a different direction is clearly better; otherwise leave it null.`;
  const user = `${context(input, state, deps)}\n\nRound ${state.round} of at most ${MAX_ROUNDS}. Give the ${persona}'s turn.`;
  const answer: TurnAnswer & { estimates?: z.infer<typeof AnalystTurnAnswer>['estimates'] } = (
    await deps.llm.complete({
      task: turnTask(persona),
      system,
      user,
      schema: isAnalyst ? AnalystTurnAnswer : TurnAnswer,
      temperature: 0.7,
    })
  ).value;

  const queries = answer.search_queries
    .map((q) => q.trim())
    .filter(Boolean)
    .slice(0, MAX_QUERIES_PER_TURN);
  const sources = await runSearches(queries, deps);
  const turn: DebateTurn = {
    persona,
    content: answer.content.trim() || '(no comment)',
    ...(queries.length && deps.search ? { search_queries: queries } : {}),
    ...(sources.length ? { sources } : {}),
  };
  const rounds = appendTurn(state.rounds, state.round, turn);
  const feasibility =
    isAnalyst && answer.estimates
      ? assessFeasibility(answer.estimates, input.session_config)
      : state.feasibility;
  const label = `Round ${state.round} · ${persona}`;

  if (answer.pivot_out) {
    const pivot: PivotReport = {
      declared_by: persona,
      round: state.round,
      reason: answer.pivot_out.reason,
      new_direction: answer.pivot_out.new_direction,
    };
    return {
      kind: 'done',
      result: pivotResult(input, rounds, feasibility, pivot),
      label: `${label} · PIVOT_OUT`,
    };
  }
  const lastSpeaker = state.speaker === PERSONAS.length - 1;
  if (!lastSpeaker) return advance(state, { rounds, feasibility, speaker: state.speaker + 1 }, label);
  const debateOver = state.round >= MAX_ROUNDS || (persona === 'Strategist' && answer.end_debate);
  if (debateOver)
    return advance(
      state,
      { rounds, feasibility, phase: 'vote', speaker: 0 },
      answer.end_debate ? `${label} · debate closed` : label,
    );
  return advance(state, { rounds, feasibility, round: state.round + 1, speaker: 0 }, label);
}

function appendTurn(rounds: ProveState['rounds'], round: number, turn: DebateTurn): ProveState['rounds'] {
  const existing = rounds.find((r) => r.round === round);
  if (!existing) return [...rounds, { round, turns: [turn] }];
  return rounds.map((r) => (r.round === round ? { round, turns: [...r.turns, turn] } : r));
}

async function voteStep(input: ProveJobInput, state: ProveState, deps: PipelineDeps): Promise<ProveOutcome> {
  const persona = PERSONAS[state.speaker] as Persona;
  const system =
    `${PANEL_INTRO}\n\nYou are the ${persona}. ${PERSONA_BRIEFS[persona]}\nThe debate is over; cast your final vote on the idea for these founders: ` +
    'APPROVE (pursue it as proposed), CONDITIONAL (pursue it only if the conditions you list hold) or REJECT (do not pursue it). Give a short rationale.';
  const user = `${context(input, state, deps, 800)}\n\nCast the ${persona}'s vote.`;
  const answer = (
    await deps.llm.complete({ task: voteTask(persona), system, user, schema: VoteAnswer, temperature: 0.2 })
  ).value;
  const vote: PanelVote = {
    persona,
    vote: answer.vote,
    rationale: answer.rationale.trim() || answer.vote,
    ...(answer.vote === 'CONDITIONAL' ? { conditions: answer.conditions } : {}),
  };
  const votes = [...state.votes.filter((v) => v.persona !== persona), vote];
  const label = `Vote · ${persona} (${votes.length}/${PERSONAS.length})`;
  if (state.speaker < PERSONAS.length - 1)
    return advance(state, { votes, speaker: state.speaker + 1 }, label);
  const verdict = verdictFor(countVotes(votes));
  return advance(state, { votes, verdict, phase: 'report', speaker: 0 }, `${label} · ${verdict}`);
}

function describeVotes(votes: readonly PanelVote[]): string {
  return votes
    .map(
      (v) =>
        `- ${v.persona}: ${v.vote} — ${clip(v.rationale, 400)}${v.conditions?.length ? ` (conditions: ${v.conditions.join('; ')})` : ''}`,
    )
    .join('\n');
}

function voteSummary(counts: VoteCounts): string {
  return `${counts.approve} approve, ${counts.conditional} conditional, ${counts.reject} reject`;
}

/** The distinct conditions of the CONDITIONAL votes, in voting order. */
export function mergedConditions(votes: readonly PanelVote[]): string[] {
  const out: string[] = [];
  for (const v of votes)
    for (const c of v.conditions ?? [])
      if (!out.some((o) => o.toLowerCase() === c.trim().toLowerCase())) out.push(c.trim());
  return out;
}

async function reportStep(
  input: ProveJobInput,
  state: ProveState,
  deps: PipelineDeps,
): Promise<ProveOutcome> {
  const verdict = state.verdict ?? verdictFor(countVotes(state.votes));
  const approved = verdict !== 'REJECTED';
  const counts = countVotes(state.votes);
  const base = `${context(input, state, deps, 800)}\n\n# Final vote: ${verdict} (${voteSummary(counts)})\n${describeVotes(state.votes)}`;
  const system = `You write the panel's report on a startup idea after its debate and vote (verdict: ${verdict}). Be concrete, grounded in the debate, and sized for the founders' session config.`;

  if (state.output === null) {
    if (approved) {
      const conditions = mergedConditions(state.votes);
      const answer = (
        await deps.llm.complete({
          task: REPORT_TASKS.roadmap,
          system,
          user: `${base}\n\nWrite the execution roadmap: phases fitting the timeline (${input.session_config.timeline}), milestones by week, and the main risks with mitigations.${conditions.length ? ` The roadmap must satisfy these conditions: ${conditions.join('; ')}.` : ''}`,
          schema: RoadmapAnswer,
          temperature: 0.3,
        })
      ).value;
      const output: ExecutionRoadmap = { kind: 'execution_roadmap', ...answer, conditions };
      return advance(state, { output }, 'Report · execution roadmap');
    }
    const answer = (
      await deps.llm.complete({
        task: REPORT_TASKS.killBrief,
        system,
        user: `${base}\n\nWrite the kill brief: exactly the 3 strongest reasons to reject the idea, each with its evidence from the debate, and the salvage paths (how parts of it could still be used).`,
        schema: KillBriefAnswer,
        temperature: 0.3,
      })
    ).value;
    const output: KillBrief = { kind: 'kill_brief', ...answer };
    return advance(state, { output }, 'Report · kill brief');
  }

  const common = {
    votes: state.votes,
    vote_counts: counts,
    rounds: state.rounds,
    feasibility: state.feasibility,
    session_config: input.session_config,
    proveSessionId: input.proveSessionId,
  };
  if (approved && state.output.kind === 'execution_roadmap') {
    const answer = (
      await deps.llm.complete({
        task: REPORT_TASKS.leanCanvas,
        system,
        user: `${base}\n\nWrite the one-page Lean Canvas (its nine boxes) for the idea as approved.`,
        schema: LeanCanvasAnswer,
        temperature: 0.3,
      })
    ).value;
    const summary: LeanCanvas = { kind: 'lean_canvas', ...answer };
    const result: ProveResult = {
      verdict: verdict as 'APPROVED' | 'CONDITIONAL_APPROVED',
      report: { output: state.output, summary, pivot_report: null },
      ...common,
    };
    return { kind: 'done', result, label: 'Report · Lean Canvas' };
  }
  if (!approved && state.output.kind === 'kill_brief') {
    const answer = (
      await deps.llm.complete({
        task: REPORT_TASKS.decisionBrief,
        system,
        user: `${base}\n\nWrite the one-page decision brief explaining the rejection: a headline, the rationale, what would change the decision, and next steps for the founders.`,
        schema: DecisionBriefAnswer,
        temperature: 0.3,
      })
    ).value;
    const summary: DecisionBrief = {
      kind: 'decision_brief',
      decision: 'REJECTED',
      vote_summary: voteSummary(counts),
      ...answer,
    };
    const result: ProveResult = {
      verdict: 'REJECTED',
      report: { output: state.output, summary, pivot_report: null },
      ...common,
    };
    return { kind: 'done', result, label: 'Report · decision brief' };
  }
  throw new Error(`prove state is inconsistent: verdict ${verdict} with a ${state.output.kind}`);
}

function pivotResult(
  input: ProveJobInput,
  rounds: ProveState['rounds'],
  feasibility: ProveState['feasibility'],
  pivot: PivotReport,
): ProveResult {
  return {
    verdict: 'PIVOT_OUT',
    report: { output: null, summary: null, pivot_report: pivot },
    votes: [],
    vote_counts: { approve: 0, conditional: 0, reject: 0 },
    rounds,
    feasibility,
    session_config: input.session_config,
    proveSessionId: input.proveSessionId,
  };
}

/**
 * prove/debate (market-intel spec, "POST /api/v1/prove/debate" and the verdict table): the six
 * personas speak in order for up to 3 rounds (one step per turn; a turn may ask for web searches,
 * whose results become the turn's sources and are shown to later speakers; the Analyst's estimates
 * feed {@link assessFeasibility}); any panelist may declare PIVOT_OUT, which ends the job at once with
 * no vote; the Strategist may close the debate after any round; then six vote steps, the tally
 * ({@link verdictFor}) and two report steps (roadmap + Lean Canvas, or kill brief + decision brief).
 * At most 18 + 6 + 2 = 26 steps.
 */
export const provePipeline: Pipeline<ProveJobInput, ProveState, ProveResult> = {
  kind: 'prove',
  input: ProveJobInput,
  state: ProveState,
  result: ProveResult,
  etaMinutes: 60,
  init: () => initialState(),
  async step(input, state, deps) {
    switch (state.phase) {
      case 'debate':
        return debateStep(input, state, deps);
      case 'vote':
        return voteStep(input, state, deps);
      case 'report':
        return reportStep(input, state, deps);
    }
  },
};
