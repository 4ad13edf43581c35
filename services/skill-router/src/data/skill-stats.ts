import { notifyRouting } from './routing-rows';
import type { PrismaDb } from './prisma';

/**
 * Aggregates over the metric windows (24 h for success and latency, 30 days for calls and ratings).
 * "Weighted" sums count each observation with its weight (a health check the model's health-check
 * weight, a counted report its stored weight) times its decay `2^(−age / halfLife)`.
 */
export interface MetricWindow {
  /** Health checks and counted reports of the last 24 hours, each counted once. */
  observations24h: number;
  successes24h: number;
  /** Σ weight·decay over the observations of the last 24 hours. */
  weightedObservations24h: number;
  /** Σ weight·decay over the successful ones. */
  weightedSuccesses24h: number;
  /**
   * Milliseconds, averaged with the same weights over health checks and full-weight reports; `null`
   * with no latency observed in 24 hours.
   */
  avgLatencyMs: number | null;
  checks24h: number;
  /** Counted reports of full weight (1) in 30 days. */
  calls30d: number;
  /** Sum and count of their satisfaction ratings (1–5). */
  ratingSum: number;
  ratingCount: number;
}

/** How {@link SkillStats.metricWindow} weighs observations (domain/skill-metrics.ts `RELIABILITY_MODEL`). */
export interface ObservationWeights {
  /** Weight of one health check, 0..1. */
  healthCheckWeight: number;
  /** Age in milliseconds at which an observation counts half. */
  halfLifeMs: number;
}

/** The denormalised metrics stored for the router and the listing. */
export interface StoredMetrics {
  /** The reliability estimate, 0..1 (stored as `success_rate_24h`, which routing reads). */
  reliability: number;
  /** Average latency in ms; `null` keeps the stored one. */
  avgLatencyMs: number | null;
  calls30d: number;
  ratingSum: number;
  ratingCount: number;
  /** The popularity factor, 0..1. */
  popularity: number;
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
  /** The report's weight, 0..1, if it counts. */
  weight: number;
  /**
   * The reporters the report speaks for (its key, and its cohort or its payer). It counts only if,
   * for each of them, it is the first counted report about this skill in this UTC hour; empty: it
   * does not count.
   */
  reporters: string[];
  /** The verified x402 payment signature that proves the call, if any. */
  paymentSignature?: string;
}

/** Waiting for a connection and running the report's transaction, in ms (Prisma's defaults are 2 s and 5 s). */
const TRANSACTION_LIMITS = { maxWait: 10_000, timeout: 10_000 };

/** Counted-report slots older than this are deleted (the current UTC hour's are needed). */
const SLOT_RETENTION = `interval '2 hours'`;

/**
 * Call reports (`call_reports` with their `report_slots`) and the metrics of each skill
 * (`skill_stats`): the live aggregates over the metric windows and the denormalised values the router
 * and the listing read.
 */
export class SkillStats {
  /**
   * @param weights how observations are weighted and decayed in {@link metricWindow}
   */
  constructor(
    private readonly prisma: PrismaDb,
    private readonly weights: ObservationWeights,
  ) {}

  /**
   * Stores a call report. It counts when its weight is above 0 and it takes the slot of every one of
   * its `reporters` for this skill and the current UTC hour (`report_slots`, one statement: a
   * concurrent report of the same reporter waits, then finds the slot taken); otherwise it is kept
   * with `counted = false`. Counting moves nothing until the metrics are refreshed.
   * @returns whether the report counts
   */
  async addReport(report: CallReportRecord): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      let counted = false;
      const reporters = [...new Set(report.reporters)];
      if (report.weight > 0 && reporters.length > 0) {
        const taken = await tx.$queryRawUnsafe<{ slot: string }[]>(
          `INSERT INTO report_slots (slot)
           SELECT $1 || '|' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') || '|' || r
             FROM unnest($2::text[]) AS r
           ON CONFLICT (slot) DO NOTHING
           RETURNING slot`,
          report.skillId,
          reporters,
        );
        counted = taken.length === reporters.length;
        // A report that got only some of its slots does not count and gives them back.
        if (!counted && taken.length > 0)
          await tx.$executeRawUnsafe(
            'DELETE FROM report_slots WHERE slot = ANY($1::text[])',
            taken.map((t) => t.slot),
          );
        await tx.$executeRawUnsafe(`DELETE FROM report_slots WHERE created_at < now() - ${SLOT_RETENTION}`);
      }
      await tx.callReport.create({
        data: {
          counted,
          weight: counted ? report.weight : 0,
          skillId: report.skillId,
          apiKeyId: report.apiKeyId,
          caller: report.caller,
          callResult: report.callResult,
          latencyMs: report.latencyMs ?? null,
          satisfaction: report.satisfaction ?? null,
          notes: report.notes ?? null,
          paymentSignature: report.paymentSignature ?? null,
        },
      });
      return counted;
      // A flood of reports queues for connections: wait for one rather than fail the report.
    }, TRANSACTION_LIMITS);
  }

  /**
   * Aggregates over the metric windows, read now: health checks (verification and periodic) and
   * counted call reports of the last 24 hours give the success rate and the average latency, weighted
   * and decayed ({@link ObservationWeights}); reports of less than full weight give no latency.
   * Counted reports of full weight in the last 30 days give the call count and the ratings.
   */
  async metricWindow(skillId: string): Promise<MetricWindow> {
    const rows = await this.prisma.$queryRawUnsafe<
      {
        n: bigint;
        s: bigint;
        wn: number | null;
        ws: number | null;
        lat: number | null;
        checks: bigint;
        calls: bigint;
        rsum: bigint;
        rcount: bigint;
      }[]
    >(
      `WITH obs AS (
         SELECT ok, latency_ms, $2::double precision AS w, checked_at AS at, true AS is_check FROM health_checks
          WHERE skill_id = $1 AND checked_at > now() - interval '24 hours'
         UNION ALL
         -- A report's latency counts only at full weight: a partial weight bounds a success, not a number.
         SELECT call_result = 'success', CASE WHEN weight >= 1 THEN latency_ms END, weight, reported_at, false
           FROM call_reports
          WHERE skill_id = $1 AND counted AND reported_at > now() - interval '24 hours'),
       d AS (
         SELECT ok, latency_ms, is_check,
                w * power(0.5, GREATEST(0, extract(epoch FROM now() - at)) * 1000 / $3::double precision) AS dw
           FROM obs),
       r AS (
         SELECT count(*) AS calls, COALESCE(sum(satisfaction), 0) AS rsum, count(satisfaction) AS rcount
           FROM call_reports
          WHERE skill_id = $1 AND counted AND weight >= 1 AND reported_at > now() - interval '30 days')
       SELECT (SELECT count(*) FROM d) AS n, (SELECT count(*) FROM d WHERE ok) AS s,
              (SELECT sum(dw)::double precision FROM d) AS wn,
              (SELECT sum(dw)::double precision FROM d WHERE ok) AS ws,
              (SELECT (sum(dw * latency_ms) / NULLIF(sum(dw), 0))::double precision FROM d
                WHERE latency_ms IS NOT NULL) AS lat,
              (SELECT count(*) FROM d WHERE is_check) AS checks, r.calls, r.rsum, r.rcount
         FROM r`,
      skillId,
      this.weights.healthCheckWeight,
      this.weights.halfLifeMs,
    );
    const r = rows[0];
    return {
      observations24h: Number(r?.n ?? 0),
      successes24h: Number(r?.s ?? 0),
      weightedObservations24h: Number(r?.wn ?? 0),
      weightedSuccesses24h: Number(r?.ws ?? 0),
      avgLatencyMs: r?.lat === null || r?.lat === undefined ? null : Number(r.lat),
      checks24h: Number(r?.checks ?? 0),
      calls30d: Number(r?.calls ?? 0),
      ratingSum: Number(r?.rsum ?? 0),
      ratingCount: Number(r?.rcount ?? 0),
    };
  }

  /**
   * Stores the denormalised metrics the router and the listing read: the reliability estimate (in
   * `success_rate_24h`), average latency (kept when `null`), calls_30d, ratings and popularity; stamps
   * `changed_at` and notifies the routing index.
   */
  async writeMetrics(skillId: string, metrics: StoredMetrics): Promise<void> {
    await this.prisma.$executeRawUnsafe(
      `UPDATE skill_stats SET
         success_rate_24h = $2, avg_latency_ms = COALESCE($3, avg_latency_ms),
         calls_30d = $4, rating_sum = $5, rating_count = $6, popularity = $7, changed_at = clock_timestamp()
       WHERE skill_id = $1
       RETURNING ${notifyRouting('skill_id')}`,
      skillId,
      metrics.reliability,
      metrics.avgLatencyMs,
      metrics.calls30d,
      metrics.ratingSum,
      metrics.ratingCount,
      metrics.popularity,
    );
  }
}
