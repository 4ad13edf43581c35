import type { SearchResult } from '@repo/llm';
import type {
  DebateSource,
  DebateTurn,
  DecisionBrief,
  ExecutionRoadmap,
  KillBrief,
  LeanCanvas,
  PanelVote,
  PivotReport,
  ProveJobInput,
  ProveResult,
} from '@repo/compute';
import { assessFeasibility, type FeasibilityEstimates } from '../../feasibility';
import { countVotes, verdictFor } from '../../tally';
import { clip } from '../render';
import { askModel } from '../ask-model';
import type { PhaseStep } from '../phased';
import type { PipelineDeps } from '../types';
import {
  REPORT_TASKS,
  reportPrompt,
  turnPrompt,
  turnTask,
  votePrompt,
  voteSummary,
  voteTask,
} from './prompts';
import {
  AnalystTurnAnswer,
  DecisionBriefAnswer,
  KillBriefAnswer,
  LeanCanvasAnswer,
  MAX_QUERIES_PER_TURN,
  RoadmapAnswer,
  TurnAnswer,
  VoteAnswer,
} from './schemas';
import {
  MAX_ROUNDS,
  PERSONAS,
  advance,
  appendTurn,
  mergedConditions,
  type Persona,
  type ProveState,
} from './state';

/** One step of the debate: the step of its state's phase (`phasedPipeline`), never mutating the state. */
type Step = PhaseStep<ProveJobInput, ProveState, ProveResult>;

/** Results kept per search query (README, "prove/debate", turns). */
export const RESULTS_PER_QUERY = 3;

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

/** A debate turn's answer; the Analyst's also carries its estimates. */
type DebateTurnAnswer = TurnAnswer & { estimates?: FeasibilityEstimates };

/**
 * Phase `debate` (README, "prove/debate": turns, feasibility, PIVOT_OUT, early close): the persona at
 * `speaker` takes its turn; its search queries run (failures logged, never thrown); the Analyst's
 * estimates give the feasibility. A PIVOT_OUT ends the job at once; after the Strategist the next
 * round starts, or the vote when the debate is over (round {@link MAX_ROUNDS}, or `end_debate`).
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const debateStep: Step = async (input, state, deps) => {
  const persona = PERSONAS[state.speaker] as Persona;
  const isAnalyst = persona === 'Analyst';
  const prompt = turnPrompt(input, state, deps, persona);
  const schema = isAnalyst ? AnalystTurnAnswer : TurnAnswer;
  const answer: DebateTurnAnswer = await askModel(deps, turnTask(persona), prompt, schema, 0.7);

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
};

/**
 * Phase `vote` (README, "prove/debate", vote and tally): the persona at `speaker` votes (a re-run
 * replaces its earlier vote). After the sixth vote the verdict is tallied ({@link verdictFor}) and
 * the state moves to `report`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const voteStep: Step = async (input, state, deps) => {
  const persona = PERSONAS[state.speaker] as Persona;
  const prompt = votePrompt(input, state, deps, persona);
  const answer = await askModel(deps, voteTask(persona), prompt, VoteAnswer, 0.2);
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
};

/**
 * Phase `report` (README, "prove/debate", report), two steps: first the execution roadmap (APPROVED,
 * CONDITIONAL_APPROVED; with every condition of the CONDITIONAL votes) or the kill brief (REJECTED),
 * kept in `output`; then the Lean Canvas or the decision brief, which ends the job with the `ProveResult`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors); `Error` when `output` does not
 *   match the verdict (a state no step produces)
 */
export const reportStep: Step = async (input, state, deps) => {
  const verdict = state.verdict ?? verdictFor(countVotes(state.votes));
  const approved = verdict !== 'REJECTED';
  const counts = countVotes(state.votes);

  if (state.output === null) {
    if (approved) {
      const conditions = mergedConditions(state.votes);
      const prompt = reportPrompt('roadmap', input, state, deps, verdict, counts, conditions);
      const answer = await askModel(deps, REPORT_TASKS.roadmap, prompt, RoadmapAnswer, 0.3);
      const output: ExecutionRoadmap = { kind: 'execution_roadmap', ...answer, conditions };
      return advance(state, { output }, 'Report · execution roadmap');
    }
    const prompt = reportPrompt('killBrief', input, state, deps, verdict, counts);
    const answer = await askModel(deps, REPORT_TASKS.killBrief, prompt, KillBriefAnswer, 0.3);
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
    const prompt = reportPrompt('leanCanvas', input, state, deps, verdict, counts);
    const answer = await askModel(deps, REPORT_TASKS.leanCanvas, prompt, LeanCanvasAnswer, 0.3);
    const summary: LeanCanvas = { kind: 'lean_canvas', ...answer };
    const result: ProveResult = {
      verdict: verdict as 'APPROVED' | 'CONDITIONAL_APPROVED',
      report: { output: state.output, summary, pivot_report: null },
      ...common,
    };
    return { kind: 'done', result, label: 'Report · Lean Canvas' };
  }
  if (!approved && state.output.kind === 'kill_brief') {
    const prompt = reportPrompt('decisionBrief', input, state, deps, verdict, counts);
    const answer = await askModel(deps, REPORT_TASKS.decisionBrief, prompt, DecisionBriefAnswer, 0.3);
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
};

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
