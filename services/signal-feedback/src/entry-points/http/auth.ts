import type { CookieOptions, Response } from 'express';
import { AppError } from '@repo/errors';
import {
  contractRouter,
  errorResponse,
  RETRY_AFTER_HEADER,
  type ContractRouter,
  type RateDecision,
  type RouteContract,
} from '@repo/service-kit';
import type { AccountRepository, UserRecord } from '../../data/accounts';
import type { AuthRateLimiter } from '../../data/rate-limits';
import type { PasswordHasher } from '../../domain/passwords';
import { monthKey, nextMonthStart, PLAN_LIMITS } from '../../domain/plans';
import { newSessionTokens } from '../../domain/sessions';
import { Credentials, Me, SignupBody } from '../../schemas/accounts';
import {
  checkOrigin,
  requiredSession,
  requireSession,
  sessionCookieName,
  sessionOf,
} from './auth-middleware';
import { withAccess } from './access';
import { CSRF_HEADER_PARAMETER, SESSION_SECURITY } from './openapi';

/** Dependencies of {@link authRoutes}. */
export interface AuthDeps {
  accounts: AccountRepository;
  passwords: PasswordHasher;
  limiter: AuthRateLimiter;
  /** Secure cookies (production). */
  secureCookies: boolean;
  /** Session lifetime in ms. */
  sessionTtlMs: number;
  allowedOrigins: ReadonlySet<string>;
  now: () => Date;
}

function refuse(decision: RateDecision, what: string): void {
  if (!decision.allowed) {
    throw new AppError('rate_limited', `Too many ${what}; retry in ${decision.retryAfterSeconds} s`, {
      headers: { 'Retry-After': String(decision.retryAfterSeconds) },
      details: { retry_after_seconds: decision.retryAfterSeconds },
    });
  }
}

/** A password is only hashed, never stored as text: it may hold NUL (every other field may not). */
const PASSWORD_NUL = { nulAllowed: ['body.password'] };

/**
 * `contract` of a write that signs in (sign-up, log-in; README, "Sessions and CSRF"): before a session
 * there is no CSRF token, so the handler's origin check is its 403; the password may hold NUL (the body
 * parser's 413 and 415 are every body's, added by the router).
 */
function signInContract<C extends RouteContract>(contract: C): C {
  return {
    ...contract,
    validation: PASSWORD_NUL,
    responses: { '403': errorResponse('cross-origin request'), ...contract.responses },
  };
}

/**
 * The dashboard's account endpoints (README, "Sessions and CSRF" and "Endpoints"): POST
 * /api/auth/signup, /login, /logout and GET /api/auth/me. Sign-up and log-in answer with a session
 * cookie (httpOnly, SameSite=Lax, Secure in production) and the same body as /me, which carries the
 * CSRF token; too many attempts are 429 `rate_limited` with Retry-After. Mount after `loadSession` and
 * `requireCsrf`.
 */
export function authRoutes(deps: AuthDeps): ContractRouter {
  const cookieName = sessionCookieName(deps.secureCookies);
  const cookieOptions: CookieOptions = {
    httpOnly: true,
    sameSite: 'lax',
    secure: deps.secureCookies,
    path: '/',
  };

  async function me(user: UserRecord, csrfToken: string): Promise<Me> {
    const now = deps.now();
    const month = monthKey(now);
    const usage = await deps.accounts.usage(user.id, month);
    const limits = PLAN_LIMITS[user.plan];
    return {
      user: { id: user.id, email: user.email, plan: user.plan, created_at: user.createdAt.toISOString() },
      csrf_token: csrfToken,
      limits: {
        signals_per_month: limits.signalsPerMonth,
        proposals_per_month: limits.proposalsPerMonth,
        deployments_per_month: limits.deploymentsPerMonth,
        products: limits.products,
      },
      usage: {
        month,
        signals: usage.signals,
        proposals: usage.proposals,
        deployments: usage.deployments,
        products: usage.products,
        resets_at: nextMonthStart(now).toISOString(),
      },
    };
  }

  /** Signs `user` in: a new session and its cookie, then the /me body (with its CSRF token) as a `status` answer. */
  async function signIn(res: Response, user: UserRecord, status: 200 | 201): Promise<void> {
    const tokens = newSessionTokens();
    const expiresAt = new Date(deps.now().getTime() + deps.sessionTtlMs);
    await deps.accounts.createSession({
      tokenHash: tokens.tokenHash,
      userId: user.id,
      csrfToken: tokens.csrfToken,
      expiresAt,
    });
    res.cookie(cookieName, tokens.token, { ...cookieOptions, expires: expiresAt });
    res.setHeader('cache-control', 'no-store');
    res.status(status).json(await me(user, tokens.csrfToken));
  }

  return contractRouter()
    .route(
      signInContract({
        method: 'post',
        path: '/api/auth/signup',
        operationId: 'signup',
        summary: 'Create an account (Free plan) and sign in: sets the session cookie',
        tags: ['Accounts'],
        request: { body: SignupBody },
        responses: {
          '201': { description: 'signed in', body: Me },
          '400': errorResponse('invalid e-mail or password under 10 characters'),
          '409': errorResponse('e-mail taken'),
          '429': errorResponse('too many sign-ups from this address', RETRY_AFTER_HEADER),
        },
      }),
      async (req, res) => {
        checkOrigin(req, deps.allowedOrigins);
        const { body } = res.locals.valid;
        refuse(await deps.limiter.signupAttempt(req.ip), 'sign-ups from this address');
        const user = await deps.accounts.createUser(body.email, await deps.passwords.hash(body.password));
        if (!user) throw new AppError('conflict', 'An account with this e-mail already exists');
        await signIn(res, user, 201);
      },
    )
    .route(
      signInContract({
        method: 'post',
        path: '/api/auth/login',
        operationId: 'login',
        summary: 'Sign in: sets the session cookie',
        tags: ['Accounts'],
        request: { body: Credentials },
        responses: {
          '200': { description: 'signed in', body: Me },
          '400': errorResponse('invalid body'),
          '401': errorResponse('wrong e-mail or password'),
          '429': errorResponse('too many attempts (Retry-After)', RETRY_AFTER_HEADER),
        },
      }),
      async (req, res) => {
        checkOrigin(req, deps.allowedOrigins);
        const { body } = res.locals.valid;
        refuse(await deps.limiter.loginAttempt(body.email, req.ip), 'log-in attempts');
        const found = await deps.accounts.findByEmail(body.email);
        if (!(await deps.passwords.verify(found?.passwordHash, body.password)) || !found) {
          await deps.limiter.loginFailed(body.email, req.ip);
          throw new AppError('unauthorized', 'Wrong e-mail or password');
        }
        await deps.limiter.loginSucceeded(body.email, req.ip);
        await signIn(res, found, 200);
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/auth/logout',
        operationId: 'logout',
        summary:
          'Sign out: deletes the session and clears the cookie (without a session: nothing to do, 204 all the same)',
        tags: ['Accounts'],
        // The session is optional: signing out is idempotent.
        security: [...SESSION_SECURITY, {}],
        request: { headers: [CSRF_HEADER_PARAMETER] },
        responses: { '204': { description: 'signed out' }, '403': errorResponse('CSRF check failed') },
      },
      // Behind requireCsrf (mounted in app.ts): a cross-site page cannot log the user out.
      async (_req, res) => {
        const session = sessionOf(res);
        if (session) await deps.accounts.deleteSession(session.tokenHash);
        res.clearCookie(cookieName, cookieOptions);
        res.status(204).end();
      },
    )
    .route(
      withAccess('session', {
        method: 'get',
        path: '/api/auth/me',
        operationId: 'me',
        summary: "The signed-in user, plan limits, this month's usage and the CSRF token",
        tags: ['Accounts'],
        responses: { '200': { description: 'the user', body: Me } },
        before: [requireSession],
      }),
      async (_req, res) => {
        const session = requiredSession(res);
        res.setHeader('cache-control', 'no-store');
        res.json(await me(session.user, session.csrfToken));
      },
    );
}
