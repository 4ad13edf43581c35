import path from 'node:path';
import cookieParser from 'cookie-parser';
import express, { type Application } from 'express';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { createBaseApp, type Logger, type ServiceMetrics } from '@repo/service-kit';
import type { AccountRepository } from '../../data/accounts';
import type { ProductRepository } from '../../data/products';
import type { ProposalRepository } from '../../data/proposals';
import type { AuthRateLimiter } from '../../data/rate-limits';
import type { KeyOwnerCache } from '../../data/key-cache';
import type { SignalRepository } from '../../data/signals';
import type { AnalysisService } from '../../domain/analysis';
import type { PasswordHasher } from '../../domain/passwords';
import type { SignalFeedbackEvents } from '../../metrics';
import { authRouter } from './auth';
import { loadSession, requireCsrf, stripQueryKey } from './auth-middleware';
import { openApiRouter } from './openapi';
import { productsRouter } from './products';
import { proposalsRouter } from './proposals';
import { signalsRouter } from './signals';

/** Everything the app needs, built by the composition root. */
export interface AppDeps {
  logger: Logger;
  accounts: AccountRepository;
  products: ProductRepository;
  signals: SignalRepository;
  /** Cache of API key lookups (ttl 0 in tests that need none). */
  keys: KeyOwnerCache;
  proposals: ProposalRepository;
  analysis: AnalysisService;
  passwords: PasswordHasher;
  limiter: AuthRateLimiter;
  /** Largest accepted signal batch (413 beyond). */
  maxBatch: number;
  /** Session lifetime in ms. */
  sessionTtlMs: number;
  /** Secure (and `__Host-`) session cookie. */
  secureCookies: boolean;
  /** `/readyz`: true while PostgreSQL answers and the service is not shutting down. */
  isReady?: () => boolean | Promise<boolean>;
  trustProxy?: number;
  bodyLimit?: string;
  /** `CORS_ORIGINS` as configured: comma-separated origins allowed by CORS and by the CSRF origin check. */
  corsOrigins?: string;
  now?: () => Date;
  /** Prometheus registry served at `/metrics`; omitted in most tests. */
  metrics?: ServiceMetrics;
  /** Domain counters (signals accepted/refused); omitted in most tests. */
  events?: SignalFeedbackEvents;
}

/** Folder of the dashboard's static files (same relative place from src/ and dist/). */
export const PUBLIC_DIR = path.join(__dirname, '../../..', 'public');

/**
 * The signal-feedback express app (no listen, no env): the endpoints under `/api` (README,
 * "Endpoints"), the account endpoints, the dashboard at `/`, `/openapi.json` and `/docs`, the probes and
 * `/metrics`, and the error envelope for everything else.
 */
export function createApp(deps: AppDeps): Application {
  const app = createBaseApp({
    logger: deps.logger,
    trustProxy: deps.trustProxy,
    bodyLimit: deps.bodyLimit ?? '1mb',
    corsOrigins: deps.corsOrigins,
    isReady: deps.isReady,
    metrics: deps.metrics,
  });
  const now = deps.now ?? (() => new Date());
  // The CSRF origin check accepts the same origins as CORS.
  const allowedOrigins = new Set(
    (deps.corsOrigins ?? '')
      .split(',')
      .map((origin) => origin.trim())
      .filter(Boolean),
  );
  app.use(openApiRouter(deps.maxBatch));
  app.use(express.static(PUBLIC_DIR, { index: 'index.html', maxAge: '5m' }));
  app.use(
    '/api',
    signalsRouter({
      signals: deps.signals,
      keys: deps.keys,
      maxBatch: deps.maxBatch,
      now,
      events: deps.events,
    }),
  );

  // Everything below may be cookie-authenticated: load the session, then CSRF-check writes.
  const session = [
    cookieParser(),
    loadSession(deps.accounts, deps.secureCookies, now),
    requireCsrf(allowedOrigins),
  ];
  app.use('/api', session);
  app.use(
    '/api/auth',
    authRouter({
      accounts: deps.accounts,
      passwords: deps.passwords,
      limiter: deps.limiter,
      secureCookies: deps.secureCookies,
      sessionTtlMs: deps.sessionTtlMs,
      allowedOrigins,
      now,
    }),
  );
  app.use(
    '/api',
    productsRouter({ products: deps.products, onContextsChanged: (id) => deps.keys.invalidateProduct(id) }),
  );
  app.use('/api', proposalsRouter({ proposals: deps.proposals, keys: deps.keys, analysis: deps.analysis }));
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  // The outer app only takes `?key=` out of the URL before the base app's access log sees it.
  const outer = express();
  outer.disable('x-powered-by');
  outer.use(stripQueryKey);
  outer.use(app);
  return outer;
}
