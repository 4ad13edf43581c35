import { z } from 'zod';
import {
  FeasibilityAssessment,
  ForgeJobInput,
  ForgeResult,
  ForgeRound,
  RiceScore,
  type ForgeIdea,
  type ScoutSectorData,
} from '@repo/compute';
import { assessFeasibility, tagsFor } from '../feasibility';
import { nextProgress } from '../progress';
import { riceScore } from '../rice';
import { clip, describeSessionConfig, isoDate, roundedInt, upTo } from './render';
import type { Pipeline, PipelineDeps, StepOutcome } from './types';

/** The brainstorming agents of rounds 1 (divergent generation) and 2 (critique), in speaking order. */
export const BRAINSTORMERS = ['Trend Scout', 'Pain Miner', 'Contrarian', 'Business Modeler'] as const;
/** The agent of round 3 (refinement). */
export const REFINER = 'Product Architect';
/** The agent of round 4 (scoring). */
export const SCORER = 'Investment Analyst';
/** The agent of round 5 (final ranking). */
export const CHAIR = 'Chair';
/** Candidate ideas kept from round 1 at most. */
export const MAX_CANDIDATES = 10;
/** Ideas carried from the critique into refinement, scoring and the result at most. */
export const SHORTLIST_SIZE = 5;
/** Round titles, by round number - 1. */
export const ROUND_TITLES = [
  'Divergent generation',
  'Critique',
  'Refinement',
  'Scoring',
  'Final ranking',
] as const;

/** Task names of the forge LLM calls. */
export const FORGE_TASKS = {
  ideas: 'forge_r1_ideas',
  critique: 'forge_r2_critique',
  refine: 'forge_r3_refine',
  score: 'forge_r4_score',
  rank: 'forge_r5_rank',
} as const;

const AGENT_BRIEFS: Record<(typeof BRAINSTORMERS)[number], string> = {
  'Trend Scout': 'You spot ideas riding the fastest trends and newest enabling technology in the scout data.',
  'Pain Miner':
    'You start from the most intense, most mentioned customer pains in the scout data and the gaps nobody serves.',
  Contrarian:
    'You look for ideas others would dismiss: unfashionable markets, inverted assumptions, boring but profitable niches.',
  'Business Modeler':
    'You look for ideas with the clearest path to revenue: who pays, how much, how often, and how to reach them cheaply.',
};

// ---- What the model is asked for ----

const IdeaSketch = z.object({
  name: z
    .string()
    .min(1)
    .transform((name) => clip(name, 120)),
  problem: z.string().min(1),
  target_market: z.string().min(1),
  why_now: z.string().min(1),
  revenue_model: z.string().min(1),
});

/** Round 1 answer: one agent's 1–3 ideas. */
export const IdeasAnswer = z.object({ ideas: upTo(IdeaSketch, 3, 1) });

/** Round 2 answer: one agent's critiques of the candidates, by id. */
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

/** Round 3 answer: one idea, refined, with the estimates the feasibility math needs. */
export const RefineAnswer = IdeaSketch.extend({
  moat: z.string().min(1),
  key_metrics: upTo(z.string().min(1), 6, 1),
  validation_plan: upTo(z.string().min(1), 8, 1),
  kill_switches: upTo(z.string().min(1), 6, 1),
  tags: upTo(z.string().min(1), 8).default([]),
  estimated_build_cost_usd: z.number().nonnegative().describe('cash cost of a first sellable version, USD'),
  estimated_build_weeks: z.number().positive().describe('build time for a team of 2-3 people, weeks'),
  projected_annual_revenue_usd: z
    .number()
    .nonnegative()
    .describe('annual revenue once launched, USD per year'),
});

/** Round 4 answer: one idea's RICE inputs and kill score. */
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

/** Round 5 answer: the ranking by id, best first. */
export const RankAnswer = z.object({
  ranking: z.array(z.object({ idea_id: z.string().min(1), rationale: z.string().min(1) })).min(1),
  summary: z.string().min(1),
});

// ---- State ----

const Candidate = IdeaSketch.extend({ id: z.string(), proposed_by: z.string() });
const Critique = z.object({
  agent: z.string(),
  idea_id: z.string(),
  critique: z.string(),
  severity: z.enum(['minor', 'major', 'fatal']),
});
const Refined = z.object({
  id: z.string(),
  name: z.string(),
  problem: z.string(),
  target_market: z.string(),
  why_now: z.string(),
  revenue_model: z.string(),
  moat: z.string(),
  key_metrics: z.array(z.string()),
  validation_plan: z.array(z.string()),
  kill_switches: z.array(z.string()),
  tags: z.array(z.string()),
  feasibility: FeasibilityAssessment,
});
const Scored = z.object({
  id: z.string(),
  rice: RiceScore,
  kill_score: z.number().int().min(0).max(100),
  kill_reasons: z.array(z.string()),
});

/** The brainstorm's state between steps. */
export const ForgeState = z.strictObject({
  phase: z.enum(['r1', 'r2', 'r3', 'r4', 'r5']),
  /** Next agent (r1, r2) or next shortlisted idea (r3, r4). */
  cursor: z.number().int().nonnegative(),
  candidates: z.array(Candidate),
  critiques: z.array(Critique),
  /** Candidate ids chosen after the critique, in order. */
  shortlist: z.array(z.string()),
  refined: z.array(Refined),
  scored: z.array(Scored),
  rounds: z.array(ForgeRound),
  stepsDone: z.number().int().nonnegative(),
  progressPct: z.number().int().min(0).max(99),
});
/** Inferred type of {@link ForgeState}. */
export type ForgeState = z.infer<typeof ForgeState>;
type Candidate = z.infer<typeof Candidate>;
type Critique = z.infer<typeof Critique>;
type Refined = z.infer<typeof Refined>;
type Scored = z.infer<typeof Scored>;
type ForgeOutcome = StepOutcome<ForgeState, ForgeResult>;

function initialState(): ForgeState {
  return {
    phase: 'r1',
    cursor: 0,
    candidates: [],
    critiques: [],
    shortlist: [],
    refined: [],
    scored: [],
    rounds: [],
    stepsDone: 0,
    progressPct: 0,
  };
}

function plannedSteps(state: ForgeState): number {
  const shortlist = state.shortlist.length || SHORTLIST_SIZE;
  return BRAINSTORMERS.length * 2 + shortlist * 2 + 1;
}

function advance(state: ForgeState, patch: Partial<ForgeState>, label: string): ForgeOutcome {
  const next: ForgeState = { ...state, ...patch, stepsDone: state.stepsDone + 1 };
  const progressPct = nextProgress(state.progressPct, next.stepsDone, plannedSteps(next));
  return { kind: 'continue', state: { ...next, progressPct }, progressPct, label };
}

function addTranscript(
  rounds: ForgeState['rounds'],
  round: number,
  agent: string,
  content: string,
): ForgeState['rounds'] {
  const existing = rounds.find((r) => r.round === round);
  if (!existing)
    return [
      ...rounds,
      { round, title: ROUND_TITLES[round - 1] ?? `Round ${round}`, transcript: [{ agent, content }] },
    ];
  return rounds.map((r) =>
    r.round === round ? { ...r, transcript: [...r.transcript, { agent, content }] } : r,
  );
}

/** Lowercase letters and digits only: two ideas with the same key are the same idea. */
export function ideaKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '');
}

/**
 * Candidates chosen for refinement: the ones the critique hurt least (fatal 5, major 2, minor 0.5
 * points per critique), ties in proposal order, at most {@link SHORTLIST_SIZE}.
 */
export function shortlistOf(candidates: readonly Candidate[], critiques: readonly Critique[]): string[] {
  const weight = { fatal: 5, major: 2, minor: 0.5 } as const;
  const penalty = new Map(candidates.map((c) => [c.id, 0]));
  for (const c of critiques)
    if (penalty.has(c.idea_id)) penalty.set(c.idea_id, (penalty.get(c.idea_id) ?? 0) + weight[c.severity]);
  return candidates
    .map((c, index) => ({ id: c.id, index, penalty: penalty.get(c.id) ?? 0 }))
    .sort((a, b) => a.penalty - b.penalty || a.index - b.index)
    .slice(0, SHORTLIST_SIZE)
    .map((c) => c.id);
}

/**
 * The final order: the chair's ranking (known, distinct ids), then any shortlisted idea it left out
 * by RICE score (high first), kill score (low first) and shortlist order.
 */
export function finalOrder(
  shortlist: readonly string[],
  ranking: readonly { idea_id: string }[],
  scored: readonly Scored[],
): string[] {
  const out: string[] = [];
  for (const { idea_id } of ranking) {
    const id = idea_id.trim();
    if (shortlist.includes(id) && !out.includes(id)) out.push(id);
  }
  const score = (id: string) => scored.find((s) => s.id === id);
  const rest = shortlist
    .filter((id) => !out.includes(id))
    .map((id, index) => ({ id, index, rice: score(id)?.rice.score ?? 0, kill: score(id)?.kill_score ?? 100 }))
    .sort((a, b) => b.rice - a.rice || a.kill - b.kill || a.index - b.index);
  return [...out, ...rest.map((r) => r.id)];
}

// ---- Prompts ----

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

const SYSTEM_INTRO =
  'You take part in a five-round venture brainstorm (divergent generation, critique, refinement, scoring, final ranking) that produces ranked startup ideas for the founders described in the session config. Be concrete and realistic about their budget, timeline and team.';

// ---- Steps ----

async function ideasStep(input: ForgeJobInput, state: ForgeState, deps: PipelineDeps): Promise<ForgeOutcome> {
  const agent = BRAINSTORMERS[state.cursor] ?? BRAINSTORMERS[0];
  const system = `${SYSTEM_INTRO}\n\nRound 1, divergent generation. You are the ${agent}. ${AGENT_BRIEFS[agent]} Propose 1 to 3 distinct ideas that differ from those already proposed.`;
  const user = `${brief(input, deps)}\n\n# Already proposed\n${state.candidates.length ? renderCandidates(state.candidates) : '(none yet)'}`;
  const answer = (
    await deps.llm.complete({ task: FORGE_TASKS.ideas, system, user, schema: IdeasAnswer, temperature: 0.9 })
  ).value;
  const candidates = [...state.candidates];
  const added: Candidate[] = [];
  for (const idea of answer.ideas) {
    if (candidates.length >= MAX_CANDIDATES) break;
    if (candidates.some((c) => ideaKey(c.name) === ideaKey(idea.name))) continue;
    const candidate: Candidate = {
      ...idea,
      name: idea.name.trim(),
      id: `I${candidates.length + 1}`,
      proposed_by: agent,
    };
    candidates.push(candidate);
    added.push(candidate);
  }
  const content = added.length
    ? added
        .map(
          (c) =>
            `${c.id} "${c.name}": ${c.problem} Market: ${c.target_market}. Why now: ${c.why_now}. Revenue: ${c.revenue_model}.`,
        )
        .join('\n')
    : 'No new idea (all duplicates of earlier proposals).';
  const rounds = addTranscript(state.rounds, 1, agent, content);
  const label = `Round 1 · ${agent}`;
  if (state.cursor < BRAINSTORMERS.length - 1)
    return advance(state, { candidates, rounds, cursor: state.cursor + 1 }, label);
  return advance(state, { candidates, rounds, phase: 'r2', cursor: 0 }, label);
}

async function critiqueStep(
  input: ForgeJobInput,
  state: ForgeState,
  deps: PipelineDeps,
): Promise<ForgeOutcome> {
  const agent = BRAINSTORMERS[state.cursor] ?? BRAINSTORMERS[0];
  const system = `${SYSTEM_INTRO}\n\nRound 2, critique. You are the ${agent}. ${AGENT_BRIEFS[agent]} Critique the candidates by id: the weakest assumption of each, with a severity (minor, major, fatal).`;
  const user = `${brief(input, deps)}\n\n# Candidates\n${renderCandidates(state.candidates)}`;
  const answer = (
    await deps.llm.complete({
      task: FORGE_TASKS.critique,
      system,
      user,
      schema: CritiqueAnswer,
      temperature: 0.5,
    })
  ).value;
  const known = new Set(state.candidates.map((c) => c.id));
  const mine = answer.critiques
    .filter((c) => known.has(c.idea_id.trim()))
    .map((c) => ({ agent, idea_id: c.idea_id.trim(), critique: c.critique, severity: c.severity }));
  const critiques = [...state.critiques.filter((c) => c.agent !== agent), ...mine];
  const content = mine.length
    ? mine.map((c) => `${c.idea_id} (${c.severity}): ${c.critique}`).join('\n')
    : 'No critique of a known candidate.';
  const rounds = addTranscript(state.rounds, 2, agent, content);
  const label = `Round 2 · ${agent}`;
  if (state.cursor < BRAINSTORMERS.length - 1)
    return advance(state, { critiques, rounds, cursor: state.cursor + 1 }, label);
  return advance(
    state,
    { critiques, rounds, shortlist: shortlistOf(state.candidates, critiques), phase: 'r3', cursor: 0 },
    label,
  );
}

async function refineStep(
  input: ForgeJobInput,
  state: ForgeState,
  deps: PipelineDeps,
): Promise<ForgeOutcome> {
  const id = state.shortlist[state.cursor] as string;
  const candidate = state.candidates.find((c) => c.id === id) as Candidate;
  const critiques = state.critiques.filter((c) => c.idea_id === id);
  const system =
    `${SYSTEM_INTRO}\n\nRound 3, refinement. You are the ${REFINER}. Turn the candidate into a sharp, buildable proposal that answers its critiques: ` +
    'name, problem, target market, why now, revenue model, moat, key metrics, a validation plan (cheap experiments first), kill switches (observations that end the venture), tags, ' +
    'and estimates: cash cost and build weeks of a first sellable version for a reference team of 2-3 people, and projected annual revenue in USD once launched.';
  const user = `${brief(input, deps)}\n\n# Candidate ${id}\n${JSON.stringify(candidate)}\n\n# Critiques\n${critiques.length ? critiques.map((c) => `- ${c.agent} (${c.severity}): ${c.critique}`).join('\n') : '(none)'}`;
  const answer = (
    await deps.llm.complete({
      task: FORGE_TASKS.refine,
      system,
      user,
      schema: RefineAnswer,
      temperature: 0.6,
    })
  ).value;
  const feasibility = assessFeasibility(answer, input.session_config);
  const refinedIdea: Refined = {
    id,
    name: answer.name.trim(),
    problem: answer.problem,
    target_market: answer.target_market,
    why_now: answer.why_now,
    revenue_model: answer.revenue_model,
    moat: answer.moat,
    key_metrics: answer.key_metrics,
    validation_plan: answer.validation_plan,
    kill_switches: answer.kill_switches,
    tags: tagsFor(answer.tags, feasibility),
    feasibility,
  };
  const refined = [...state.refined.filter((r) => r.id !== id), refinedIdea];
  const rounds = addTranscript(
    state.rounds,
    3,
    REFINER,
    `${id} "${refinedIdea.name}": moat: ${refinedIdea.moat}. Build ~$${feasibility.estimated_build_cost_usd} in ${feasibility.estimated_build_weeks} weeks (reference team); projected $${feasibility.projected_annual_revenue_usd}/year → ${feasibility.lean_feasibility}${feasibility.low_roi ? ', LOW_ROI' : ''}.`,
  );
  const label = `Round 3 · refine ${id}`;
  if (state.cursor < state.shortlist.length - 1)
    return advance(state, { refined, rounds, cursor: state.cursor + 1 }, label);
  return advance(state, { refined, rounds, phase: 'r4', cursor: 0 }, label);
}

function renderRefined(r: Refined): string {
  const f = r.feasibility;
  return `${r.id} "${r.name}": ${clip(r.problem, 300)} | market: ${clip(r.target_market, 160)} | revenue model: ${clip(r.revenue_model, 160)} | moat: ${clip(r.moat, 160)} | feasibility: ${f.lean_feasibility} (cost ratio ${f.cost_ratio}, time ratio ${f.time_ratio}) | projected $${f.projected_annual_revenue_usd}/year${f.low_roi ? ' (LOW_ROI)' : ''}`;
}

async function scoreStep(input: ForgeJobInput, state: ForgeState, deps: PipelineDeps): Promise<ForgeOutcome> {
  const id = state.shortlist[state.cursor] as string;
  const refinedIdea = state.refined.find((r) => r.id === id) as Refined;
  const system =
    `${SYSTEM_INTRO}\n\nRound 4, scoring. You are the ${SCORER}. Score the idea with RICE (reach per quarter, impact 0.25-3, confidence 0-1, effort in person-months) ` +
    'and a kill score from 0 to 100 (higher = more reasons to kill it), with the main kill reasons. The feasibility figures were computed from the estimates and the session config.';
  const user = `${brief(input, deps)}\n\n# Idea\n${renderRefined(refinedIdea)}\nKey metrics: ${refinedIdea.key_metrics.join('; ')}\nKill switches: ${refinedIdea.kill_switches.join('; ')}`;
  const answer = (
    await deps.llm.complete({ task: FORGE_TASKS.score, system, user, schema: ScoreAnswer, temperature: 0.2 })
  ).value;
  const scoredIdea: Scored = {
    id,
    rice: riceScore(answer.rice),
    kill_score: answer.kill_score,
    kill_reasons: answer.kill_reasons,
  };
  const scored = [...state.scored.filter((s) => s.id !== id), scoredIdea];
  const rounds = addTranscript(
    state.rounds,
    4,
    SCORER,
    `${id} "${refinedIdea.name}": RICE ${scoredIdea.rice.reach} × ${scoredIdea.rice.impact} × ${scoredIdea.rice.confidence} / ${scoredIdea.rice.effort} = ${scoredIdea.rice.score}; kill score ${scoredIdea.kill_score}${scoredIdea.kill_reasons.length ? ` (${scoredIdea.kill_reasons.join('; ')})` : ''}.`,
  );
  const label = `Round 4 · score ${id}`;
  if (state.cursor < state.shortlist.length - 1)
    return advance(state, { scored, rounds, cursor: state.cursor + 1 }, label);
  return advance(state, { scored, rounds, phase: 'r5', cursor: 0 }, label);
}

async function rankStep(input: ForgeJobInput, state: ForgeState, deps: PipelineDeps): Promise<ForgeOutcome> {
  const ideas = state.shortlist.map((id) => {
    const r = state.refined.find((x) => x.id === id) as Refined;
    const s = state.scored.find((x) => x.id === id) as Scored;
    return `${renderRefined(r)} | RICE ${s.rice.score} | kill score ${s.kill_score}`;
  });
  const system =
    `${SYSTEM_INTRO}\n\nRound 5, final ranking. You are the ${CHAIR}. Rank every idea by id, best first, weighing RICE, kill score, lean feasibility and revenue against the threshold, ` +
    'with a one-sentence rationale each, and summarise the brainstorm.';
  const user = `${brief(input, deps)}\n\n# Ideas\n${ideas.join('\n')}`;
  const answer = (
    await deps.llm.complete({ task: FORGE_TASKS.rank, system, user, schema: RankAnswer, temperature: 0.2 })
  ).value;
  const order = finalOrder(state.shortlist, answer.ranking, state.scored);
  const rationale = new Map(answer.ranking.map((r) => [r.idea_id.trim(), r.rationale]));
  const rounds = addTranscript(
    state.rounds,
    5,
    CHAIR,
    `${answer.summary}\n${order.map((id, i) => `${i + 1}. ${id} "${state.refined.find((r) => r.id === id)?.name ?? id}"${rationale.has(id) ? `: ${rationale.get(id)}` : ''}`).join('\n')}`,
  );
  const result: ForgeResult = {
    ideas: order.map((id, index) =>
      toIdea(
        index + 1,
        state.refined.find((r) => r.id === id) as Refined,
        state.scored.find((s) => s.id === id) as Scored,
      ),
    ),
    rounds,
    session_config: input.session_config,
    sectors: input.sectors,
    scout_generated_from: input.scout.map((s) => ({ sector: s.sector, generatedFrom: s.generatedFrom })),
  };
  return { kind: 'done', result, label: 'Round 5 · final ranking' };
}

function toIdea(rank: number, r: Refined, s: Scored): ForgeIdea {
  return {
    rank,
    name: r.name,
    problem: r.problem,
    target_market: r.target_market,
    why_now: r.why_now,
    revenue_model: r.revenue_model,
    moat: r.moat,
    rice: s.rice,
    kill_score: s.kill_score,
    key_metrics: r.key_metrics,
    validation_plan: r.validation_plan,
    kill_switches: r.kill_switches,
    lean_feasibility: r.feasibility.lean_feasibility,
    feasibility: r.feasibility,
    projected_annual_revenue_usd: r.feasibility.projected_annual_revenue_usd,
    estimated_build_cost_usd: r.feasibility.estimated_build_cost_usd,
    estimated_build_weeks: r.feasibility.estimated_build_weeks,
    tags: r.tags,
  };
}

/**
 * forge/ideate (market-intel spec, "POST /api/v1/forge/ideate"): five rounds over the sectors' scout
 * data, the context and the product modes — 1 divergent generation (four agents, one step each, 1–3
 * ideas per agent, duplicates by name dropped, at most {@link MAX_CANDIDATES}), 2 critique (the same
 * agents, one step each; the {@link SHORTLIST_SIZE} least-hurt candidates go on), 3 refinement (one
 * step per shortlisted idea, with the estimates behind {@link assessFeasibility} and the LOW_ROI tag),
 * 4 scoring (one step per idea: RICE computed by {@link riceScore}, kill score), 5 final ranking (one
 * step). At most 4 + 4 + 5 + 5 + 1 = 19 steps.
 */
export const forgePipeline: Pipeline<ForgeJobInput, ForgeState, ForgeResult> = {
  kind: 'forge',
  input: ForgeJobInput,
  state: ForgeState,
  result: ForgeResult,
  etaMinutes: 30,
  init: () => initialState(),
  async step(input, state, deps) {
    switch (state.phase) {
      case 'r1':
        return ideasStep(input, state, deps);
      case 'r2':
        return critiqueStep(input, state, deps);
      case 'r3':
        return refineStep(input, state, deps);
      case 'r4':
        return scoreStep(input, state, deps);
      case 'r5':
        return rankStep(input, state, deps);
    }
  },
};
