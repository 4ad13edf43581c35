import { Router, type CookieOptions, type Response } from 'express';
import type { z } from 'zod';
import { AppError } from '@repo/errors';
import { validate, validated, type RateDecision } from '@repo/service-kit';
import type { AccountRepository, SessionRecord, UserRecord } from '../../data/accounts';
import type { AuthRateLimiter } from '../../data/rate-limits';
import type { PasswordHasher } from '../../domain/passwords';
import { monthKey, nextMonthStart, PLAN_LIMITS } from '../../domain/plans';
import { newSessionTokens } from '../../domain/sessions';
import { Credentials, SignupBody, type Me } from '../../schemas';
import { checkOrigin, requireSession, sessionCookieName, sessionOf } from './auth-middleware';

/** Dependencies of {@link authRouter}. */
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
 * The dashboard's account endpoints (README, "Sessions and CSRF"): POST /api/auth/signup, /login,
 * /logout and GET /api/auth/me. Sign-up and log-in answer with a session cookie (httpOnly, SameSite=Lax,
 * Secure in production) and the same body as /me, which carries the CSRF token.
 */
export function authRouter(deps: AuthDeps): Router {
  const router = Router();
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
        products: limits.products,
      },
      usage: {
        month,
        signals: usage.signals,
        proposals: usage.proposals,
        products: usage.products,
        resets_at: nextMonthStart(now).toISOString(),
      },
    };
  }

  async function startSession(res: Response, user: UserRecord): Promise<string> {
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
    return tokens.csrfToken;
  }

  router.post('/signup', validate({ body: SignupBody }, PASSWORD_NUL), async (req, res) => {
    checkOrigin(req, deps.allowedOrigins);
    const { body } = validated<unknown, unknown, CredentialsBody>(res.locals);
    refuse(await deps.limiter.signupAttempt(req.ip), 'sign-ups from this address');
    const user = await deps.accounts.createUser(body.email, await deps.passwords.hash(body.password));
    if (!user) throw new AppError('conflict', 'An account with this e-mail already exists');
    const csrf = await startSession(res, user);
    res.status(201).json(await me(user, csrf));
  });

  router.post('/login', validate({ body: Credentials }, PASSWORD_NUL), async (req, res) => {
    checkOrigin(req, deps.allowedOrigins);
    const { body } = validated<unknown, unknown, CredentialsBody>(res.locals);
    refuse(await deps.limiter.loginAttempt(body.email, req.ip), 'log-in attempts');
    const found = await deps.accounts.findByEmail(body.email);
    if (!(await deps.passwords.verify(found?.passwordHash, body.password)) || !found) {
      await deps.limiter.loginFailed(body.email, req.ip);
      throw new AppError('unauthorized', 'Wrong e-mail or password');
    }
    await deps.limiter.loginSucceeded(body.email, req.ip);
    const csrf = await startSession(res, found);
    res.json(await me(found, csrf));
  });

  // Behind requireCsrf (mounted in app.ts): a cross-site page cannot log the user out.
  router.post('/logout', async (_req, res) => {
    const session = sessionOf(res);
    if (session) await deps.accounts.deleteSession(session.tokenHash);
    res.clearCookie(cookieName, cookieOptions);
    res.status(204).end();
  });

  router.get('/me', requireSession, async (_req, res) => {
    const session = sessionOf(res) as SessionRecord;
    res.setHeader('cache-control', 'no-store');
    res.json(await me(session.user, session.csrfToken));
  });

  return router;
}

/** Parsed credentials. */
type CredentialsBody = z.infer<typeof Credentials>;
