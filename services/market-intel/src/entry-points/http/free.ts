import { Router } from 'express';
import { validate } from '@repo/service-kit';
import type { SectorList } from '@repo/schemas';
import type { ReportRepository } from '../../data/reports';
import { RETRY_AFTER_SECONDS, type HealthProbe } from '../../domain/health';
import { NetworkOnlyQuery } from './query';

/**
 * The free endpoints under `/api/v1` (market-intel spec, "Discovery and health"): the sector list and
 * health (200 healthy; 503 with `errorClass` and `Retry-After` otherwise).
 */
export function freeRouter(deps: { reports: ReportRepository; health: HealthProbe }): Router {
  const router = Router();

  router.get('/sectors', validate({ query: NetworkOnlyQuery }), async (_req, res) => {
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
  });

  router.get('/health', validate({ query: NetworkOnlyQuery }), async (_req, res) => {
    const report = await deps.health();
    if (report.status === 503 && report.body.errorClass) {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS[report.body.errorClass]));
    }
    res.setHeader('cache-control', 'no-store');
    res.status(report.status).json(report.body);
  });

  return router;
}
