import path from 'node:path';
import cookieParser from 'cookie-parser';
import express, { type Application } from 'express';
import { createServiceApp, type ServiceAppDeps } from '@repo/service-kit';
import type { AccountRepository } from '../../data/accounts';
import type { ProductRepository } from '../../data/products';
import type { ProposalRepository } from '../../data/proposals';
import type { DeploymentService } from '../../domain/deployments';
import type { AuthRateLimiter } from '../../data/rate-limits';
import type { SignalRepository } from '../../data/signals';
import type { AnalysisService } from '../../domain/analysis';
import type { PasswordHasher } from '../../domain/passwords';
import type { SignalFeedbackEvents } from '../../metrics';
import { SIGNAL_FEEDBACK_MCP_INSTRUCTIONS, signalFeedbackTools } from '../mcp/tools';
import { authRoutes } from './auth';
import { loadSession, requireCsrf, stripQueryKey } from './auth-middleware';
import { signalFeedbackLlmsTxt } from './llms-txt';
import { SERVICE_VERSION, signalFeedbackOpenApi } from './openapi';
import { productsRoutes } from './products';
import type { ProductsDeps } from './product-routes';
import { proposalsRoutes } from './proposals';
import { deploymentsRoutes } from './deployments';
import { dashboardRoutes } from './dashboard';
import type { DashboardRepository } from '../../data/dashboard';
import { signalsRoutes } from './signals';
import type { ProductKeyCache } from '../../domain/product-key';

/** Everything the app needs, built by the composition root. */
export interface AppDeps extends ServiceAppDeps {
  accounts: AccountRepository;
  products: ProductRepository;
  signals: SignalRepository;
  /** Cache of API key lookups (ttl 0 in tests that need none). */
  keys: ProductKeyCache;
  proposals: ProposalRepository;
  analysis: AnalysisService;
  /** Deployments of approved proposals and their verification. */
  deployments: DeploymentService;
  passwords: PasswordHasher;
  limiter: AuthRateLimiter;
  /** Largest accepted signal batch (413 beyond). */
  maxBatch: number;
  /** Session lifetime in ms. */
  sessionTtlMs: number;
  /** Secure (and `__Host-`) session cookie. */
  secureCookies: boolean;
  /** `CORS_ORIGINS` as configured: comma-separated origins allowed by CORS and by the CSRF origin check. */
  corsOrigins?: string;
  now?: () => Date;
  /** Domain counters (signals accepted/refused); omitted in most tests. */
  events?: SignalFeedbackEvents;
  /** The dashboard's read queries (breakdown by type, latest signals, analysis readiness). */
  dashboard: DashboardRepository;
  /** `ANALYSIS_MIN_SIGNALS`, which the dashboard's analysis readiness reports. */
  analysisMinSignals: number;
  /** Product webhook settings: the repository, the SSRF policy and whether only https is accepted. */
  webhooks: ProductsDeps['webhooks'];
}

/** Folder of the dashboard's static files (same relative place from src/ and dist/). */
export const PUBLIC_DIR = path.join(__dirname, '../../..', 'public');

/**
 * Folder of Chart.js's browser build (`chart.umd.min.js`), served at `/vendor/chart.js/` from the
 * installed package: no CDN, and the version is the one the workspace catalog pins.
 */
export const CHART_JS_DIR = path.dirname(require.resolve('chart.js'));
/** Where the dashboard loads Chart.js from (public/index.html). */
export const CHART_JS_PATH = '/vendor/chart.js/chart.umd.min.js';

/**
 * The signal-feedback express app (no listen, no env): the endpoints under `/api` (README,
 * "Endpoints"), the account endpoints, the MCP endpoint `/mcp` and `/llms.txt` (README, "MCP"), the
 * dashboard at `/`, `/openapi.json` and `/docs` (the document generated from the routes' declarations),
 * the probes and `/metrics`, and the error envelope for everything else.
 */
export function createApp(deps: AppDeps): Application {
  const now = deps.now ?? (() => new Date());
  // The CSRF origin check accepts the same origins as CORS.
  const allowedOrigins = new Set(
    (deps.corsOrigins ?? '')
      .split(',')
      .map((origin) => origin.trim())
      .filter(Boolean),
  );
  const signals = signalsRoutes({
    signals: deps.signals,
    keys: deps.keys,
    maxBatch: deps.maxBatch,
    now,
    events: deps.events,
  });
  const auth = authRoutes({
    accounts: deps.accounts,
    passwords: deps.passwords,
    limiter: deps.limiter,
    secureCookies: deps.secureCookies,
    sessionTtlMs: deps.sessionTtlMs,
    allowedOrigins,
    now,
  });
  const products = productsRoutes({
    products: deps.products,
    onContextsChanged: (id) => deps.keys.invalidate((owner) => owner.productId === id),
    webhooks: deps.webhooks,
  });
  const proposals = proposalsRoutes({ proposals: deps.proposals, keys: deps.keys, analysis: deps.analysis });
  const deployments = deploymentsRoutes({
    deployments: deps.deployments,
    signals: deps.signals,
    keys: deps.keys,
    now,
  });
  const dashboard = dashboardRoutes({
    queries: deps.dashboard,
    minSignals: deps.analysisMinSignals,
    now,
  });
  // The document lists the key-authenticated endpoints first and the account endpoints last.
  const doc = signalFeedbackOpenApi(
    [signals, proposals, deployments, products, dashboard, auth].flatMap((routes) => routes.operations),
  );

  return createServiceApp(
    {
      ...deps,
      bodyLimit: deps.bodyLimit ?? '1mb',
      // `?key=` of POST /api/ingest leaves the URL before the access log prints it.
      beforeLogging: [stripQueryKey],
    },
    {
      // Ingestion first: its two POST routes share no path with the document or the static files, so
      // the order changes no answer, only how much each batch walks through.
      first: [signals.router],
      // MCP authenticates by the x-api-key header alone, never by the cookie: it stays outside the
      // session and CSRF middleware of `routes`, as the key-authenticated ingestion does.
      mcp: {
        name: 'signal-feedback',
        version: SERVICE_VERSION,
        instructions: SIGNAL_FEEDBACK_MCP_INSTRUCTIONS,
        tools: signalFeedbackTools({
          signals: deps.signals,
          keys: deps.keys,
          proposals: deps.proposals,
          deployments: deps.deployments,
          maxBatch: deps.maxBatch,
          now,
          events: deps.events,
        }),
      },
      // Before the static files, so no file in public/ could shadow them.
      llmsTxt: signalFeedbackLlmsTxt({ maxBatch: deps.maxBatch }),
      openApi: doc,
      routes: [
        express.static(PUBLIC_DIR, { index: 'index.html', maxAge: '5m' }),
        // Only the package's one browser file, not its sources or maps; a static file like the
        // dashboard's own, so it is not an operation of the API document.
        {
          path: CHART_JS_PATH,
          use: [
            (req, res, next) => {
              if ((req.method !== 'GET' && req.method !== 'HEAD') || req.path !== '/') return next();
              // `root` keeps pnpm's `.pnpm` folder out of the dot-file check, which sees only the file name.
              res.sendFile('chart.umd.min.js', { root: CHART_JS_DIR, maxAge: '1d' }, (err) => {
                if (err) next(err);
              });
            },
          ],
        },
        // Everything below may be cookie-authenticated: load the session, then CSRF-check writes.
        {
          path: '/api',
          use: [
            cookieParser(),
            loadSession(deps.accounts, deps.secureCookies, now),
            requireCsrf(allowedOrigins),
          ],
        },
        auth.router,
        // Before the products router: its session check covers every /api/context path, series included.
        deployments.router,
        products.router,
        proposals.router,
        dashboard.router,
      ],
    },
  );
}
