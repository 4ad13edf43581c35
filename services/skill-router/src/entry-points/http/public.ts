import { AppError } from '@repo/errors';
import {
  clientIpKey,
  contractRouter,
  errorResponse,
  RETRY_AFTER_HEADER,
  type ContractRouter,
  type RateLimit,
  packageVersion,
} from '@repo/service-kit';
import type { z } from 'zod';
import type { ApiKeyRepository } from '../../data/api-keys';
import { keyCohort, skillRouterKeys } from '../../domain/api-keys';
import { CreateKeyRequest, CreateKeyResponse, HealthResponse } from '../../schemas';

/** The service version reported by health and the OpenAPI document (README, "Endpoints").: the `version` of the service's package.json, its one version number. */
export const SERVICE_VERSION = packageVersion(__dirname);

/**
 * GET /api/health and POST /api/auth/key (README, "Endpoints" and "Keys"). Key creation is limited per
 * client (`req.ip`, derived from X-Forwarded-For only through the configured number of proxies; IPv6
 * clients by their /64) with a store shared by all replicas; beyond the limit it answers 429
 * `rate_limited` with Retry-After, counted before validation so malformed requests cannot probe
 * without limit.
 */
export function publicRoutes(deps: {
  keys: ApiKeyRepository;
  keyCreationLimit: RateLimit;
  dbReady: () => Promise<boolean>;
  now: () => Date;
}): ContractRouter {
  return contractRouter()
    .route(
      {
        method: 'get',
        path: '/api/health',
        operationId: 'getHealth',
        summary: 'Service health (PostgreSQL reachable)',
        tags: ['Public'],
        responses: {
          '200': { description: 'up', body: HealthResponse },
          '503': { description: 'the database is unreachable', body: HealthResponse },
        },
      },
      async (_req, res) => {
        const up = await deps.dbReady();
        const body: z.infer<typeof HealthResponse> = {
          status: up ? 'ok' : 'unavailable',
          service: 'skill-router',
          version: SERVICE_VERSION,
          timestamp: deps.now().toISOString(),
        };
        res.setHeader('cache-control', 'no-store');
        res.status(up ? 200 : 503).json(body);
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/auth/key',
        operationId: 'createKey',
        summary: 'Create an sk_router_ API key (shown once); 5 per minute per client IP',
        tags: ['Public'],
        request: { body: CreateKeyRequest },
        responses: {
          '201': {
            description: 'the new key; store it, it cannot be retrieved later',
            body: CreateKeyResponse,
          },
          '400': errorResponse('invalid body'),
          '429': errorResponse(
            'more than KEY_CREATION_LIMIT_PER_MINUTE keys per minute from this IP (`rate_limited`)',
            RETRY_AFTER_HEADER,
          ),
        },
        before: [
          async (req, _res, next) => {
            const decision = await deps.keyCreationLimit.consume(clientIpKey(req.ip));
            if (decision.allowed) return next();
            next(
              new AppError(
                'rate_limited',
                `Too many keys created from this address; retry in ${decision.retryAfterSeconds} s`,
                {
                  headers: { 'Retry-After': String(decision.retryAfterSeconds) },
                  details: { retry_after_seconds: decision.retryAfterSeconds },
                },
              ),
            );
          },
        ],
      },
      async (req, res) => {
        const { body } = res.locals.valid;
        const { key, hash, displayPrefix } = skillRouterKeys.generate();
        // Keys from one network and day are one reporter (README, "Reputation"); the address is not kept.
        const cohort = keyCohort(req.ip, deps.now());
        await deps.keys.create({ name: body.name, prefix: displayPrefix, keyHash: hash, cohort });
        res.setHeader('cache-control', 'no-store');
        const answer: z.infer<typeof CreateKeyResponse> = {
          ok: true,
          api_key: key,
          prefix: displayPrefix,
          message: 'Store this key securely: it is shown only once and cannot be retrieved later.',
        };
        res.status(201).json(answer);
      },
    );
}
