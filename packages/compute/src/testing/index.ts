export { scenarioMarker, scriptedPipelineResponder } from './responder';
export type { PipelineScenario } from './responder';
export { forgeJobInput, proveJobInput, sampleScout } from './fixtures';
export { scoutAnswer } from './scout-responder';
export {
  FIXTURE_METADATA_URL,
  FIXTURE_PEER,
  FIXTURE_SCAN,
  fixtureScoutInput,
  startFixtureFeeds,
} from './scout-fixtures';
export type { FixtureFeeds, FixtureFeedsOptions, FixtureRequest } from './scout-fixtures';
