import { Router } from 'express';
import { ErrorEnvelope } from '@repo/errors';
import {
  buildOpenApiDocument,
  renderReferencePage,
  toJsonSchema,
  type JsonSchema,
  type OpenApiParameter,
} from '@repo/schemas';
import {
  CreateKeyRequest,
  CreateKeyResponse,
  HealthResponse,
  RegisterSkillRequest,
  RegisterSkillResponse,
  ReportRequest,
  ReportResponse,
  RouteRequest,
  RouteResponse,
  SkillDetail,
  SkillId,
  SkillList,
} from '../../schemas';
import { SERVICE_VERSION } from './public';

const q = (name: string, description: string, schema: JsonSchema): OpenApiParameter => ({
  name,
  in: 'query',
  description,
  schema,
});
/** A capability or chain filter of the skills list. */
const TAG: JsonSchema = { type: 'string', minLength: 1, maxLength: 64, pattern: '\\S' };
const RETRY_AFTER = {
  'Retry-After': { description: 'seconds until the limit resets', schema: { type: 'integer' } },
};
const err = (description: string) => ({ description, body: 'ErrorEnvelope' });
/** What the JSON body parser answers for any operation with a body, before the route runs. */
const BODY_ERRORS = {
  '413': err('the body is larger than the configured limit (BODY_LIMIT; `payload_too_large`)'),
  '415': err('the body is not UTF-8 JSON: another charset or content-encoding (`unsupported_media_type`)'),
};
const AUTH_ERRORS = {
  '400': err(
    'invalid JSON (`invalid_json`) or a field failed validation (`invalid_request`, `details` lists the fields)',
  ),
  '401': err('missing or unknown x-api-key (`unauthorized`)'),
};

/** The OpenAPI 3.1 document of skill-router (spec version 0.1.0), generated from the zod schemas. */
export function skillRouterOpenApi(): JsonSchema {
  return buildOpenApiDocument({
    info: {
      title: 'Agent-Skill Directory and Routing Service',
      version: SERVICE_VERSION,
      description:
        'Find, rank, register and rate agent skills. Create a key, browse skills, route a task (weighted score of ' +
        'capability_match 0.35, chain_match 0.20, price_fit 0.15, reliability 0.15, latency_fit 0.10, popularity 0.05), report the result.',
    },
    components: {
      ErrorEnvelope,
      HealthResponse,
      CreateKeyResponse,
      RouteResponse,
      SkillList,
      SkillDetail,
      RegisterSkillResponse,
      ReportResponse,
    },
    securitySchemes: {
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description: 'an sk_router_ key from POST /api/auth/key',
      },
    },
    operations: [
      {
        method: 'get',
        path: '/api/health',
        operationId: 'getHealth',
        summary: 'Service health (PostgreSQL reachable)',
        tags: ['Public'],
        responses: {
          '200': { description: 'up', body: 'HealthResponse' },
          '503': { description: 'the database is unreachable', body: 'HealthResponse' },
        },
      },
      {
        method: 'post',
        path: '/api/auth/key',
        operationId: 'createKey',
        summary: 'Create an sk_router_ API key (shown once); 5 per minute per client IP',
        tags: ['Public'],
        requestBody: { body: CreateKeyRequest },
        responses: {
          '201': {
            description: 'the new key; store it, it cannot be retrieved later',
            body: 'CreateKeyResponse',
          },
          '400': err('invalid body'),
          ...BODY_ERRORS,
          '429': {
            description: 'more than 5 keys per minute from this IP (`rate_limited`)',
            body: 'ErrorEnvelope',
            headers: RETRY_AFTER,
          },
        },
      },
      {
        method: 'post',
        path: '/api/discover/route',
        operationId: 'routeTask',
        summary: 'Ranked active skills for a natural-language task',
        tags: ['Discover'],
        security: [{ apiKey: [] }],
        requestBody: { body: RouteRequest },
        responses: {
          '200': { description: 'matches, best first (ties by skill_id)', body: 'RouteResponse' },
          ...AUTH_ERRORS,
          ...BODY_ERRORS,
          '429': {
            description:
              'more route requests this minute than ROUTES_PER_KEY_PER_MINUTE allows for the key (`rate_limited`)',
            body: 'ErrorEnvelope',
            headers: RETRY_AFTER,
          },
        },
      },
      {
        method: 'get',
        path: '/api/discover/skills',
        operationId: 'listSkills',
        summary: 'Active skills, filtered and paged, with the total',
        tags: ['Discover'],
        parameters: [
          // As ListSkillsQuery checks them: not blank (`\S`), trimmed length within the bounds.
          q('category', 'capability tag (case-insensitive)', TAG),
          q('chain', 'chain name (case-insensitive)', TAG),
          q(
            'search',
            'full-text search in name and description (web-search syntax: all words, "phrases", -excluded)',
            { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
          ),
          q('sort', 'popularity (default) or newest', {
            type: 'string',
            enum: ['popularity', 'newest'],
            default: 'popularity',
          }),
          q('limit', 'page size', { type: 'integer', minimum: 1, maximum: 100, default: 20 }),
          q('offset', 'skills to skip', { type: 'integer', minimum: 0, maximum: 1_000_000, default: 0 }),
        ],
        responses: {
          '200': { description: 'one page', body: 'SkillList' },
          '400': err('a query parameter is invalid (`invalid_request`)'),
        },
      },
      {
        method: 'get',
        path: '/api/discover/skills/{id}',
        operationId: 'getSkill',
        summary: 'A skill in any status, with verification results and live metrics',
        tags: ['Discover'],
        parameters: [{ name: 'id', in: 'path', required: true, schema: toJsonSchema(SkillId, 'input') }],
        responses: {
          '200': { description: 'the skill', body: 'SkillDetail' },
          '400': err('invalid id'),
          '404': err('no such skill (`not_found`)'),
        },
      },
      {
        method: 'post',
        path: '/api/discover/register',
        operationId: 'registerSkill',
        summary:
          'Register a skill, or update one registered with the same key; it is verified before it is routed',
        tags: ['Discover'],
        security: [{ apiKey: [] }],
        requestBody: { body: RegisterSkillRequest },
        responses: {
          '201': { description: 'registered, pending verification', body: 'RegisterSkillResponse' },
          '200': { description: 'updated, pending verification again', body: 'RegisterSkillResponse' },
          ...AUTH_ERRORS,
          ...BODY_ERRORS,
          '403': err('the skill_id belongs to another key (`forbidden`)'),
          '429': {
            description:
              'more registrations today than REGISTRATIONS_PER_KEY_PER_DAY allows for the key (`rate_limited`)',
            body: 'ErrorEnvelope',
            headers: RETRY_AFTER,
          },
        },
      },
      {
        method: 'post',
        path: '/api/discover/report',
        operationId: 'reportCall',
        summary: 'Report a call outcome; feeds reliability, latency and popularity',
        tags: ['Discover'],
        security: [{ apiKey: [] }],
        requestBody: { body: ReportRequest },
        responses: {
          '200': { description: 'recorded', body: 'ReportResponse' },
          ...AUTH_ERRORS,
          ...BODY_ERRORS,
          '404': err('no such skill (`not_found`)'),
          '429': {
            description: 'too many reports for this skill from this key (`rate_limited`)',
            body: 'ErrorEnvelope',
            headers: RETRY_AFTER,
          },
        },
      },
    ],
  });
}

/** `GET /openapi.json` and the rendered reference page `GET /docs`. */
export function openApiRouter(): Router {
  const doc = skillRouterOpenApi();
  const page = renderReferencePage(doc);
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(doc);
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(page);
  });
  return router;
}
