import {
  contractRouter,
  RETRY_AFTER_HEADER,
  type ContractRouter,
  type RouteContract,
} from '@repo/service-kit';
import { HealthResponse, SectorList } from '@repo/schemas';
import type { ReportRepository } from '../../data/reports';
import { RETRY_AFTER_SECONDS, type HealthProbe } from '../../domain/health';
import { BAD_NETWORK } from './contract-parts';
import { NetworkOnlyQuery } from '../../schemas';

/**
 * A free endpoint's `contract` in the `Discovery` group, with `network` as its only query parameter
 * and the 400 of a network that is not accepted ({@link BAD_NETWORK}).
 */
function discovery(contract: Omit<RouteContract, 'tags' | 'request'>) {
  return {
    ...contract,
    tags: ['Discovery'],
    request: { query: NetworkOnlyQuery },
    responses: { ...contract.responses, '400': BAD_NETWORK },
  } satisfies RouteContract;
}

/**
 * The free endpoints (services/market-intel/README.md, "Endpoints"): `GET /api/v1/sectors`, the
 * sector list, and `GET /api/v1/health` (200 healthy; 503 with `errorClass` and `Retry-After` in
 * seconds otherwise, README "Failed jobs and health (market-intel)"). Each route declares its
 * contract; mount the router at the root (its paths are absolute).
 */
export function freeRouter(deps: { reports: ReportRepository; health: HealthProbe }): ContractRouter {
  return contractRouter()
    .route(
      discovery({
        method: 'get',
        path: '/api/v1/sectors',
        operationId: 'listSectors',
        summary: 'Sectors with stored reports (free); call before paying for sector-filtered data',
        responses: { '200': { description: 'the sector list', body: SectorList } },
      }),
      async (_req, res) => {
        const stats = await deps.reports.sectorStats();
        let latest: Date | null = null;
        for (const s of stats) if (!latest || s.latestReport > latest) latest = s.latestReport;
        const body: SectorList = {
          sectors: stats.map((s) => ({
            sector: s.sector,
            report_count: s.reportCount,
            latest_report: s.latestReport.toISOString(),
            gaps_count: s.gapsCount,
          })),
          total_reports: stats.reduce((sum, s) => sum + s.reportCount, 0),
          latest_overall: latest ? latest.toISOString() : null,
        };
        res.json(body);
      },
    )
    .route(
      discovery({
        method: 'get',
        path: '/api/v1/health',
        operationId: 'getHealth',
        summary: 'Health of the compute upstreams (free)',
        responses: {
          '200': { description: 'healthy', body: HealthResponse },
          '503': {
            description: 'unhealthy: errorClass upstream (Retry-After 30) or config (Retry-After 600)',
            body: HealthResponse,
            headers: RETRY_AFTER_HEADER,
          },
        },
      }),
      async (_req, res) => {
        const report = await deps.health();
        if (report.status === 503 && report.body.errorClass) {
          res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS[report.body.errorClass]));
        }
        res.setHeader('cache-control', 'no-store');
        res.status(report.status).json(report.body);
      },
    );
}
