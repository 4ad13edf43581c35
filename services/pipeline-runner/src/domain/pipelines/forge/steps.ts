import type { z } from 'zod';
import type { ForgeIdea, ForgeJobInput, ForgeResult } from '@repo/compute';
import { assessFeasibility, tagsFor } from '../../feasibility';
import { riceScore } from '../../rice';
import { askModel } from '../ask-model';
import type { Prompt } from '../render';
import type { PhaseStep } from '../phased';
import type { PipelineDeps } from '../types';
import {
  CHAIR,
  FORGE_TASKS,
  REFINER,
  SCORER,
  type Brainstormer,
  critiquePrompt,
  ideasPrompt,
  rankPrompt,
  refinePrompt,
  scorePrompt,
} from './prompts';
import { CritiqueAnswer, IdeasAnswer, RankAnswer, RefineAnswer, ScoreAnswer } from './schemas';
import {
  BRAINSTORMERS,
  MAX_CANDIDATES,
  addTranscript,
  advance,
  finalOrder,
  ideaKey,
  shortlistOf,
  type Candidate,
  type ForgeOutcome,
  type ForgeState,
  type Refined,
  type Scored,
  withIdea,
} from './state';

/** One step of the brainstorm: the step of its state's phase (`phasedPipeline`), never mutating the state. */
type Step = PhaseStep<ForgeJobInput, ForgeState, ForgeResult>;

/** What a brainstormer is asked in rounds 1 and 2: the task name, the prompt, the answer's schema, the temperature. */
interface BrainstormerTurn<T> {
  task: string;
  prompt: (input: ForgeJobInput, state: ForgeState, deps: PipelineDeps, agent: Brainstormer) => Prompt;
  schema: z.ZodType<T>;
  temperature: number;
}

const IDEAS_TURN: BrainstormerTurn<z.infer<typeof IdeasAnswer>> = {
  task: FORGE_TASKS.ideas,
  prompt: ideasPrompt,
  schema: IdeasAnswer,
  temperature: 0.9,
};
const CRITIQUE_TURN: BrainstormerTurn<z.infer<typeof CritiqueAnswer>> = {
  task: FORGE_TASKS.critique,
  prompt: critiquePrompt,
  schema: CritiqueAnswer,
  temperature: 0.5,
};

/**
 * The turn of the brainstormer at `state.cursor` (README, "forge/ideate"): the prompt `turn` builds
 * for that agent, and the model's answer validated by its schema.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
async function askBrainstormer<T>(
  turn: BrainstormerTurn<T>,
  input: ForgeJobInput,
  state: ForgeState,
  deps: PipelineDeps,
): Promise<{ agent: Brainstormer; answer: T }> {
  const agent = BRAINSTORMERS[state.cursor] ?? BRAINSTORMERS[0];
  const answer = await askModel(
    deps,
    turn.task,
    turn.prompt(input, state, deps, agent),
    turn.schema,
    turn.temperature,
  );
  return { agent, answer };
}

/**
 * Phase `r1`, round 1 (README, "forge/ideate", divergent generation): the agent at `cursor` proposes
 * 1–3 ideas; duplicates by name are dropped, at most {@link MAX_CANDIDATES} are kept (ids `I1`, …).
 * After the last agent the state moves to `r2`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const ideasStep: Step = async (input, state, deps) => {
  const { agent, answer } = await askBrainstormer(IDEAS_TURN, input, state, deps);
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
  return afterTurn(state, BRAINSTORMERS.length, { candidates, rounds }, `Round 1 · ${agent}`, {
    phase: 'r2',
  });
};

/**
 * Phase `r2`, round 2 (README, "forge/ideate", critique): the agent at `cursor` critiques the
 * candidates (critiques of unknown ids are dropped; a re-run replaces the agent's earlier ones).
 * After the last agent the shortlist is drawn ({@link shortlistOf}) and the state moves to `r3`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const critiqueStep: Step = async (input, state, deps) => {
  const { agent, answer } = await askBrainstormer(CRITIQUE_TURN, input, state, deps);
  const known = new Set(state.candidates.map((c) => c.id));
  const mine = answer.critiques
    .filter((c) => known.has(c.idea_id.trim()))
    .map((c) => ({ agent, idea_id: c.idea_id.trim(), critique: c.critique, severity: c.severity }));
  const critiques = [...state.critiques.filter((c) => c.agent !== agent), ...mine];
  const content = mine.length
    ? mine.map((c) => `${c.idea_id} (${c.severity}): ${c.critique}`).join('\n')
    : 'No critique of a known candidate.';
  const rounds = addTranscript(state.rounds, 2, agent, content);
  return afterTurn(state, BRAINSTORMERS.length, { critiques, rounds }, `Round 2 · ${agent}`, {
    phase: 'r3',
    shortlist: shortlistOf(state.candidates, critiques),
  });
};

/**
 * Phase `r3`, round 3 (README, "forge/ideate", refinement): the shortlisted idea at `cursor` is
 * refined; its feasibility and tags (LOW_ROI included) are computed from the estimates and the
 * session_config (README, "session_config in the math"). After the last idea the state moves to `r4`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const refineStep: Step = async (input, state, deps) => {
  const id = state.shortlist[state.cursor] as string;
  const candidate = state.candidates.find((c) => c.id === id) as Candidate;
  const critiques = state.critiques.filter((c) => c.idea_id === id);
  const prompt = refinePrompt(input, deps, id, candidate, critiques);
  const answer = await askModel(deps, FORGE_TASKS.refine, prompt, RefineAnswer, 0.6);
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
  const refined = withIdea(state.refined, refinedIdea);
  const rounds = addTranscript(
    state.rounds,
    3,
    REFINER,
    `${id} "${refinedIdea.name}": moat: ${refinedIdea.moat}. Build ~$${feasibility.estimated_build_cost_usd} in ${feasibility.estimated_build_weeks} weeks (reference team); projected $${feasibility.projected_annual_revenue_usd}/year → ${feasibility.lean_feasibility}${feasibility.low_roi ? ', LOW_ROI' : ''}.`,
  );
  return afterTurn(state, state.shortlist.length, { refined, rounds }, `Round 3 · refine ${id}`, {
    phase: 'r4',
  });
};

/**
 * Phase `r4`, round 4 (README, "forge/ideate", scoring): the refined idea at `cursor` gets its RICE
 * score (computed by {@link riceScore}) and kill score. After the last idea the state moves to `r5`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const scoreStep: Step = async (input, state, deps) => {
  const id = state.shortlist[state.cursor] as string;
  const refinedIdea = state.refined.find((r) => r.id === id) as Refined;
  const prompt = scorePrompt(input, deps, refinedIdea);
  const answer = await askModel(deps, FORGE_TASKS.score, prompt, ScoreAnswer, 0.2);
  const scoredIdea: Scored = {
    id,
    rice: riceScore(answer.rice),
    kill_score: answer.kill_score,
    kill_reasons: answer.kill_reasons,
  };
  const scored = withIdea(state.scored, scoredIdea);
  const rounds = addTranscript(
    state.rounds,
    4,
    SCORER,
    `${id} "${refinedIdea.name}": RICE ${scoredIdea.rice.reach} × ${scoredIdea.rice.impact} × ${scoredIdea.rice.confidence} / ${scoredIdea.rice.effort} = ${scoredIdea.rice.score}; kill score ${scoredIdea.kill_score}${scoredIdea.kill_reasons.length ? ` (${scoredIdea.kill_reasons.join('; ')})` : ''}.`,
  );
  return afterTurn(state, state.shortlist.length, { scored, rounds }, `Round 4 · score ${id}`, {
    phase: 'r5',
  });
};

/**
 * Phase `r5`, round 5 (README, "forge/ideate", final ranking): the chair ranks the ideas; the order is
 * {@link finalOrder}; the step ends the job with the `ForgeResult`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const rankStep: Step = async (input, state, deps) => {
  const answer = await askModel(deps, FORGE_TASKS.rank, rankPrompt(input, state, deps), RankAnswer, 0.2);
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
};

/**
 * The outcome of one turn of a round that walks a list with `cursor` (the agents in rounds 1 and 2, the
 * shortlist in rounds 3 and 4): the round's next turn, or, after its last turn, `then` (the next phase
 * and what the round leaves for it) with the cursor back at 0.
 * @param turns the turns of the round @param patch what this turn changed @param label the step's label
 */
function afterTurn(
  state: ForgeState,
  turns: number,
  patch: Partial<ForgeState>,
  label: string,
  then: Partial<ForgeState> & Pick<ForgeState, 'phase'>,
): ForgeOutcome {
  if (state.cursor < turns - 1) return advance(state, { ...patch, cursor: state.cursor + 1 }, label);
  return advance(state, { ...patch, ...then, cursor: 0 }, label);
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
