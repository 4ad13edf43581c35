import type {
  ForgeJobInput,
  ForgeResult,
  ProveJobInput,
  ProveResult,
  ScoutJobInput,
  ScoutResult,
} from '@repo/compute';
import { forgePipeline, type ForgeState } from './forge';
import { provePipeline, type ProveState } from './prove';
export { scoutPipeline, ScoutState, SCOUT_TASKS } from './scout';
import { scoutPipeline, type ScoutState } from './scout';
import type { Pipeline } from './types';

export type { Pipeline, PipelineDeps, StepOutcome } from './types';
export {
  forgePipeline,
  ForgeState,
  FORGE_TASKS,
  BRAINSTORMERS,
  MAX_CANDIDATES,
  SHORTLIST_SIZE,
  finalOrder,
  shortlistOf,
} from './forge';
export {
  provePipeline,
  ProveState,
  PERSONAS,
  MAX_ROUNDS,
  REPORT_TASKS,
  mergedConditions,
  turnTask,
  voteTask,
} from './prove';

/** Every compute pipeline by job kind, as the runner dispatches step commands. */
export const pipelines: {
  forge: Pipeline<ForgeJobInput, ForgeState, ForgeResult>;
  prove: Pipeline<ProveJobInput, ProveState, ProveResult>;
  scout: Pipeline<ScoutJobInput, ScoutState, ScoutResult>;
} = { forge: forgePipeline, prove: provePipeline, scout: scoutPipeline };
