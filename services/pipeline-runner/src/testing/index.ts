export { runToCompletion } from './run';
export type { PipelineRun } from './run';
export { scoutWindow } from './scout-window';
