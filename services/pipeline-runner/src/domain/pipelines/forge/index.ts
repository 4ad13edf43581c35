import { ForgeJobInput, ForgeResult } from '@repo/compute';
import { phasedPipeline } from '../phased';
import type { Pipeline } from '../types';
import { ForgeState } from './state';
import { critiqueStep, ideasStep, rankStep, refineStep, scoreStep } from './steps';

export { CritiqueAnswer, IdeasAnswer, RankAnswer, RefineAnswer, ScoreAnswer } from './schemas';
export {
  BRAINSTORMERS,
  ForgeState,
  MAX_CANDIDATES,
  ROUND_TITLES,
  SHORTLIST_SIZE,
  finalOrder,
  ideaKey,
  shortlistOf,
} from './state';
export { CHAIR, FORGE_TASKS, REFINER, SCORER } from './prompts';

/**
 * forge/ideate (README, "forge/ideate"): five rounds over the sectors' scout data, the context and the
 * product modes — 1 divergent generation (four agents, one step each, 1–3 ideas per agent, duplicates
 * by name dropped, at most `MAX_CANDIDATES`), 2 critique (the same agents, one step each; the
 * `SHORTLIST_SIZE` least-hurt candidates go on), 3 refinement (one step per shortlisted idea, with the
 * estimates behind `assessFeasibility` and the LOW_ROI tag), 4 scoring (one step per idea: RICE
 * computed by `riceScore`, kill score), 5 final ranking (one step). At most 4 + 4 + 5 + 5 + 1 = 19
 * steps. `step` runs the step of the state's phase: `r1` divergent generation, `r2` critique, `r3`
 * refinement, `r4` scoring, `r5` final ranking; it throws what that step throws (README, "Pipelines",
 * errors).
 */
export const forgePipeline: Pipeline<ForgeJobInput, ForgeState, ForgeResult> = phasedPipeline({
  kind: 'forge',
  input: ForgeJobInput,
  state: ForgeState,
  result: ForgeResult,
  etaMinutes: 30,
  // before step 0: round 1, first agent, nothing proposed yet.
  start: {
    phase: 'r1',
    cursor: 0,
    candidates: [],
    critiques: [],
    shortlist: [],
    refined: [],
    scored: [],
    rounds: [],
  },
  steps: { r1: ideasStep, r2: critiqueStep, r3: refineStep, r4: scoreStep, r5: rankStep },
});
