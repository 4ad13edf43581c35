import type { ForgeJobInput, ScoutSectorData } from '@repo/compute';
import { clip, describeSessionConfig, isoDate, type Prompt } from '../render';
import type { PipelineDeps } from '../types';
import {
  BRAINSTORMERS,
  type Candidate,
  type Critique,
  type ForgeState,
  type Refined,
  type Scored,
} from './state';

/** Task names of the forge LLM calls (README, "LLM task names"), one per round. */
export const FORGE_TASKS = {
  ideas: 'forge_r1_ideas',
  critique: 'forge_r2_critique',
  refine: 'forge_r3_refine',
  score: 'forge_r4_score',
  rank: 'forge_r5_rank',
} as const;

/** The agent of round 3 (refinement). */
export const REFINER = 'Product Architect';
/** The agent of round 4 (scoring). */
export const SCORER = 'Investment Analyst';
/** The agent of round 5 (final ranking). */
export const CHAIR = 'Chair';

/** One of the {@link BRAINSTORMERS}. */
export type Brainstormer = (typeof BRAINSTORMERS)[number];

const AGENT_BRIEFS: Record<Brainstormer, string> = {
  'Trend Scout': 'You spot ideas riding the fastest trends and newest enabling technology in the scout data.',
  'Pain Miner':
    'You start from the most intense, most mentioned customer pains in the scout data and the gaps nobody serves.',
  Contrarian:
    'You look for ideas others would dismiss: unfashionable markets, inverted assumptions, boring but profitable niches.',
  'Business Modeler':
    'You look for ideas with the clearest path to revenue: who pays, how much, how often, and how to reach them cheaply.',
};

function renderScout(scout: readonly ScoutSectorData[]): string {
  if (scout.length === 0) return '(no scout data for these sectors)';
  return scout
    .map((s) => {
      const gaps = s.gaps
        .slice(0, 5)
        .map(
          (g) =>
            `- Gap: ${clip(g.title, 200)} — trend: ${clip(g.trend_signal.insight, 200)}; pains: ${g.pain_signals.map((p) => `${p.theme} (${p.severity})`).join(', ')}`,
        );
      const pains = s.painClusters
        .slice(0, 5)
        .map(
          (p) =>
            `- Pain: ${clip(p.theme, 120)} — ${clip(p.description, 200)} (${p.mentions} mentions, ${p.intensity})`,
        );
      const trends = s.trends
        .slice(0, 5)
        .map((t) => `- Trend: ${clip(t.title, 160)} — ${clip(t.description, 200)} (${t.velocity})`);
      const keywords = s.keywords
        .slice(0, 10)
        .map((k) => `${k.keyword} (${k.count})`)
        .join(', ');
      return [
        `## Sector ${s.sector} (scan ${s.generatedFrom ?? 'none'})`,
        ...gaps,
        ...pains,
        ...trends,
        keywords ? `Keywords: ${keywords}` : '',
      ]
        .filter(Boolean)
        .join('\n');
    })
    .join('\n\n');
}

function brief(input: ForgeJobInput, deps: PipelineDeps): string {
  return [
    `Today: ${isoDate(deps.now())}`,
    `# Sectors\n${input.sectors.length ? input.sectors.join(', ') : '(any)'}`,
    `# Product modes\n${input.product_modes.length ? input.product_modes.join(', ') : '(any)'}`,
    `# Founders' context\n${input.context ? clip(input.context, 10_000) : '(none given)'}`,
    `# Session config\n${describeSessionConfig(input.session_config)}`,
    `# Scout data\n${renderScout(input.scout)}`,
  ].join('\n\n');
}

function renderCandidates(candidates: readonly Candidate[]): string {
  return candidates
    .map(
      (c) =>
        `- ${c.id} "${c.name}" (by ${c.proposed_by}): ${clip(c.problem, 300)} | market: ${clip(c.target_market, 160)} | revenue: ${clip(c.revenue_model, 160)}`,
    )
    .join('\n');
}

function renderRefined(r: Refined): string {
  const f = r.feasibility;
  return `${r.id} "${r.name}": ${clip(r.problem, 300)} | market: ${clip(r.target_market, 160)} | revenue model: ${clip(r.revenue_model, 160)} | moat: ${clip(r.moat, 160)} | feasibility: ${f.lean_feasibility} (cost ratio ${f.cost_ratio}, time ratio ${f.time_ratio}) | projected $${f.projected_annual_revenue_usd}/year${f.low_roi ? ' (LOW_ROI)' : ''}`;
}

const SYSTEM_INTRO =
  'You take part in a five-round venture brainstorm (divergent generation, critique, refinement, scoring, final ranking) that produces ranked startup ideas for the founders described in the session config. Be concrete and realistic about their budget, timeline and team.';

/**
 * Round 1 prompt (README, "forge/ideate", divergent generation): the agent's brief and the ideas
 * already proposed, asking for 1 to 3 new ones.
 * @param input the job input @param state the state (its candidates) @param deps for today's date
 * @param agent the speaking brainstormer
 */
export function ideasPrompt(
  input: ForgeJobInput,
  state: ForgeState,
  deps: PipelineDeps,
  agent: Brainstormer,
): Prompt {
  const system = `${SYSTEM_INTRO}\n\nRound 1, divergent generation. You are the ${agent}. ${AGENT_BRIEFS[agent]} Propose 1 to 3 distinct ideas that differ from those already proposed.`;
  const user = `${brief(input, deps)}\n\n# Already proposed\n${state.candidates.length ? renderCandidates(state.candidates) : '(none yet)'}`;
  return { system, user };
}

/**
 * Round 2 prompt (README, "forge/ideate", critique): the candidates, asking the agent for the weakest
 * assumption of each with a severity.
 * @param input the job input @param state the state (its candidates) @param deps for today's date
 * @param agent the speaking brainstormer
 */
export function critiquePrompt(
  input: ForgeJobInput,
  state: ForgeState,
  deps: PipelineDeps,
  agent: Brainstormer,
): Prompt {
  const system = `${SYSTEM_INTRO}\n\nRound 2, critique. You are the ${agent}. ${AGENT_BRIEFS[agent]} Critique the candidates by id: the weakest assumption of each, with a severity (minor, major, fatal).`;
  const user = `${brief(input, deps)}\n\n# Candidates\n${renderCandidates(state.candidates)}`;
  return { system, user };
}

/**
 * Round 3 prompt (README, "forge/ideate", refinement): one candidate and its critiques, asking the
 * {@link REFINER} for the refined proposal and the feasibility estimates.
 * @param input the job input @param deps for today's date @param id the candidate's id
 * @param candidate the candidate @param critiques the critiques of that candidate
 */
export function refinePrompt(
  input: ForgeJobInput,
  deps: PipelineDeps,
  id: string,
  candidate: Candidate,
  critiques: readonly Critique[],
): Prompt {
  const system =
    `${SYSTEM_INTRO}\n\nRound 3, refinement. You are the ${REFINER}. Turn the candidate into a sharp, buildable proposal that answers its critiques: ` +
    'name, problem, target market, why now, revenue model, moat, key metrics, a validation plan (cheap experiments first), kill switches (observations that end the venture), tags, ' +
    'and estimates: cash cost and build weeks of a first sellable version for a reference team of 2-3 people, and projected annual revenue in USD once launched.';
  const user = `${brief(input, deps)}\n\n# Candidate ${id}\n${JSON.stringify(candidate)}\n\n# Critiques\n${critiques.length ? critiques.map((c) => `- ${c.agent} (${c.severity}): ${c.critique}`).join('\n') : '(none)'}`;
  return { system, user };
}

/**
 * Round 4 prompt (README, "forge/ideate", scoring): one refined idea with its feasibility, asking the
 * {@link SCORER} for RICE inputs and a kill score.
 * @param input the job input @param deps for today's date @param refinedIdea the idea to score
 */
export function scorePrompt(input: ForgeJobInput, deps: PipelineDeps, refinedIdea: Refined): Prompt {
  const system =
    `${SYSTEM_INTRO}\n\nRound 4, scoring. You are the ${SCORER}. Score the idea with RICE (reach per quarter, impact 0.25-3, confidence 0-1, effort in person-months) ` +
    'and a kill score from 0 to 100 (higher = more reasons to kill it), with the main kill reasons. The feasibility figures were computed from the estimates and the session config.';
  const user = `${brief(input, deps)}\n\n# Idea\n${renderRefined(refinedIdea)}\nKey metrics: ${refinedIdea.key_metrics.join('; ')}\nKill switches: ${refinedIdea.kill_switches.join('; ')}`;
  return { system, user };
}

/**
 * Round 5 prompt (README, "forge/ideate", final ranking): every shortlisted idea with its RICE and kill
 * scores, asking the {@link CHAIR} for the ranking and a summary. Expects every shortlisted id to be
 * refined and scored (rounds 3 and 4 done).
 * @param input the job input @param state the state after round 4 @param deps for today's date
 */
export function rankPrompt(input: ForgeJobInput, state: ForgeState, deps: PipelineDeps): Prompt {
  const ideas = state.shortlist.map((id) => {
    const r = state.refined.find((x) => x.id === id) as Refined;
    const s = state.scored.find((x) => x.id === id) as Scored;
    return `${renderRefined(r)} | RICE ${s.rice.score} | kill score ${s.kill_score}`;
  });
  const system =
    `${SYSTEM_INTRO}\n\nRound 5, final ranking. You are the ${CHAIR}. Rank every idea by id, best first, weighing RICE, kill score, lean feasibility and revenue against the threshold, ` +
    'with a one-sentence rationale each, and summarise the brainstorm.';
  const user = `${brief(input, deps)}\n\n# Ideas\n${ideas.join('\n')}`;
  return { system, user };
}
