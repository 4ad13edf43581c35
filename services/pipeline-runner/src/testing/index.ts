export { scenarioMarker, scriptedPipelineResponder } from './responder';
export type { PipelineScenario } from './responder';
export { forgeJobInput, proveJobInput, sampleScout } from './fixtures';
export { runToCompletion } from './run';
export type { PipelineRun } from './run';
