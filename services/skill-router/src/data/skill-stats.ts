import { notifyRouting } from './routing-rows';
import type { PrismaDb } from './prisma';

/** Aggregates over the metric windows (24 h for success and latency, 30 days for calls and ratings). */
export interface MetricWindow {
  observations24h: number;
  successes24h: number;
  /** Milliseconds; `null` with no observation in 24 hours. */
  avgLatencyMs: number | null;
  checks24h: number;
  calls30d: number;
  /** Sum and count of satisfaction ratings (1–5). */
  ratingSum: number;
  ratingCount: number;
}

/** A call report to store. */
export interface CallReportRecord {
  skillId: string;
  apiKeyId: string;
  caller: string;
  callResult: string;
  latencyMs?: number;
  /** 1–5. */
  satisfaction?: number;
  notes?: string;
  /** Whether the report moves the skill's metrics (kept either way). */
  counted: boolean;
}

/**
 * Call reports (`call_reports`) and the metrics of each skill (`skill_stats`): the live aggregates
 * over the metric windows and the denormalised values the router and the listing read.
 */
export class SkillStats {
  constructor(private readonly prisma: PrismaDb) {}

  /** Stores a call report; it moves nothing until the metrics are refreshed. */
  async addReport(report: CallReportRecord): Promise<void> {
    await this.prisma.callReport.create({
      data: {
        counted: report.counted,
        skillId: report.skillId,
        apiKeyId: report.apiKeyId,
        caller: report.caller,
        callResult: report.callResult,
        latencyMs: report.latencyMs ?? null,
        satisfaction: report.satisfaction ?? null,
        notes: report.notes ?? null,
      },
    });
  }

  /**
   * Aggregates over the metric windows, read now: health checks (verification and periodic) and
   * counted call reports of the last 24 hours give the success rate and the average latency; counted
   * reports of the last 30 days give the call count and the ratings.
   */
  async metricWindow(skillId: string): Promise<MetricWindow> {
    const rows = await this.prisma.$queryRawUnsafe<
      {
        n: bigint;
        s: bigint;
        lat: number | null;
        checks: bigint;
        calls: bigint;
        rsum: bigint;
        rcount: bigint;
      }[]
    >(
      `WITH obs AS (
         SELECT ok, latency_ms, true AS is_check FROM health_checks
          WHERE skill_id = $1 AND checked_at > now() - interval '24 hours'
         UNION ALL
         SELECT call_result = 'success', latency_ms, false FROM call_reports
          WHERE skill_id = $1 AND counted AND reported_at > now() - interval '24 hours'),
       r AS (
         SELECT count(*) AS calls, COALESCE(sum(satisfaction), 0) AS rsum, count(satisfaction) AS rcount
           FROM call_reports WHERE skill_id = $1 AND counted AND reported_at > now() - interval '30 days')
       SELECT (SELECT count(*) FROM obs) AS n, (SELECT count(*) FROM obs WHERE ok) AS s,
              (SELECT avg(latency_ms)::double precision FROM obs) AS lat,
              (SELECT count(*) FROM obs WHERE is_check) AS checks, r.calls, r.rsum, r.rcount
         FROM r`,
      skillId,
    );
    const r = rows[0];
    return {
      observations24h: Number(r?.n ?? 0),
      successes24h: Number(r?.s ?? 0),
      avgLatencyMs: r?.lat === null || r?.lat === undefined ? null : Number(r.lat),
      checks24h: Number(r?.checks ?? 0),
      calls30d: Number(r?.calls ?? 0),
      ratingSum: Number(r?.rsum ?? 0),
      ratingCount: Number(r?.rcount ?? 0),
    };
  }

  /**
   * Stores the denormalised metrics the router and the listing read (success_rate_24h,
   * avg_latency_ms, calls_30d, ratings, popularity). With no observation in 24 hours the success
   * rate and latency keep their last values.
   * @param window the skill's {@link metricWindow}
   * @param popularity the popularity factor computed from it, 0..1
   */
  async writeMetrics(skillId: string, window: MetricWindow, popularity: number): Promise<void> {
    await this.prisma.$executeRawUnsafe(
      `UPDATE skill_stats SET
         success_rate_24h = CASE WHEN $2 > 0 THEN $3::double precision / $2 ELSE success_rate_24h END,
         avg_latency_ms = COALESCE($4, avg_latency_ms),
         calls_30d = $5, rating_sum = $6, rating_count = $7, popularity = $8, changed_at = clock_timestamp()
       WHERE skill_id = $1
       RETURNING ${notifyRouting('skill_id')}`,
      skillId,
      window.observations24h,
      window.successes24h,
      window.avgLatencyMs,
      window.calls30d,
      window.ratingSum,
      window.ratingCount,
      popularity,
    );
  }
}
