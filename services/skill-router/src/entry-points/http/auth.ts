import type { RequestHandler } from 'express';
import { AppError } from '@repo/errors';
import { hashApiKey, hashesEqual } from '@repo/service-kit';
import type { ApiKeyRepository } from '../../data/api-keys';
import { skillRouterKeys } from '../../domain/api-keys';

/** The authenticated key, stored in `res.locals.apiKey` by {@link requireApiKey}. */
export interface AuthenticatedKey {
  id: string;
  prefix: string;
}

/** Most keys kept in {@link requireApiKey}'s cache; the oldest entry is evicted beyond it. */
const KEY_CACHE_MAX = 10_000;

/**
 * Protects a route (README, "Keys"): header `x-api-key` must carry a key from
 * POST /api/auth/key. The key is hashed (SHA-256), looked up by hash and the hashes compared in
 * constant time. Known keys are cached by hash for `cacheTtlMs` (keys are never changed or revoked
 * today; the TTL bounds how long a future revocation could go unnoticed); unknown keys are not cached.
 * @param cacheTtlMs how long a found key is trusted without a lookup, in ms; 0 disables the cache
 * @throws AppError `unauthorized` (401) when the header is missing or the key unknown
 */
export function requireApiKey(keys: ApiKeyRepository, cacheTtlMs = 60_000): RequestHandler {
  const cache = new Map<string, { key: AuthenticatedKey; keyHash: string; until: number }>();
  const lookup = async (hash: string): Promise<AuthenticatedKey | null> => {
    const hit = cache.get(hash);
    if (hit && hit.until > Date.now() && hashesEqual(hit.keyHash, hash)) return hit.key;
    const stored = await keys.findByHash(hash);
    if (!stored || !hashesEqual(stored.keyHash, hash)) return null;
    const key = { id: stored.id, prefix: stored.prefix };
    if (cacheTtlMs > 0) {
      if (cache.size >= KEY_CACHE_MAX) cache.delete(cache.keys().next().value as string);
      cache.set(hash, { key, keyHash: stored.keyHash, until: Date.now() + cacheTtlMs });
    }
    return key;
  };
  return async (req, res, next) => {
    const header = req.headers['x-api-key'];
    const presented = typeof header === 'string' ? header.trim() : '';
    if (!presented) {
      next(
        new AppError('unauthorized', 'Missing x-api-key header', {
          headers: { 'WWW-Authenticate': 'ApiKey header="x-api-key"' },
        }),
      );
      return;
    }
    const key = skillRouterKeys.looksLike(presented) ? await lookup(hashApiKey(presented)) : null;
    if (key) {
      res.locals.apiKey = key satisfies AuthenticatedKey;
      next();
      return;
    }
    next(
      new AppError('unauthorized', 'Invalid API key', {
        headers: { 'WWW-Authenticate': 'ApiKey header="x-api-key"' },
      }),
    );
  };
}

/** The key {@link requireApiKey} authenticated. */
export function authenticatedKey(locals: Record<string, unknown>): AuthenticatedKey {
  return locals.apiKey as AuthenticatedKey;
}
