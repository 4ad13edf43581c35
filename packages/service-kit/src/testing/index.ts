export { TcpProxy } from './tcp-proxy';
export type { ProxyMode } from './tcp-proxy';
export { freePort, readinessWhileHung, readyStatus, spawnService, waitFor } from './process';
export type { ServiceProcess, SpawnServiceOptions } from './process';
export { judgeShutdown, startLoad } from './load';
export type { Load, LoadRequest, LoadResult, ShutdownVerdict } from './load';
export { metricValue, parseMetrics, scrape } from './scrape';
export { countQueries } from './queries';
export type { Sample } from './scrape';
export { configRefusal } from './config';
export {
  hostileJsonArbitrary,
  hostileStringArbitrary,
  UnsupportedSchemaError,
  validValueArbitrary,
} from './json-schema-arbitrary';
export type { HostileJson, JsonSchema, SchemaArbitraryOptions } from './json-schema-arbitrary';
export {
  envelopeProblems,
  fuzzCheck,
  fuzzCheckAll,
  fuzzOperations,
  fuzzRunSettings,
  OpenApiFuzzError,
  sendFuzzRequest,
} from './openapi-fuzz';
export type {
  CredentialSlot,
  FuzzAuth,
  FuzzCheckOptions,
  FuzzOperation,
  FuzzOptions,
  FuzzRequest,
  FuzzResponse,
  JudgeOptions,
  KnownGap,
  OpenApiDocument,
} from './openapi-fuzz';
export { dropRunScoped, runScoped, TEST_DATABASE_BASE_URL, testDatabaseUrl, testRunId } from './run-scope';
export { INFRASTRUCTURE_ROUTES, mountedRoutes, routeCoverage } from './routes';
export type { MountedRoute } from './routes';
export { connectMcp, mcpClientPool, toolErrorOf } from './mcp';
export type { McpClientPool } from './mcp';
export { CAPTURE_EXAMPLES, exampleCheck, headerExamples, writeExamples } from './examples';
export type { ExampleCheck } from './examples';
export { chromiumPath, expectDocsRender, markdownAnchors, screenshotPath } from './docs-render';
export type { DocsRender, DocsRenderOptions } from './docs-render';
