import type { McpServers } from '../../domain/mcp-tools';
import type { Application } from 'express';
import {
  createServiceApp,
  type RateLimit,
  type ServiceAppDeps,
  type ServiceMetrics,
} from '@repo/service-kit';
import type { ApiKeyRepository } from '../../data/api-keys';
import type { SkillDirectory } from '../../data/skill-directory';
import type { SkillStats } from '../../data/skill-stats';
import type { RoutingSources } from '../../domain/routing';
import type { PaymentProofDeps } from '../../domain/payment-proofs';
import type { RouteOutcome } from '../../metrics';
import { discoverOperations } from '../../domain/discover-operations';
import { SKILL_ROUTER_MCP_INSTRUCTIONS, skillRouterTools } from '../mcp/tools';
import { discoverRoutes } from './discover';
import { skillRouterOpenApi } from './openapi';
import { SKILL_ROUTER_LLMS_TXT } from './llms-txt';
import { publicRoutes, SERVICE_VERSION } from './public';

/** Everything the app needs, built by `composition.ts` (main or a test). */
export interface AppDeps extends ServiceAppDeps {
  keys: ApiKeyRepository;
  directory: SkillDirectory;
  /** Where routes are ranked: the routing index while current, else PostgreSQL. */
  routing: RoutingSources;
  stats: SkillStats;
  /** How paid call reports are proved (README, "Reputation"). */
  paymentProofs: PaymentProofDeps;
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
  /** MCP servers, for POST /api/discover/register/mcp (README, "MCP servers as skills"). */
  mcp: McpServers;
  /** GET /api/health: PostgreSQL answers. */
  dbReady: () => Promise<boolean>;
  routeCandidateLimit: number;
  routeDefaultMatches: number;
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
  const operations = discoverOperations({
    keys: deps.keys,
    directory: deps.directory,
    routing: deps.routing,
    stats: deps.stats,
    paymentProofs: deps.paymentProofs,
    reportLimit: deps.reportLimit,
    registrationLimit: deps.registrationLimit,
    routeLimit: deps.routeLimit,
    endpointRefusal: deps.endpointRefusal,
    mcp: deps.mcp,
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
  return createServiceApp(deps, {
    mcp: {
      name: 'skill-router',
      version: SERVICE_VERSION,
      instructions: SKILL_ROUTER_MCP_INSTRUCTIONS,
      tools: skillRouterTools(operations, deps.metrics?.onRouteServed),
    },
    llmsTxt: SKILL_ROUTER_LLMS_TXT,
    openApi: skillRouterOpenApi(routes.flatMap((r) => r.operations)),
    routes: routes.map((r) => r.router),
  });
}
