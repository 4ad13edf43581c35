import type { IncomingMessage } from 'node:http';
// cookie-parser's types declare `req.cookies`.
import type {} from 'cookie-parser';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '@repo/errors';
import { presentedApiKey } from '@repo/service-kit';
import type { SessionRecord } from '../../data/accounts';
import type { KeyOwner } from '../../data/signals';
import { hashSessionToken, safeEqual } from '../../domain/sessions';
import type { AccountRepository } from '../../data/accounts';
import { SIGNAL_FEEDBACK_ERRORS } from '../../domain/errors';
import { authenticateProductKey, type ProductKeyCache } from '../../domain/product-key';

/** Name of the session cookie; `__Host-` prefixed when cookies are Secure (no Domain, Path=/). */
export function sessionCookieName(secure: boolean): string {
  return secure ? '__Host-sf_session' : 'sf_session';
}

/** Header carrying the CSRF token on cookie-authenticated writes. */
export const CSRF_HEADER = 'x-csrf-token';

/** Writes that establish a session (paths below `/api`). */
const SESSIONLESS_WRITES = new Set(['/auth/signup', '/auth/login']);

const KEY_PARAM = /([?&]key=)([^&#]*)/;
/** Keys taken out of request URLs by {@link stripQueryKey}. */
const queryKeys = new WeakMap<IncomingMessage, string>();

/**
 * Takes the `key` query parameter out of the URL before anything logs it (the access log prints
 * URLs): the value is kept for {@link apiKeyAuth} and the URL carries `key=[redacted]`. Mount first.
 */
export const stripQueryKey: RequestHandler = (req, _res, next) => {
  const m = KEY_PARAM.exec(req.url);
  if (m) {
    let value = m[2] ?? '';
    try {
      value = decodeURIComponent(value.replace(/\+/g, ' '));
    } catch {
      // A malformed escape stays as sent and fails the key check.
    }
    queryKeys.set(req, value);
    req.url = req.url.replace(/([?&]key=)[^&#]*/g, '$1[redacted]');
    req.originalUrl = req.originalUrl.replace(/([?&]key=)[^&#]*/g, '$1[redacted]');
  }
  next();
};

const SESSION_NEEDED = 'Sign in first: this endpoint needs a session';

/** Who the auth middleware found behind a request: its session, the product of its API key. */
interface Caller {
  session?: SessionRecord;
  keyOwner?: KeyOwner;
}
/** The caller of each response, typed (res.locals is an untyped bag). */
const callers = new WeakMap<Response, Caller>();

/** The caller of `res`, created empty on first use. */
function callerOf(res: Response): Caller {
  const found = callers.get(res);
  if (found) return found;
  const created: Caller = {};
  callers.set(res, created);
  return created;
}

/** The session found by {@link loadSession}, if any. */
export function sessionOf(res: Response): SessionRecord | undefined {
  return callers.get(res)?.session;
}

/**
 * The session of a route behind {@link requireSession} (or {@link keyOrSession} without a key).
 * @throws AppError `unauthorized` (401) when no session was loaded
 */
export function requiredSession(res: Response): SessionRecord {
  const session = sessionOf(res);
  if (!session) throw new AppError('unauthorized', SESSION_NEEDED);
  return session;
}

/** The product authenticated by an API key, if any. */
export function keyOwnerOf(res: Response): KeyOwner | undefined {
  return callers.get(res)?.keyOwner;
}

/**
 * The product of a route behind `apiKeyAuth(keys, { required: true })`.
 * @throws AppError `unauthorized` (401) when no key was authenticated
 */
export function requiredKeyOwner(res: Response): KeyOwner {
  const owner = keyOwnerOf(res);
  if (!owner) throw new AppError('unauthorized', 'Send a product API key');
  return owner;
}

/**
 * Loads the session named by the session cookie, for {@link sessionOf} (no error when absent or
 * expired: routes decide whether they need one).
 */
export function loadSession(accounts: AccountRepository, secure: boolean, now: () => Date): RequestHandler {
  const name = sessionCookieName(secure);
  return async (req, res, next) => {
    // Absent from an app that does not mount cookie-parser.
    const cookies: Record<string, unknown> | undefined = req.cookies;
    const token = cookies?.[name];
    if (typeof token === 'string' && token.length > 0 && token.length <= 100) {
      const session = await accounts.findSession(hashSessionToken(token), now());
      if (session) callerOf(res).session = session;
    }
    next();
  };
}

/** 401 unless a session was loaded. */
export const requireSession: RequestHandler = (_req, res, next) => {
  if (!sessionOf(res)) {
    next(new AppError('unauthorized', SESSION_NEEDED));
    return;
  }
  next();
};

/**
 * Rejects a cross-site request: when an `Origin` header is present it must be this service's own
 * origin or one of `allowedOrigins`.
 * @throws AppError `csrf_failed` (403)
 */
export function checkOrigin(req: Request, allowedOrigins: ReadonlySet<string>): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const own = `${req.protocol}://${req.get('host') ?? ''}`;
  if (origin !== own && !allowedOrigins.has(origin)) {
    throw new AppError(SIGNAL_FEEDBACK_ERRORS.csrf_failed, 'Cross-origin request refused');
  }
}

/**
 * CSRF protection of cookie-authenticated writes (README, "Sessions and CSRF"): same-origin check plus
 * the session's synchronizer token in `x-csrf-token`. Safe methods pass.
 * @throws AppError `csrf_failed` (403)
 */
export function requireCsrf(allowedOrigins: ReadonlySet<string>): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    // Sign-up and log-in check the origin themselves: a stale session must not block a new log-in.
    if (
      req.method === 'GET' ||
      req.method === 'HEAD' ||
      req.method === 'OPTIONS' ||
      SESSIONLESS_WRITES.has(req.path)
    ) {
      next();
      return;
    }
    const session = sessionOf(res);
    // Without a session, or with an API key header or Authorization (which no cross-site form can
    // send), nothing rides on the cookie.
    if (!session || req.get('x-api-key') !== undefined || req.get('authorization') !== undefined) {
      next();
      return;
    }
    checkOrigin(req, allowedOrigins);
    const header = req.get(CSRF_HEADER);
    if (!header || !safeEqual(header, session.csrfToken)) {
      next(
        new AppError(
          SIGNAL_FEEDBACK_ERRORS.csrf_failed,
          `Missing or wrong ${CSRF_HEADER} header (GET /api/auth/me returns the token)`,
        ),
      );
      return;
    }
    next();
  };
}

/**
 * Authenticates a product API key from `x-api-key` or `Authorization: Bearer` (see `presentedApiKey`;
 * and, with `allowQuery`, the `key` query parameter,
 * which wins when both are given), with {@link authenticateProductKey}, for {@link keyOwnerOf}.
 * @param required answer 401 when no valid key was presented (else continue without one, unless a key
 *   was presented and is invalid: always 401)
 * @throws AppError `unauthorized` (401)
 */
export function apiKeyAuth(
  keys: ProductKeyCache,
  options: { allowQuery?: boolean; required: boolean },
): RequestHandler {
  return async (req, res, next) => {
    const fromQuery = options.allowQuery ? queryKeys.get(req) : undefined;
    const key = fromQuery ?? presentedApiKey(req);
    if (!options.required && (key === undefined || key === '')) {
      next();
      return;
    }
    callerOf(res).keyOwner = await authenticateProductKey(keys, key);
    next();
  };
}

/**
 * Accepts a product key in `x-api-key` or a dashboard session (README, "Endpoints": proposals,
 * deployments and series): 401 `unauthorized` with neither, 401 for a wrong key even with a session.
 * Afterwards {@link keyOwnerOf} or {@link sessionOf} names the caller.
 */
export function keyOrSession(keys: ProductKeyCache): RequestHandler {
  const optionalKey = apiKeyAuth(keys, { required: false });
  return (req, res, next) => {
    const done = (err?: unknown) => {
      if (err) next(err);
      else if (!keyOwnerOf(res) && !sessionOf(res))
        next(new AppError('unauthorized', 'Send a product API key in x-api-key or sign in'));
      else next();
    };
    Promise.resolve(optionalKey(req, res, done)).catch(next);
  };
}

/** The scope of the caller {@link keyOrSession} let through: the key's product, or the session's user. */
export function callerScope(res: Response): { productId: string } | { userId: string } {
  const owner = keyOwnerOf(res);
  return owner ? { productId: owner.productId } : { userId: requiredSession(res).user.id };
}
