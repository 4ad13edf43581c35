import { Router } from 'express';
import { AppError } from '@repo/errors';
import { clientIpKey, validate, validated, type RateLimit } from '@repo/service-kit';
import type { ApiKeyRepository } from '../../data/api-keys';
import { generateApiKey } from '../../domain/api-keys';
import { CreateKeyRequest, type HealthResponse } from '../../schemas';
import type { z } from 'zod';

/** The service version reported by health (spec, "Versioning"). */
export const SERVICE_VERSION = '0.1.0';

/**
 * GET /api/health and POST /api/auth/key (skill-router spec, "Endpoints"). Key creation is limited per
 * client (`req.ip`, derived from X-Forwarded-For only through the configured number of proxies; IPv6
 * clients by their /64)
 * with a store shared by all replicas; beyond the limit it answers 429 `rate_limited` with Retry-After.
 */
export function publicRouter(deps: {
  keys: ApiKeyRepository;
  keyCreationLimit: RateLimit;
  dbReady: () => Promise<boolean>;
  now: () => Date;
}): Router {
  const router = Router();

  router.get('/health', async (_req, res) => {
    const up = await deps.dbReady();
    const body: z.infer<typeof HealthResponse> = {
      status: up ? 'ok' : 'unavailable',
      service: 'skill-router',
      version: SERVICE_VERSION,
      timestamp: deps.now().toISOString(),
    };
    res.setHeader('cache-control', 'no-store');
    res.status(up ? 200 : 503).json(body);
  });

  router.post(
    '/auth/key',
    async (req, _res, next) => {
      // Counted before validation, so malformed requests cannot probe without limit.
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
    validate({ body: CreateKeyRequest }),
    async (_req, res) => {
      const { body } = validated<unknown, unknown, CreateKeyRequest>(res.locals);
      const key = generateApiKey();
      await deps.keys.create({ name: body.name, prefix: key.prefix, keyHash: key.keyHash });
      res.setHeader('cache-control', 'no-store');
      res.status(201).json({
        ok: true,
        api_key: key.apiKey,
        prefix: key.prefix,
        message: 'Store this key securely: it is shown only once and cannot be retrieved later.',
      });
    },
  );

  return router;
}
