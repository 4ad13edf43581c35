import { ProveJobInput, ProveResult } from '@repo/compute';
import { phasedPipeline } from '../phased';
import type { Pipeline } from '../types';
import { ProveState } from './state';
import { debateStep, reportStep, voteStep } from './steps';

export { AnalystTurnAnswer, MAX_QUERIES_PER_TURN, TurnAnswer, VoteAnswer } from './schemas';
export { MAX_ROUNDS, PERSONAS, ProveState, mergedConditions } from './state';
export { REPORT_TASKS, turnTask, voteTask } from './prompts';
export { RESULTS_PER_QUERY } from './steps';

/**
 * prove/debate (README, "prove/debate"): the six personas speak in order for up to 3 rounds (one step
 * per turn; a turn may ask for web searches, whose results become the turn's sources and are shown to
 * later speakers; the Analyst's estimates feed `assessFeasibility`); any panelist may declare
 * PIVOT_OUT, which ends the job at once with no vote; the Strategist may close the debate after any
 * round; then six vote steps, the tally (`verdictFor`) and two report steps (roadmap + Lean Canvas,
 * or kill brief + decision brief). At most 18 + 6 + 2 = 26 steps. `step` runs the step of the state's
 * phase (`debate` one turn, `vote` one vote, `report` one report section) and throws what that step
 * throws (README, "Pipelines", errors).
 */
export const provePipeline: Pipeline<ProveJobInput, ProveState, ProveResult> = phasedPipeline({
  kind: 'prove',
  input: ProveJobInput,
  state: ProveState,
  result: ProveResult,
  etaMinutes: 60,
  // before step 0: round 1 of the debate, the first persona to speak.
  start: {
    phase: 'debate',
    round: 1,
    speaker: 0,
    rounds: [],
    feasibility: null,
    votes: [],
    verdict: null,
    output: null,
  },
  steps: { debate: debateStep, vote: voteStep, report: reportStep },
});
