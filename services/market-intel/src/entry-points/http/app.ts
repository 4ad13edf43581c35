import type { Application } from 'express';
import { createServiceApp, type ServiceAppDeps } from '@repo/service-kit';
import type { ReportRepository } from '../../data/reports';
import type { HealthProbe } from '../../domain/health';
import { ScoutService } from '../../domain/scout';
import type { PaymentGate } from '../../adapters/x402';
import { dataApiRouter } from './data-api';
import { computeRouter, type ComputeDeps } from './compute';
import { MARKET_INTEL_MCP_INSTRUCTIONS, marketIntelTools, type HttpHandler } from '../mcp/tools';
import type { NetworkPayment } from '../mcp/price-meta';
import type { ReceiptIssuer } from '@repo/x402-core/receipts';
import { freeRouter } from './free';
import { receiptKeysRouter } from './receipt-keys';
import { MARKET_INTEL_LLMS_TXT } from './llms-txt';
import { marketIntelOpenApi, SERVICE_VERSION } from './openapi';

/** Everything the app needs, built by `main.ts` (or a test). */
export interface AppDeps extends ServiceAppDeps {
  reports: ReportRepository;
  /** The x402 payment middleware factory for paid routes. */
  pay: PaymentGate;
  health: HealthProbe;
  now?: () => Date;
  /** The Compute API's dependencies; without them the compute endpoints answer 503 `config`. */
  compute?: ComputeDeps;
  /**
   * The request listener the HTTP server runs (the app behind the hot path), through which MCP tool
   * calls are dispatched; default the app itself.
   */
  httpHandler?: () => HttpHandler;
  /** How each offered network is paid, for the price metadata of the paid MCP tools (`networkPaymentsOf`). */
  mcpPayments?: readonly NetworkPayment[];
  /**
   * The signer of offers and receipts and the public base URL: its keys are served at
   * `/.well-known/jwks.json` and `/.well-known/did.json`. Absent: neither route exists.
   */
  receiptKeys?: { issuer: ReceiptIssuer; publicBaseUrl: string | undefined };
}

/**
 * The market-intel express app (no listen, no env; services/market-intel/README.md, "Endpoints"):
 * `/api/v1` Data API, Compute API and jobs, sectors and health, the keys of signed offers and
 * receipts under `/.well-known/`, the MCP endpoint `/mcp` (the same
 * operations as tools), `/llms.txt`, `/openapi.json` and `/docs` (the
 * document built once, here, from the routes' own contracts), the Kubernetes probes, and the error
 * envelope for everything else.
 */
export function createApp(deps: AppDeps): Application {
  const scout = new ScoutService(deps.reports, deps.now);
  // Declared paths are absolute (/api/v1/...): every contract router is mounted at the root.
  const free = freeRouter({ reports: deps.reports, health: deps.health });
  const dataApi = dataApiRouter({ scout, pay: deps.pay });
  const compute = computeRouter(deps.compute);
  const keys = deps.receiptKeys && receiptKeysRouter(deps.receiptKeys.issuer, deps.receiptKeys.publicBaseUrl);
  const routers = [free, dataApi, compute, ...(keys ? [keys] : [])]; // the OpenAPI document's order
  const app: Application = createServiceApp(deps, {
    // The paid Data API first: its requests, the busiest, then match no other router's routes on the
    // way. No two routers share a path, so the order changes nothing else.
    first: [dataApi.router],
    mcp: {
      name: 'market-intel',
      version: SERVICE_VERSION,
      instructions: MARKET_INTEL_MCP_INSTRUCTIONS,
      // Called per tool call, once `app` exists.
      tools: marketIntelTools(deps.httpHandler ?? (() => app), deps.mcpPayments),
    },
    llmsTxt: MARKET_INTEL_LLMS_TXT,
    openApi: marketIntelOpenApi(routers.flatMap((r) => r.operations)),
    routes: [free.router, compute.router, ...(keys ? [keys.router] : [])],
  });
  return app;
}
