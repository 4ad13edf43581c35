import type { DebateSource, PanelVote, ProveJobInput, VoteCounts } from '@repo/compute';
import { clip, describeSessionConfig, isoDate, type Prompt } from '../render';
import type { PipelineDeps } from '../types';
import { MAX_QUERIES_PER_TURN } from './schemas';
import { MAX_ROUNDS, type Persona, type ProveState } from './state';

/** The task name of a persona's debate turn, e.g. `prove_turn_challenger` (README, "LLM task names"). */
export function turnTask(persona: Persona): string {
  return `prove_turn_${persona.toLowerCase()}`;
}
/** The task name of a persona's final vote, e.g. `prove_vote_analyst` (README, "LLM task names"). */
export function voteTask(persona: Persona): string {
  return `prove_vote_${persona.toLowerCase()}`;
}
/** Task names of the report steps (README, "LLM task names"). */
export const REPORT_TASKS = {
  roadmap: 'prove_roadmap',
  leanCanvas: 'prove_lean_canvas',
  killBrief: 'prove_kill_brief',
  decisionBrief: 'prove_decision_brief',
} as const;
/** A report section, by its key in {@link REPORT_TASKS}. */
export type ReportSection = keyof typeof REPORT_TASKS;

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

function describeVotes(votes: readonly PanelVote[]): string {
  return votes
    .map(
      (v) =>
        `- ${v.persona}: ${v.vote} — ${clip(v.rationale, 400)}${v.conditions?.length ? ` (conditions: ${v.conditions.join('; ')})` : ''}`,
    )
    .join('\n');
}

/** The vote counts as a phrase, e.g. `5 approve, 1 conditional, 0 reject` (also the decision brief's `vote_summary`). */
export function voteSummary(counts: VoteCounts): string {
  return `${counts.approve} approve, ${counts.conditional} conditional, ${counts.reject} reject`;
}

/**
 * A debate turn's prompt (README, "prove/debate", turns): the persona's brief, whether search is
 * available, whether it may close the debate, and the debate so far (each turn clipped to 1500
 * characters) with its search sources as `[S<n>]`.
 * @param input the job input @param state the state (round, debate, feasibility)
 * @param deps for today's date and whether a search provider is configured @param persona the speaker
 */
export function turnPrompt(
  input: ProveJobInput,
  state: ProveState,
  deps: PipelineDeps,
  persona: Persona,
): Prompt {
  const searchNote = deps.search
    ? `You may ask for up to ${MAX_QUERIES_PER_TURN} web searches (search_queries); their results are shared with the panel.`
    : 'Web search is not available in this session: leave search_queries empty.';
  const endNote =
    persona === 'Strategist'
      ? 'Set end_debate to true when another round would not change the outcome.'
      : 'Leave end_debate false.';
  const system = `${PANEL_INTRO}\n\nYou are the ${persona}. ${PERSONA_BRIEFS[persona]}\n${searchNote}\n${endNote}\nSet pivot_out only if you are convinced the idea is unsalvageable as stated and a different direction is clearly better; otherwise leave it null.`;
  const user = `${context(input, state, deps)}\n\nRound ${state.round} of at most ${MAX_ROUNDS}. Give the ${persona}'s turn.`;
  return { system, user };
}

/**
 * A final vote's prompt (README, "prove/debate", vote and tally): APPROVE, CONDITIONAL or REJECT with
 * a rationale, after the debate (each turn clipped to 800 characters).
 * @param input the job input @param state the state after the debate @param deps for today's date
 * @param persona the voter
 */
export function votePrompt(
  input: ProveJobInput,
  state: ProveState,
  deps: PipelineDeps,
  persona: Persona,
): Prompt {
  const system =
    `${PANEL_INTRO}\n\nYou are the ${persona}. ${PERSONA_BRIEFS[persona]}\nThe debate is over; cast your final vote on the idea for these founders: ` +
    'APPROVE (pursue it as proposed), CONDITIONAL (pursue it only if the conditions you list hold) or REJECT (do not pursue it). Give a short rationale.';
  const user = `${context(input, state, deps, 800)}\n\nCast the ${persona}'s vote.`;
  return { system, user };
}

const REPORT_REQUESTS = {
  roadmap: (input, conditions) =>
    `Write the execution roadmap: phases fitting the timeline (${input.session_config.timeline}), milestones by week, and the main risks with mitigations.${conditions.length ? ` The roadmap must satisfy these conditions: ${conditions.join('; ')}.` : ''}`,
  killBrief: () =>
    'Write the kill brief: exactly the 3 strongest reasons to reject the idea, each with its evidence from the debate, and the salvage paths (how parts of it could still be used).',
  leanCanvas: () => 'Write the one-page Lean Canvas (its nine boxes) for the idea as approved.',
  decisionBrief: () =>
    'Write the one-page decision brief explaining the rejection: a headline, the rationale, what would change the decision, and next steps for the founders.',
} satisfies Record<ReportSection, (input: ProveJobInput, conditions: readonly string[]) => string>;

/**
 * A report step's prompt (README, "prove/debate", report): the debate (turns clipped to 800
 * characters), the final vote with every rationale, and the request for one section.
 * @param section the section to write
 * @param input the job input @param state the state after the vote @param deps for today's date
 * @param verdict the verdict of the vote @param counts the vote counts
 * @param conditions the merged conditions the roadmap must satisfy (roadmap only; default none)
 */
export function reportPrompt(
  section: ReportSection,
  input: ProveJobInput,
  state: ProveState,
  deps: PipelineDeps,
  verdict: NonNullable<ProveState['verdict']>,
  counts: VoteCounts,
  conditions: readonly string[] = [],
): Prompt {
  const base = `${context(input, state, deps, 800)}\n\n# Final vote: ${verdict} (${voteSummary(counts)})\n${describeVotes(state.votes)}`;
  const system = `You write the panel's report on a startup idea after its debate and vote (verdict: ${verdict}). Be concrete, grounded in the debate, and sized for the founders' session config.`;
  return { system, user: `${base}\n\n${REPORT_REQUESTS[section](input, conditions)}` };
}
