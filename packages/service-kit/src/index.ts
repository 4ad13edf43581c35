export {
  BaseHttpEnv,
  BrokerEnv,
  ConfigError,
  assertSetTogether,
  DatabaseEnv,
  boolVar,
  intVar,
  parseConfig,
  portVar,
  publicServiceEnv,
  replicaIdVar,
} from './config';
export { REDACT_PATHS, createLogger, httpLogger } from './logger';
export type { Logger } from './logger';
export { CREDENTIAL_QUERY_SETTING, jsonBodyOnly, parseInput, validate } from './validate';
export type { RequestSchemas, Validated, ValidateOptions } from './validate';
export { createBaseApp, createServiceApp } from './app';
export type { BaseAppOptions, MountedAt, ServiceAppDeps, ServiceAppParts } from './app';
export { closeServer, onShutdown } from './shutdown';
export type { ShutdownStep } from './shutdown';
export { cachedFor, createMetrics, createMetricsApp, listenMetrics, SCRAPE_CACHE_MS } from './metrics';
export type { MetricFactory, MetricSpec, MetricTable, QueueDepthSource, ServiceMetrics } from './metrics';
export { clientIpKey, createRateLimit, sweepRateLimits } from './rate-limit';
export { apiKeyScheme, hashApiKey, hashesEqual, presentedApiKey } from './api-keys';
export type { ApiKeyScheme, NewApiKey } from './api-keys';
export { createApiKeyCache } from './api-key-cache';
export type { ApiKeyCache, ApiKeyCacheOptions } from './api-key-cache';
export { assertProductionReady, productionProblems } from './production';
export type { ProductionCheck } from './production';
export type { RateDecision, RateLimit } from './rate-limit';
export { backoffDelay, createLoop, createLoopMetrics, releaseOnStop, withJitter } from './loop';
export type { BackoffPolicy, Loop, LoopMetrics, LoopOptions, RoundResult } from './loop';
export { createWebhookSender } from './webhooks';
export type { WebhookAttempt, WebhookAttemptOutcome, WebhookSender, WebhookSenderOptions } from './webhooks';
export { createDatabase } from './database';
export type { Database, DatabaseOptions, PrismaLike } from './database';
export { createReadiness } from './readiness';
export type { Readiness, ReadinessCheck } from './readiness';
export { runService, startService } from './run-service';
export type { ComposedService, RunningService, RuntimeConfig, ServiceDefinition } from './run-service';
export {
  BODY_PARSER_ERRORS,
  contractRouter,
  INVALID_REQUEST_ERROR,
  errorResponse,
  openApiRoutes,
  RETRY_AFTER_HEADER,
  withExamples,
} from './contract';
export type { ContractHandler, ContractRouter, RequestContract, RouteContract } from './contract';
export { listenForNotifications } from './notifications';
export type { NotificationListener, NotificationListenerOptions } from './notifications';
export { mcpRoutes, serveStatelessMcp } from './mcp';
export type { McpRoutesOptions, McpTool, McpToolAnswer, McpToolContext } from './mcp';
export { apiLinks, llmsTxtRoutes, renderLlmsTxt } from './llms-txt';
export type { LlmsTxt, LlmsTxtLink } from './llms-txt';
export { dispatchHttp } from './mcp-dispatch';
export type { HttpAnswer, HttpCall } from './mcp-dispatch';
export { packageVersion } from './package-version';
export { codeSamples, withCodeSamples } from './code-samples';
export type { CodeSample } from './code-samples';
