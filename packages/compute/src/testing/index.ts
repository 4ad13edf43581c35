export { scenarioMarker, scriptedPipelineResponder } from './responder';
export type { PipelineScenario } from './responder';
export { forgeJobInput, proveJobInput, sampleScout } from './fixtures';
export { scoutAnswer } from './scout-responder';
export { FIXTURE_METADATA_URL, startFixtureFeeds } from './scout-fixture-server';
export type { FixtureFeeds, FixtureFeedsOptions, FixtureRequest } from './scout-fixture-server';
export { FIXTURE_PEER, FIXTURE_SCAN, fixtureScoutInput } from './scout-fixtures';
