import type { RequestHandler } from 'express';
import { AppError } from '@repo/errors';
import type { ApiKeyRepository } from '../data/api-keys';
import { hashApiKey, hashesEqual, looksLikeApiKey } from '../domain/api-keys';

/** The authenticated key, stored in `res.locals.apiKey` by {@link requireApiKey}. */
export interface AuthenticatedKey {
  id: string;
  prefix: string;
}

/**
 * Protects a route (skill-router spec, "Authentication"): header `x-api-key` must carry a key from
 * POST /api/auth/key. The key is hashed (SHA-256), looked up by hash and the hashes compared in
 * constant time.
 * @throws AppError `unauthorized` (401) when the header is missing or the key unknown
 */
export function requireApiKey(keys: ApiKeyRepository): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers['x-api-key'];
    const presented = typeof header === 'string' ? header.trim() : '';
    if (!presented) {
      next(new AppError('unauthorized', 'Missing x-api-key header', { headers: { 'WWW-Authenticate': 'ApiKey header="x-api-key"' } }));
      return;
    }
    if (looksLikeApiKey(presented)) {
      const hash = hashApiKey(presented);
      const stored = await keys.findByHash(hash);
      if (stored && hashesEqual(stored.keyHash, hash)) {
        res.locals.apiKey = { id: stored.id, prefix: stored.prefix } satisfies AuthenticatedKey;
        next();
        return;
      }
    }
    next(new AppError('unauthorized', 'Invalid API key', { headers: { 'WWW-Authenticate': 'ApiKey header="x-api-key"' } }));
  };
}

/** The key {@link requireApiKey} authenticated. */
export function authenticatedKey(locals: Record<string, unknown>): AuthenticatedKey {
  return locals.apiKey as AuthenticatedKey;
}
