import type { RequestHandler } from 'express';
import { AppError, notFound } from '@repo/errors';
import {
  BODY_PARSER_ERRORS,
  contractRouter,
  errorResponse,
  RETRY_AFTER_HEADER,
  validated,
  type ContractRouter,
} from '@repo/service-kit';
import { z } from 'zod';
import type { RateLimit } from '@repo/service-kit';
import type { ApiKeyRepository } from '../../data/api-keys';
import type { SkillDirectory, SkillRecord } from '../../data/skill-directory';
import type { SkillStats } from '../../data/skill-stats';
import { submitReport } from '../../domain/reports';
import { routeTask, type RoutingSources } from '../../domain/routing';
import { withLiveMetrics } from '../../domain/skill-metrics';
import type { RouteOutcome } from '../../metrics';
import {
  ListSkillsQuery,
  RegisterSkillRequest,
  ReportRequest,
  RouteRequest,
  SkillDetail,
  SkillId,
  SkillSummary,
  RegisterSkillResponse,
  ReportResponse,
  RouteResponse,
  SkillList,
  VERIFICATION_STEPS,
} from '../../schemas';
import { authenticatedKey, requireApiKey } from './auth';
import { AUTHENTICATED_BODY_ERRORS } from './openapi';

/** Dependencies of {@link discoverRoutes}. */
export interface DiscoverDeps {
  keys: ApiKeyRepository;
  directory: SkillDirectory;
  routing: RoutingSources;
  stats: SkillStats;
  /** Reports per key and skill (REPORT_LIMIT_*). */
  reportLimit: RateLimit;
  /** Registrations per key and day (REGISTRATIONS_PER_KEY_PER_DAY). */
  registrationLimit: RateLimit;
  /** Route requests per key and minute (ROUTES_PER_KEY_PER_MINUTE). */
  routeLimit: RateLimit;
  /** Refuses endpoints the SSRF policy does not allow; `null` when allowed. */
  endpointRefusal: (url: string) => Promise<string | null>;
  routeCandidateLimit: number;
  routeDefaultMatches: number;
  now: () => Date;
  /** Called after a registration (metrics). */
  onRegistered?: (outcome: 'created' | 'updated') => void;
  /** Called after a route request with the number of matches (metrics). */
  onRouted?: (matches: number) => void;
  /** Called when a route request's answer is sent, whatever it was (metrics). */
  onRouteServed?: (outcome: RouteOutcome) => void;
  /** Called with the path that ranked a route request (metrics). */
  onRanked?: (source: 'index' | 'database') => void;
}

/** Refuses the request with 429 `rate_limited` and `Retry-After` when `key` is over `limit`. */
async function enforce(limit: RateLimit, key: string, what: string): Promise<void> {
  const decision = await limit.consume(key);
  if (decision.allowed) return;
  throw new AppError(
    'rate_limited',
    `Too many ${what} for this API key; retry in ${decision.retryAfterSeconds} s`,
    {
      headers: { 'Retry-After': String(decision.retryAfterSeconds) },
      details: { retry_after_seconds: decision.retryAfterSeconds },
    },
  );
}

/** Keys this replica already marked as routed (a bounded set: the write is idempotent anyway). */
const routedKeys = new Set<string>();

function remember(set: Set<string>, value: string): void {
  if (set.size >= 100_000) set.clear();
  set.add(value);
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

function metricsOf(s: Pick<SkillRecord, 'successRate24h' | 'avgLatencyMs' | 'calls30d'>) {
  return {
    success_rate_24h: round(s.successRate24h, 4),
    avg_latency_ms: s.avgLatencyMs === null ? 0 : round(s.avgLatencyMs, 1),
    calls_30d: s.calls30d,
  };
}

function summary(s: SkillRecord): z.infer<typeof SkillSummary> {
  return {
    skill_id: s.skillId,
    name: s.name,
    provider: s.provider,
    description: s.description,
    capabilities: s.capabilities,
    chains: s.chains,
    pricing: { model: s.pricingModel, price_usd: s.priceUsd },
    endpoint: s.endpoint,
    status: s.status,
    metrics: {
      ...metricsOf(s),
      rating: s.ratingCount > 0 ? round(s.ratingSum / s.ratingCount, 2) : null,
      ratings_30d: s.ratingCount,
      popularity: round(s.popularity, 4),
    },
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/** The documented 429 of an operation limited per key. */
const limited = (description: string) => errorResponse(description, RETRY_AFTER_HEADER);

/**
 * The `/api/discover` endpoints (README, "Endpoints"): route, skills list and detail, register and
 * report. Route, register and report need `x-api-key`.
 */
export function discoverRoutes(deps: DiscoverDeps): ContractRouter {
  const auth = requireApiKey(deps.keys);

  // Counts every answer to /route, refusals included, so the outcome mix is visible.
  const countRoute: RequestHandler = (_req, res, next) => {
    if (deps.onRouteServed) {
      const served = deps.onRouteServed;
      res.once('finish', () => {
        const matches = res.locals.routeMatches as number | undefined;
        served(
          res.statusCode >= 500
            ? 'failed'
            : res.statusCode >= 400
              ? 'rejected'
              : matches !== undefined && matches > 0
                ? 'matched'
                : 'no_match',
        );
      });
    }
    next();
  };

  return contractRouter()
    .route(
      {
        method: 'post',
        path: '/api/discover/route',
        operationId: 'routeTask',
        summary: 'Ranked active skills for a natural-language task',
        tags: ['Discover'],
        security: [{ apiKey: [] }],
        request: { body: RouteRequest },
        responses: {
          '200': { description: 'matches, best first (ties by skill_id)', body: RouteResponse },
          ...AUTHENTICATED_BODY_ERRORS,
          ...BODY_PARSER_ERRORS,
          '429': limited(
            'more route requests this minute than ROUTES_PER_KEY_PER_MINUTE allows for the key (`rate_limited`)',
          ),
        },
        before: [countRoute, auth],
      },
      async (_req, res) => {
        const { body } = validated<unknown, unknown, RouteRequest>(res.locals);
        const key = authenticatedKey(res.locals);
        await enforce(deps.routeLimit, key.id, 'route requests per minute');
        const outcome = await routeTask(
          deps.routing,
          {
            task: body.task,
            chains: body.requirements?.chains,
            maxPriceUsd: body.requirements?.max_price_usd,
            maxLatencyMs: body.requirements?.max_latency_ms,
            limit: body.limit ?? deps.routeDefaultMatches,
          },
          deps.routeCandidateLimit,
        );
        deps.onRouted?.(outcome.matches.length);
        deps.onRanked?.(outcome.source);
        res.locals.routeMatches = outcome.matches.length;
        if (outcome.matches.length > 0 && !routedKeys.has(key.id)) {
          await deps.keys.markRouted(key.id);
          remember(routedKeys, key.id);
        }
        const answer: z.infer<typeof RouteResponse> = {
          matches: outcome.matches.map((m) => ({
            skill_id: m.skill.skillId,
            name: m.skill.name,
            match_score: m.score,
            match_reasons: m.reasons,
            pricing: { per_call_usd: m.skill.priceUsd },
            metrics: metricsOf(m.skill),
            endpoint: m.skill.endpoint,
          })),
          total_matches: outcome.totalMatches,
          routed_at: deps.now().toISOString(),
        };
        res.json(answer);
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/discover/skills',
        operationId: 'listSkills',
        summary: 'Active skills, filtered and paged, with the total',
        tags: ['Discover'],
        request: { query: ListSkillsQuery },
        responses: {
          '200': { description: 'one page', body: SkillList },
          '400': errorResponse('a query parameter is invalid (`invalid_request`)'),
        },
      },
      async (_req, res) => {
        const { query } = validated<ListSkillsQuery>(res.locals);
        const page = await deps.directory.list(query);
        const body: z.infer<typeof SkillList> = {
          skills: page.items.map(summary),
          total: page.total,
          limit: query.limit,
          offset: query.offset,
        };
        res.json(body);
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/discover/skills/{id}',
        operationId: 'getSkill',
        summary: 'A skill in any status, with verification results and live metrics',
        tags: ['Discover'],
        request: { params: z.object({ id: SkillId }) },
        responses: {
          '200': { description: 'the skill', body: SkillDetail },
          '400': errorResponse('invalid id'),
          '404': errorResponse('no such skill (`not_found`)'),
        },
      },
      async (_req, res) => {
        const { params } = validated<unknown, { id: string }>(res.locals);
        const skill = await deps.directory.get(params.id);
        if (!skill) throw notFound(`Skill ${params.id}`);
        const live = await deps.stats.metricWindow(skill.skillId);
        const current = withLiveMetrics(skill, live);
        const body: z.infer<typeof SkillDetail> = {
          ...summary(current),
          input_schema: skill.inputSchema,
          output_schema: skill.outputSchema,
          verification: {
            steps: skill.verification,
            reason: skill.verificationReason,
            verified_at: skill.verifiedAt?.toISOString() ?? null,
          },
          health: {
            last_check_at: skill.lastHealthCheckAt?.toISOString() ?? null,
            consecutive_failures: skill.consecutiveFailures,
            checks_24h: live.checks24h,
          },
          metrics_at: deps.now().toISOString(),
        };
        res.json(body);
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/discover/register',
        operationId: 'registerSkill',
        summary:
          'Register a skill, or update one registered with the same key; it is verified before it is routed',
        tags: ['Discover'],
        security: [{ apiKey: [] }],
        request: { body: RegisterSkillRequest },
        responses: {
          '201': { description: 'registered, pending verification', body: RegisterSkillResponse },
          '200': { description: 'updated, pending verification again', body: RegisterSkillResponse },
          ...AUTHENTICATED_BODY_ERRORS,
          ...BODY_PARSER_ERRORS,
          '403': errorResponse('the skill_id belongs to another key (`forbidden`)'),
          '429': limited(
            'more registrations today than REGISTRATIONS_PER_KEY_PER_DAY allows for the key (`rate_limited`)',
          ),
        },
        before: [auth],
      },
      async (_req, res) => {
        const { body } = validated<unknown, unknown, RegisterSkillRequest>(res.locals);
        const refusal = await deps.endpointRefusal(body.endpoint);
        if (refusal) {
          throw new AppError('invalid_request', `Invalid request: body.endpoint: ${refusal}`, {
            details: [{ path: 'body.endpoint', message: refusal }],
          });
        }
        const key = authenticatedKey(res.locals);
        await enforce(deps.registrationLimit, key.id, 'registrations per day');
        const result = await deps.directory.upsert(body, key.id);
        if (result.outcome === 'forbidden') {
          throw new AppError(
            'forbidden',
            `Skill ${body.skill_id} was registered with another API key; only that key may update it`,
          );
        }
        deps.onRegistered?.(result.outcome);
        res.status(result.outcome === 'created' ? 201 : 200).json({
          ok: true,
          skill_id: body.skill_id,
          status: 'pending_verification',
          verification_steps: [...VERIFICATION_STEPS],
        });
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/discover/report',
        operationId: 'reportCall',
        summary: 'Report a call outcome; feeds reliability, latency and popularity',
        tags: ['Discover'],
        security: [{ apiKey: [] }],
        request: { body: ReportRequest },
        responses: {
          '200': { description: 'recorded', body: ReportResponse },
          ...AUTHENTICATED_BODY_ERRORS,
          ...BODY_PARSER_ERRORS,
          '404': errorResponse('no such skill (`not_found`)'),
          '429': limited('too many reports for this skill from this key (`rate_limited`)'),
        },
        before: [auth],
      },
      async (_req, res) => {
        const { body } = validated<unknown, unknown, ReportRequest>(res.locals);
        const key = authenticatedKey(res.locals);
        if (!(await deps.directory.exists(body.skill_id))) throw notFound(`Skill ${body.skill_id}`);
        await enforce(deps.reportLimit, `${key.id}:${body.skill_id}`, `reports for skill ${body.skill_id}`);
        await submitReport(deps, {
          skillId: body.skill_id,
          apiKeyId: key.id,
          caller: body.caller,
          callResult: body.call_result,
          latencyMs: body.latency_ms,
          satisfaction: body.satisfaction,
          notes: body.notes,
        });
        res.json({ ok: true });
      },
    );
}
