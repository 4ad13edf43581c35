import type { RequestHandler } from 'express';
import type { AuthenticatedKey, DiscoverOperations } from '../../domain/discover-operations';

/**
 * Protects a route (README, "Keys"): header `x-api-key` must carry a key from POST /api/auth/key,
 * checked by {@link DiscoverOperations.authenticate}; the key goes into `res.locals.apiKey`.
 * @throws AppError `unauthorized` (401) when the header is missing or the key unknown
 */
export function requireApiKey(operations: Pick<DiscoverOperations, 'authenticate'>): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers['x-api-key'];
    res.locals.apiKey = await operations.authenticate(typeof header === 'string' ? header : undefined);
    next();
  };
}

/** The key {@link requireApiKey} authenticated. */
export function authenticatedKey(locals: Record<string, unknown>): AuthenticatedKey {
  return locals.apiKey as AuthenticatedKey;
}
