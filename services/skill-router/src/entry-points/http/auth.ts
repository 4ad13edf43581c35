import type { RequestHandler, Response } from 'express';
import { presentedApiKey } from '@repo/service-kit';
import type { AuthenticatedKey, DiscoverOperations } from '../../domain/discover-operations';

/** The key each answered request was authenticated with, typed (res.locals is an untyped bag). */
const keys = new WeakMap<Response, AuthenticatedKey>();

/**
 * Protects a route (README, "Keys"): header `x-api-key`, or `Authorization: Bearer <key>` (see
 * `presentedApiKey`), must carry a key from POST /api/auth/key,
 * checked by {@link DiscoverOperations.authenticate}; {@link authenticatedKey} then returns it.
 * @throws AppError `unauthorized` (401) when the header is missing or the key unknown
 */
export function requireApiKey(operations: Pick<DiscoverOperations, 'authenticate'>): RequestHandler {
  return async (req, res, next) => {
    keys.set(res, await operations.authenticate(presentedApiKey(req)));
    next();
  };
}

/**
 * The key {@link requireApiKey} authenticated for this response.
 * @throws Error when the route runs no {@link requireApiKey} (a wiring mistake, answered 500)
 */
export function authenticatedKey(res: Response): AuthenticatedKey {
  const key = keys.get(res);
  if (!key) throw new Error('authenticatedKey: the route does not run requireApiKey');
  return key;
}
