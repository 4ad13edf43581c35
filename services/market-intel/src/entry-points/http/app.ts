import type { Application } from 'express';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { createBaseApp, openApiRoutes, type Logger, type ServiceMetrics } from '@repo/service-kit';
import type { ReportRepository } from '../../data/reports';
import type { HealthProbe } from '../../domain/health';
import { ScoutService } from '../../domain/scout';
import { dataApiRouter, type PaymentGate } from './data-api';
import { computeRouter, type ComputeDeps } from './compute';
import { freeRouter } from './free';
import { marketIntelOpenApi } from './openapi';

/** Everything the app needs, built by `main.ts` (or a test). */
export interface AppDeps {
  logger: Logger;
  reports: ReportRepository;
  /** The x402 payment middleware factory for paid routes. */
  pay: PaymentGate;
  health: HealthProbe;
  /** `/readyz`: true while PostgreSQL answers and the service is not shutting down. */
  isReady?: () => boolean | Promise<boolean>;
  trustProxy?: number;
  bodyLimit?: string;
  /** `CORS_ORIGINS` as configured: comma-separated origins allowed by CORS; closed when empty. */
  corsOrigins?: string;
  now?: () => Date;
  /** The Compute API's dependencies; without them the compute endpoints answer 503 `config`. */
  compute?: ComputeDeps;
  /** Prometheus registry served at `/metrics`; omitted in most tests. */
  metrics?: ServiceMetrics;
}

/**
 * The market-intel express app (no listen, no env; services/market-intel/README.md, "Endpoints"):
 * `/api/v1` Data API, Compute API and jobs, sectors and health, `/openapi.json` and `/docs` (the
 * document built once, here, from the routes' own contracts), the Kubernetes probes, and the error
 * envelope for everything else.
 */
export function createApp(deps: AppDeps): Application {
  const app = createBaseApp({
    logger: deps.logger,
    trustProxy: deps.trustProxy,
    bodyLimit: deps.bodyLimit,
    corsOrigins: deps.corsOrigins,
    isReady: deps.isReady,
    metrics: deps.metrics,
  });
  const scout = new ScoutService(deps.reports, deps.now);
  // Declared paths are absolute (/api/v1/...): every contract router is mounted at the root.
  const routers = [
    freeRouter({ reports: deps.reports, health: deps.health }),
    dataApiRouter({ scout, pay: deps.pay }),
    computeRouter(deps.compute),
  ];
  app.use(openApiRoutes(marketIntelOpenApi(routers.flatMap((r) => r.operations))));
  for (const { router } of routers) app.use(router);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
