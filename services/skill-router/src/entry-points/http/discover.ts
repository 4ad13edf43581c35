import type { RequestHandler, Response } from 'express';
import {
  contractRouter,
  errorResponse,
  RETRY_AFTER_HEADER,
  type ContractRouter,
  type RouteContract,
} from '@repo/service-kit';
import { z } from 'zod';
import type { RouteOutcome } from '../../metrics';
import {
  ListSkillsQuery,
  ListVersionsQuery,
  RegisterMcpServerRequest,
  RegisterMcpServerResponse,
  RegisterSkillRequest,
  ReportRequest,
  RouteRequest,
  SkillDetail,
  SkillId,
  RegisterSkillResponse,
  ReportResponse,
  RouteResponse,
  SkillList,
  SkillVersionList,
} from '../../schemas';
import type { DiscoverOperations } from '../../domain/discover-operations';
import { authenticatedKey, requireApiKey } from './auth';
import { AUTHENTICATED_BODY_ERRORS } from './openapi';

/** The documented 429 of an operation limited per key. */
const limited = (description: string) => errorResponse(description, RETRY_AFTER_HEADER);

/** The operations that need a key: in `x-api-key`, or as `Authorization: Bearer <key>`. */
const KEY_SECURITY: Record<string, string[]>[] = [{ apiKey: [] }, { bearer: [] }];

/**
 * The `/api/discover` endpoints (README, "Endpoints"): route, skills list and detail, register and
 * report, each running its {@link DiscoverOperations} use case. Route, register and report need
 * `x-api-key`.
 * @param onRouteServed called when a route request's answer is sent, whatever it was (metrics)
 */
export function discoverRoutes(
  operations: DiscoverOperations,
  onRouteServed?: (outcome: RouteOutcome) => void,
): ContractRouter {
  const auth = requireApiKey(operations);
  /**
   * The contract of a Discover POST that needs `x-api-key` and takes a JSON body: its own responses
   * plus what every such operation may answer (the 413 and 415 of the body come from contractRouter),
   * and `before` (if any) ahead of the key check.
   */
  const keyedPost = <Body extends z.ZodType>(operation: {
    path: string;
    operationId: string;
    summary: string;
    body: Body;
    responses: RouteContract['responses'];
    before?: RequestHandler[];
  }) => ({
    method: 'post' as const,
    path: operation.path,
    operationId: operation.operationId,
    summary: operation.summary,
    tags: ['Discover'],
    security: KEY_SECURITY,
    request: { body: operation.body },
    responses: { ...AUTHENTICATED_BODY_ERRORS, ...operation.responses },
    before: [...(operation.before ?? []), auth],
  });

  // The number of matches of each answered route request, for countRoute.
  const routeMatches = new WeakMap<Response, number>();
  // Counts every answer to /route, refusals included, so the outcome mix is visible.
  const countRoute: RequestHandler = (_req, res, next) => {
    if (onRouteServed) {
      res.once('finish', () => {
        const matches = routeMatches.get(res);
        onRouteServed(
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
      keyedPost({
        path: '/api/discover/route',
        operationId: 'routeTask',
        summary: 'Ranked active skills for a natural-language task',
        body: RouteRequest,
        responses: {
          '200': { description: 'matches, best first (ties by skill_id)', body: RouteResponse },
          '429': limited(
            'more route requests this minute than ROUTES_PER_KEY_PER_MINUTE allows for the key (`rate_limited`)',
          ),
        },
        before: [countRoute],
      }),
      async (_req, res) => {
        const answer = await operations.route(authenticatedKey(res), res.locals.valid.body);
        routeMatches.set(res, answer.matches.length);
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
        res.json(await operations.list(res.locals.valid.query));
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
        res.json(await operations.get(res.locals.valid.params.id));
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/discover/skills/{id}/versions',
        operationId: 'listSkillVersions',
        summary:
          "A skill's registered revisions, newest first: each definition, its SHA-256 and its verification",
        tags: ['Discover'],
        request: { params: z.object({ id: SkillId }), query: ListVersionsQuery },
        responses: {
          '200': { description: 'one page of revisions', body: SkillVersionList },
          '400': errorResponse('invalid id or query parameter (`invalid_request`)'),
          '404': errorResponse('no such skill (`not_found`)'),
        },
      },
      async (_req, res) => {
        res.json(await operations.versions(res.locals.valid.params.id, res.locals.valid.query));
      },
    )
    .route(
      keyedPost({
        path: '/api/discover/register',
        operationId: 'registerSkill',
        summary:
          'Register a skill, or update one registered with the same key; it is verified before it is routed',
        body: RegisterSkillRequest,
        responses: {
          '201': { description: 'registered, pending verification', body: RegisterSkillResponse },
          '200': { description: 'updated, pending verification again', body: RegisterSkillResponse },
          '403': errorResponse('the skill_id belongs to another key (`forbidden`)'),
          '429': limited(
            'more registrations today than REGISTRATIONS_PER_KEY_PER_DAY allows for the key (`rate_limited`)',
          ),
        },
      }),
      async (_req, res) => {
        const { outcome, answer } = await operations.register(authenticatedKey(res), res.locals.valid.body);
        res.status(outcome === 'created' ? 201 : 200).json(answer);
      },
    )
    .route(
      keyedPost({
        path: '/api/discover/register/mcp',
        operationId: 'registerMcpServer',
        summary:
          "Import an MCP server's tools (Streamable HTTP) as skills `<server_id>.<tool>`; each is verified over MCP before it is routed",
        body: RegisterMcpServerRequest,
        responses: {
          '201': {
            description: 'imported: at least one new skill, pending verification',
            body: RegisterMcpServerResponse,
          },
          '200': {
            description: 'imported again: changed tools pending verification, the others unchanged',
            body: RegisterMcpServerResponse,
          },
          '400': errorResponse(
            'invalid JSON or body, or a `url` that is refused by the SSRF policy, does not complete the MCP handshake or tools/list in time, lists more than 50 tools, or lists no tool that can become a skill (`invalid_request` on `body.url` with the reason)',
          ),
          '403': errorResponse(
            "one of the tools' skill ids belongs to another key (`forbidden`); nothing is written",
          ),
          '429': limited(
            'the tools to write need more registrations than REGISTRATIONS_PER_KEY_PER_DAY leaves the key today (`rate_limited`); nothing is written',
          ),
        },
      }),
      async (_req, res) => {
        const { outcome, answer } = await operations.registerMcp(
          authenticatedKey(res),
          res.locals.valid.body,
        );
        res.status(outcome === 'created' ? 201 : 200).json(answer);
      },
    )
    .route(
      keyedPost({
        path: '/api/discover/report',
        operationId: 'reportCall',
        summary:
          'Report a call outcome, optionally with proof of payment; feeds reliability, latency and popularity by the report weight',
        body: ReportRequest,
        responses: {
          '200': { description: 'recorded; whether and how much it counts', body: ReportResponse },
          '400': errorResponse(
            'invalid JSON or body (`invalid_json`, `invalid_request`), a payment proof refused (`invalid_request` on `body.payment.*` with the reason: a free skill or one without pay_to, a network not accepted, not found on chain, another amount, mint or recipient, too old), or a signature that already proved a report (`payment_reused`)',
          ),
          '404': errorResponse('no such skill (`not_found`)'),
          '429': limited(
            'too many reports for this skill from this key, or too many payment proofs from this key this hour (`rate_limited`)',
          ),
          '503': errorResponse(
            'the payment signature is being checked by another request, or the Solana RPC cannot answer (`service_unavailable`)',
            RETRY_AFTER_HEADER,
          ),
        },
      }),
      async (_req, res) => {
        res.json(await operations.report(authenticatedKey(res), res.locals.valid.body));
      },
    );
}
