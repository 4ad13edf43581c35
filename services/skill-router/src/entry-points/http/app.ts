import type { Application } from 'express';
import { errorHandler, notFoundHandler } from '@repo/errors';
import {
  createBaseApp,
  llmsTxtRoutes,
  mcpRoutes,
  openApiRoutes,
  type Logger,
  type ServiceMetrics,
} from '@repo/service-kit';
import type { ApiKeyRepository } from '../../data/api-keys';
import type { RateLimit } from '@repo/service-kit';
import type { SkillDirectory } from '../../data/skill-directory';
import type { SkillStats } from '../../data/skill-stats';
import type { RoutingSources } from '../../domain/routing';
import type { RouteOutcome } from '../../metrics';
import { discoverOperations } from '../../domain/discover-operations';
import { SKILL_ROUTER_MCP_INSTRUCTIONS, skillRouterTools } from '../mcp/tools';
import { discoverRoutes } from './discover';
import { skillRouterOpenApi } from './openapi';
import { SKILL_ROUTER_LLMS_TXT } from './llms-txt';
import { publicRoutes, SERVICE_VERSION } from './public';

/** Everything the app needs, built by `composition.ts` (main or a test). */
export interface AppDeps {
  logger: Logger;
  keys: ApiKeyRepository;
  directory: SkillDirectory;
  /** Where routes are ranked: the routing index while current, else PostgreSQL. */
  routing: RoutingSources;
  stats: SkillStats;
  /** POST /api/auth/key per client IP. */
  keyCreationLimit: RateLimit;
  /** POST /api/discover/report per key and skill. */
  reportLimit: RateLimit;
  /** POST /api/discover/register per key and day. */
  registrationLimit: RateLimit;
  /** POST /api/discover/route per key and minute. */
  routeLimit: RateLimit;
  /** SSRF check of a registered endpoint: `null` when allowed, else the refusal. */
  endpointRefusal: (url: string) => Promise<string | null>;
  /** GET /api/health: PostgreSQL answers. */
  dbReady: () => Promise<boolean>;
  /** `/readyz`: the database answers and the service is not shutting down. */
  isReady?: () => boolean | Promise<boolean>;
  routeCandidateLimit: number;
  routeDefaultMatches: number;
  /** Number of proxy hops in front of the service (express `trust proxy`). */
  trustProxy?: number;
  bodyLimit?: string;
  /** Comma-separated origins allowed by CORS (`CORS_ORIGINS`); CORS stays closed when empty. */
  corsOrigins?: string;
  now?: () => Date;
  metrics?: ServiceMetrics & {
    onRegistered?: (outcome: 'created' | 'updated') => void;
    onRouted?: (matches: number) => void;
    onRouteServed?: (outcome: RouteOutcome) => void;
    onRanked?: (source: 'index' | 'database') => void;
  };
}

/**
 * The skill-router express app (no listen, no env): `/api/health`, `/api/auth/key`, `/api/discover/*`,
 * the MCP endpoint `/mcp`, `/llms.txt`, `/openapi.json` and `/docs`, the Kubernetes probes and `/metrics`, and the error envelope for the rest.
 */
export function createApp(deps: AppDeps): Application {
  const now = deps.now ?? (() => new Date());
  const app = createBaseApp({
    logger: deps.logger,
    trustProxy: deps.trustProxy,
    bodyLimit: deps.bodyLimit,
    corsOrigins: deps.corsOrigins,
    isReady: deps.isReady,
    metrics: deps.metrics,
  });
  const operations = discoverOperations({
    keys: deps.keys,
    directory: deps.directory,
    routing: deps.routing,
    stats: deps.stats,
    reportLimit: deps.reportLimit,
    registrationLimit: deps.registrationLimit,
    routeLimit: deps.routeLimit,
    endpointRefusal: deps.endpointRefusal,
    routeCandidateLimit: deps.routeCandidateLimit,
    routeDefaultMatches: deps.routeDefaultMatches,
    now,
    onRegistered: deps.metrics?.onRegistered,
    onRouted: deps.metrics?.onRouted,
    onRanked: deps.metrics?.onRanked,
  });
  const routes = [
    publicRoutes({ keys: deps.keys, keyCreationLimit: deps.keyCreationLimit, dbReady: deps.dbReady, now }),
    discoverRoutes(operations, deps.metrics?.onRouteServed),
  ];
  app.use(
    mcpRoutes({
      name: 'skill-router',
      version: SERVICE_VERSION,
      instructions: SKILL_ROUTER_MCP_INSTRUCTIONS,
      tools: skillRouterTools(operations, deps.metrics?.onRouteServed),
      logger: deps.logger,
      metrics: deps.metrics,
    }),
  );
  app.use(llmsTxtRoutes(SKILL_ROUTER_LLMS_TXT));
  app.use(openApiRoutes(skillRouterOpenApi(routes.flatMap((r) => r.operations))));
  for (const r of routes) app.use(r.router);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
