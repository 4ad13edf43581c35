import type { RegisterSkillRequest, SkillStatus, VerificationStepResult } from '../schemas';
import { popularity } from '../domain/scoring';
import type { PrismaDb } from './prisma';

/** A skill as the directory and the router read it (plain object, times as Dates). */
export interface SkillRecord {
  skillId: string;
  name: string;
  provider: string;
  description: string;
  capabilities: string[];
  chains: string[];
  pricingModel: string;
  priceUsd: number;
  endpoint: string;
  status: SkillStatus;
  successRate24h: number;
  avgLatencyMs: number | null;
  calls30d: number;
  ratingSum: number;
  ratingCount: number;
  popularity: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A routing candidate: a {@link SkillRecord} with its capability terms. */
export interface CandidateRecord extends SkillRecord {
  /** Stemmed lexemes of capabilities and description. */
  matchTerms: string[];
}

/** Everything GET /api/discover/skills/:id shows. */
export interface SkillDetailRecord extends SkillRecord {
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  verification: VerificationStepResult[];
  verificationReason: string | null;
  verifiedAt: Date | null;
  lastHealthCheckAt: Date | null;
  consecutiveFailures: number;
}

/** Filters and paging of the directory listing. */
export interface ListFilter {
  category?: string;
  chain?: string;
  search?: string;
  sort: 'popularity' | 'newest';
  limit: number;
  offset: number;
}

/** Outcome of {@link SkillRepository.upsert}. */
export type UpsertOutcome =
  | { outcome: 'created' | 'updated'; revision: number }
  | { outcome: 'forbidden' };

/** A pending skill claimed by a verification worker. */
export interface VerificationJob {
  skillId: string;
  revision: number;
  endpoint: string;
  inputSchema: unknown;
  outputSchema: unknown;
}

/** A skill due for a periodic health check. */
export interface HealthJob {
  skillId: string;
  revision: number;
  endpoint: string;
  status: SkillStatus;
}

/** One endpoint probe to record. */
export interface ProbeRecord {
  ok: boolean;
  latencyMs: number | null;
  statusCode: number | null;
  error: string | null;
}

/** Aggregates over the metric windows (24 h for success and latency, 30 days for calls and ratings). */
export interface MetricWindow {
  observations24h: number;
  successes24h: number;
  avgLatencyMs: number | null;
  checks24h: number;
  calls30d: number;
  ratingSum: number;
  ratingCount: number;
}

const SKILL_COLUMNS = `skill_id, name, provider, description, capabilities, chains, pricing_model, price_usd, endpoint,
  status, success_rate_24h, avg_latency_ms, calls_30d, rating_sum, rating_count, popularity, created_at, updated_at`;

interface SkillRow {
  skill_id: string;
  name: string;
  provider: string;
  description: string;
  capabilities: string[];
  chains: string[];
  pricing_model: string;
  price_usd: number;
  endpoint: string;
  status: string;
  success_rate_24h: number;
  avg_latency_ms: number | null;
  calls_30d: number;
  rating_sum: number;
  rating_count: number;
  popularity: number;
  created_at: Date;
  updated_at: Date;
}

function toRecord(r: SkillRow): SkillRecord {
  return {
    skillId: r.skill_id,
    name: r.name,
    provider: r.provider,
    description: r.description,
    capabilities: r.capabilities ?? [],
    chains: r.chains ?? [],
    pricingModel: r.pricing_model,
    priceUsd: Number(r.price_usd),
    endpoint: r.endpoint,
    status: r.status as SkillStatus,
    successRate24h: Number(r.success_rate_24h),
    avgLatencyMs: r.avg_latency_ms === null ? null : Number(r.avg_latency_ms),
    calls30d: Number(r.calls_30d),
    ratingSum: Number(r.rating_sum),
    ratingCount: Number(r.rating_count),
    popularity: Number(r.popularity),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const ms = (n: number) => `make_interval(secs => ${'$'}${n}::double precision / 1000)`;

/**
 * The skill directory (`skills`, `health_checks`, `call_reports`). Full-text vectors and capability
 * terms are computed by PostgreSQL's `english` text search configuration in the writing statement.
 */
export class SkillRepository {
  constructor(private readonly prisma: PrismaDb) {}

  /**
   * Registers a skill or updates it when the same key registered it; either way it becomes
   * `pending_verification` (an update increments `revision`, so it is verified again).
   * @param input the validated register body (capabilities and chains lowercased)
   * @param ownerKeyId the API key registering it
   * @returns created/updated with the new revision, or `forbidden` when another key owns the id
   */
  async upsert(input: RegisterSkillRequest, ownerKeyId: string): Promise<UpsertOutcome> {
    const rows = await this.prisma.$queryRawUnsafe<{ revision: number; inserted: boolean }[]>(
      `INSERT INTO skills (skill_id, name, provider, description, capabilities, chains, pricing_model, price_usd,
         endpoint, input_schema, output_schema, owner_key_id, status, revision, search_vector, route_vector, match_terms,
         created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::text[], $6::text[], $7, $8, $9, $10::jsonb, $11::jsonb, $12::uuid, 'pending_verification', 1,
         to_tsvector('english', $2 || ' ' || $4),
         setweight(to_tsvector('english', $2), 'A')
           || setweight(to_tsvector('english', array_to_string($5::text[], ' ')), 'B')
           || setweight(to_tsvector('english', $4), 'C'),
         tsvector_to_array(to_tsvector('english', array_to_string($5::text[], ' ') || ' ' || $4)),
         now(), now())
       ON CONFLICT (skill_id) DO UPDATE SET
         name = EXCLUDED.name, provider = EXCLUDED.provider, description = EXCLUDED.description,
         capabilities = EXCLUDED.capabilities, chains = EXCLUDED.chains, pricing_model = EXCLUDED.pricing_model,
         price_usd = EXCLUDED.price_usd, endpoint = EXCLUDED.endpoint, input_schema = EXCLUDED.input_schema,
         output_schema = EXCLUDED.output_schema, search_vector = EXCLUDED.search_vector,
         route_vector = EXCLUDED.route_vector, match_terms = EXCLUDED.match_terms,
         status = 'pending_verification', revision = skills.revision + 1, verification = NULL,
         verification_reason = NULL, verification_lease_until = NULL, next_health_check_at = NULL,
         consecutive_failures = 0, consecutive_successes = 0, updated_at = now()
       WHERE skills.owner_key_id = EXCLUDED.owner_key_id
       RETURNING revision, (xmax = 0) AS inserted`,
      input.skill_id,
      input.name,
      input.provider,
      input.description,
      input.capabilities,
      input.chains,
      input.pricing.model,
      input.pricing.price_usd,
      input.endpoint,
      JSON.stringify(input.input_schema),
      JSON.stringify(input.output_schema),
      ownerKeyId,
    );
    const row = rows[0];
    if (!row) return { outcome: 'forbidden' };
    return { outcome: row.inserted ? 'created' : 'updated', revision: Number(row.revision) };
  }

  /**
   * One page of active skills and the total count of active skills matching the filters.
   * `search` is PostgreSQL web-search syntax over name and description (all words must match).
   */
  async list(filter: ListFilter): Promise<{ items: SkillRecord[]; total: number }> {
    const where = [`status = 'active'`];
    const args: unknown[] = [];
    if (filter.category) {
      args.push([filter.category]);
      where.push(`capabilities @> $${args.length}::text[]`);
    }
    if (filter.chain) {
      args.push([filter.chain]);
      where.push(`chains @> $${args.length}::text[]`);
    }
    if (filter.search) {
      args.push(filter.search);
      where.push(`search_vector @@ websearch_to_tsquery('english', $${args.length})`);
    }
    const order = filter.sort === 'newest' ? 'created_at DESC, skill_id' : 'popularity DESC, skill_id';
    const whereSql = where.join(' AND ');
    const [items, count] = await Promise.all([
      this.prisma.$queryRawUnsafe<SkillRow[]>(
        `SELECT ${SKILL_COLUMNS} FROM skills WHERE ${whereSql} ORDER BY ${order}
         LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
        ...args,
        filter.limit,
        filter.offset,
      ),
      this.prisma.$queryRawUnsafe<{ total: bigint }[]>(`SELECT count(*) AS total FROM skills WHERE ${whereSql}`, ...args),
    ]);
    return { items: items.map(toRecord), total: Number(count[0]?.total ?? 0) };
  }

  /** A skill in any status with its schemas and verification, or `null`. */
  async get(skillId: string): Promise<SkillDetailRecord | null> {
    const rows = await this.prisma.$queryRawUnsafe<
      (SkillRow & {
        input_schema: Record<string, unknown>;
        output_schema: Record<string, unknown>;
        verification: VerificationStepResult[] | null;
        verification_reason: string | null;
        verified_at: Date | null;
        last_health_check_at: Date | null;
        consecutive_failures: number;
      })[]
    >(
      `SELECT ${SKILL_COLUMNS}, input_schema, output_schema, verification, verification_reason, verified_at,
              last_health_check_at, consecutive_failures
         FROM skills WHERE skill_id = $1`,
      skillId,
    );
    const r = rows[0];
    if (!r) return null;
    return {
      ...toRecord(r),
      inputSchema: r.input_schema,
      outputSchema: r.output_schema,
      verification: r.verification ?? [],
      verificationReason: r.verification_reason,
      verifiedAt: r.verified_at,
      lastHealthCheckAt: r.last_health_check_at,
      consecutiveFailures: Number(r.consecutive_failures),
    };
  }

  /** Whether a skill with this id exists (any status). */
  async exists(skillId: string): Promise<boolean> {
    return (await this.prisma.skill.count({ where: { skillId } })) > 0;
  }

  /**
   * Routing candidates from the GIN-indexed full-text vector: active skills whose name, capabilities
   * or description share at least one lexeme with the task (the task's `plainto_tsquery` with its
   * ANDs turned into ORs), restricted to skills supporting at least one of `chains` when given.
   * Ordered by `ts_rank` (best first) and cut at `limit`.
   * @param task the natural-language task
   * @returns the task's distinct lexemes, the candidates, and how many skills matched before the cut
   */
  async routeCandidates(task: string, chains: string[] | undefined, limit: number): Promise<{ taskTerms: string[]; candidates: CandidateRecord[]; total: number }> {
    const terms = await this.prisma.$queryRawUnsafe<{ terms: string[] | null }[]>(
      `SELECT tsvector_to_array(to_tsvector('english', $1)) AS terms`,
      task,
    );
    const taskTerms = terms[0]?.terms ?? [];
    if (taskTerms.length === 0) return { taskTerms, candidates: [], total: 0 };
    const chainFilter = chains && chains.length > 0;
    const rows = await this.prisma.$queryRawUnsafe<(SkillRow & { match_terms: string[] | null; total: bigint })[]>(
      `WITH q AS (SELECT replace(plainto_tsquery('english', $1)::text, ' & ', ' | ')::tsquery AS tsq)
       SELECT ${SKILL_COLUMNS}, match_terms, count(*) OVER () AS total
         FROM skills, q
        WHERE status = 'active' AND route_vector @@ q.tsq ${chainFilter ? 'AND chains && $3::text[]' : ''}
        ORDER BY ts_rank(route_vector, q.tsq) DESC, skill_id
        LIMIT $2`,
      task,
      limit,
      ...(chainFilter ? [chains] : []),
    );
    return {
      taskTerms,
      candidates: rows.map((r) => ({ ...toRecord(r), matchTerms: r.match_terms ?? [] })),
      total: Number(rows[0]?.total ?? 0),
    };
  }

  /**
   * Claims up to `batch` pending skills for verification (`FOR UPDATE SKIP LOCKED`, so replicas never
   * claim the same one) by setting a lease; a lease that expires (crashed worker) is claimed again.
   */
  async claimPendingVerification(batch: number, leaseMs: number): Promise<VerificationJob[]> {
    const rows = await this.prisma.$queryRawUnsafe<
      { skill_id: string; revision: number; endpoint: string; input_schema: unknown; output_schema: unknown }[]
    >(
      `UPDATE skills SET verification_lease_until = now() + ${ms(2)}
        WHERE skill_id IN (
          SELECT skill_id FROM skills
           WHERE status = 'pending_verification'
             AND (verification_lease_until IS NULL OR verification_lease_until < now())
           ORDER BY updated_at, skill_id
           LIMIT $1
           FOR UPDATE SKIP LOCKED)
        RETURNING skill_id, revision, endpoint, input_schema, output_schema`,
      batch,
      leaseMs,
    );
    return rows.map((r) => ({
      skillId: r.skill_id,
      revision: Number(r.revision),
      endpoint: r.endpoint,
      inputSchema: r.input_schema,
      outputSchema: r.output_schema,
    }));
  }

  /**
   * Applies a verification result to the revision that was verified: `active` (first health check
   * due after `healthIntervalMs`) or `verification_failed`, with the per-step results and the reason.
   * The probes are recorded as health checks of kind `verification` and the metrics refreshed.
   * @returns `false` when the skill changed meanwhile (an update re-queued it) and nothing was applied
   */
  async completeVerification(
    job: { skillId: string; revision: number },
    result: { passed: boolean; steps: VerificationStepResult[]; reason: string | null; probes: ProbeRecord[] },
    healthIntervalMs: number,
  ): Promise<boolean> {
    const applied = await this.prisma.$transaction(async (tx) => {
      const n = await tx.$executeRawUnsafe(
        `UPDATE skills SET
           status = CASE WHEN $3 THEN 'active' ELSE 'verification_failed' END,
           verification = $4::jsonb, verification_reason = $5,
           verified_at = CASE WHEN $3 THEN now() ELSE verified_at END,
           verification_lease_until = NULL,
           next_health_check_at = CASE WHEN $3 THEN now() + ${ms(6)} ELSE NULL END,
           consecutive_failures = 0, consecutive_successes = 0
         WHERE skill_id = $1 AND revision = $2 AND status = 'pending_verification'`,
        job.skillId,
        job.revision,
        result.passed,
        JSON.stringify(result.steps),
        result.reason,
        healthIntervalMs,
      );
      if (n !== 1) return false;
      if (result.probes.length > 0) {
        await tx.healthCheck.createMany({
          data: result.probes.map((p) => ({ skillId: job.skillId, kind: 'verification', ...p })),
        });
      }
      return true;
    });
    if (applied) await this.refreshMetrics(job.skillId);
    return applied;
  }

  /**
   * Claims up to `batch` active or suspended skills whose health check is due, pushing their next
   * check `intervalMs` ahead in the same statement (`FOR UPDATE SKIP LOCKED`: one replica each).
   */
  async claimDueHealthChecks(batch: number, intervalMs: number): Promise<HealthJob[]> {
    const rows = await this.prisma.$queryRawUnsafe<{ skill_id: string; revision: number; endpoint: string; status: string }[]>(
      `UPDATE skills SET next_health_check_at = now() + ${ms(2)}
        WHERE skill_id IN (
          SELECT skill_id FROM skills
           WHERE status IN ('active', 'suspended') AND next_health_check_at <= now()
           ORDER BY next_health_check_at, skill_id
           LIMIT $1
           FOR UPDATE SKIP LOCKED)
        RETURNING skill_id, revision, endpoint, status`,
      batch,
      intervalMs,
    );
    return rows.map((r) => ({ skillId: r.skill_id, revision: Number(r.revision), endpoint: r.endpoint, status: r.status as SkillStatus }));
  }

  /**
   * Records a periodic health check: counts consecutive failures/successes, suspends an active skill
   * after `failuresToSuspend` failures in a row and resumes a suspended one after `successesToResume`
   * successes in a row, then refreshes the metrics.
   * @returns the status after the check, or `null` when the skill changed meanwhile
   */
  async recordHealthCheck(
    job: { skillId: string; revision: number },
    probe: ProbeRecord,
    thresholds: { failuresToSuspend: number; successesToResume: number },
  ): Promise<SkillStatus | null> {
    const status = await this.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRawUnsafe<{ status: string }[]>(
        `UPDATE skills SET
           last_health_check_at = now(),
           consecutive_failures = CASE WHEN $3 THEN 0 ELSE consecutive_failures + 1 END,
           consecutive_successes = CASE WHEN $3 THEN consecutive_successes + 1 ELSE 0 END,
           status = CASE
             WHEN status = 'active' AND NOT $3 AND consecutive_failures + 1 >= $4 THEN 'suspended'
             WHEN status = 'suspended' AND $3 AND consecutive_successes + 1 >= $5 THEN 'active'
             ELSE status END
         WHERE skill_id = $1 AND revision = $2 AND status IN ('active', 'suspended')
         RETURNING status`,
        job.skillId,
        job.revision,
        probe.ok,
        thresholds.failuresToSuspend,
        thresholds.successesToResume,
      );
      const row = rows[0];
      if (!row) return null;
      await tx.healthCheck.create({ data: { skillId: job.skillId, kind: 'periodic', ...probe } });
      return row.status as SkillStatus;
    });
    if (status) await this.refreshMetrics(job.skillId);
    return status;
  }

  /**
   * Stores a call report and refreshes the skill's metrics.
   * @param report the validated report
   */
  async addReport(report: {
    skillId: string;
    apiKeyId: string;
    caller: string;
    callResult: string;
    latencyMs?: number;
    satisfaction?: number;
    notes?: string;
  }): Promise<void> {
    await this.prisma.callReport.create({
      data: {
        skillId: report.skillId,
        apiKeyId: report.apiKeyId,
        caller: report.caller,
        callResult: report.callResult,
        latencyMs: report.latencyMs ?? null,
        satisfaction: report.satisfaction ?? null,
        notes: report.notes ?? null,
      },
    });
    await this.refreshMetrics(report.skillId);
  }

  /**
   * Aggregates over the metric windows, read now: health checks (verification and periodic) and call
   * reports of the last 24 hours give the success rate and the average latency; reports of the last
   * 30 days give the call count and the ratings.
   */
  async metricWindow(skillId: string): Promise<MetricWindow> {
    const rows = await this.prisma.$queryRawUnsafe<
      { n: bigint; s: bigint; lat: number | null; checks: bigint; calls: bigint; rsum: bigint; rcount: bigint }[]
    >(
      `WITH obs AS (
         SELECT ok, latency_ms, true AS is_check FROM health_checks
          WHERE skill_id = $1 AND checked_at > now() - interval '24 hours'
         UNION ALL
         SELECT call_result = 'success', latency_ms, false FROM call_reports
          WHERE skill_id = $1 AND reported_at > now() - interval '24 hours'),
       r AS (
         SELECT count(*) AS calls, COALESCE(sum(satisfaction), 0) AS rsum, count(satisfaction) AS rcount
           FROM call_reports WHERE skill_id = $1 AND reported_at > now() - interval '30 days')
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
   * Recomputes the denormalised metrics the router and the listing read (success_rate_24h,
   * avg_latency_ms, calls_30d, ratings, popularity). With no observation in 24 hours the success
   * rate and latency keep their last values.
   */
  async refreshMetrics(skillId: string): Promise<void> {
    const w = await this.metricWindow(skillId);
    const pop = popularity(w.calls30d, w.ratingSum, w.ratingCount).value;
    await this.prisma.$executeRawUnsafe(
      `UPDATE skills SET
         success_rate_24h = CASE WHEN $2 > 0 THEN $3::double precision / $2 ELSE success_rate_24h END,
         avg_latency_ms = COALESCE($4, avg_latency_ms),
         calls_30d = $5, rating_sum = $6, rating_count = $7, popularity = $8
       WHERE skill_id = $1`,
      skillId,
      w.observations24h,
      w.successes24h,
      w.avgLatencyMs,
      w.calls30d,
      w.ratingSum,
      w.ratingCount,
      pop,
    );
  }
}
