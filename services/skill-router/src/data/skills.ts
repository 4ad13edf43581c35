import type { RegisterSkillRequest, SkillStatus, VerificationStepResult } from '../schemas';
import { popularity, type ScoringSkill } from '../domain/scoring';
import type { Pool } from 'pg';
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

/** A routing candidate: what scoring needs plus the fields of a route match. */
export interface CandidateRecord extends ScoringSkill {
  name: string;
  endpoint: string;
}

interface CandidateRow {
  skill_id: string;
  name: string;
  endpoint: string;
  chains: string[] | null;
  price_usd: number;
  match_terms: string[] | null;
  success_rate_24h: number;
  avg_latency_ms: number | null;
  calls_30d: number;
  rating_sum: number;
  rating_count: number;
  /** Set on one row only. */
  task_terms: string[] | null;
  /** bigint, as a string from the driver */
  total: string;
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
export type UpsertOutcome = { outcome: 'created' | 'updated'; revision: number } | { outcome: 'forbidden' };

/** A pending skill claimed by a verification worker. */
export interface VerificationJob {
  skillId: string;
  revision: number;
  endpoint: string;
  inputSchema: unknown;
  outputSchema: unknown;
  /** Claims of this revision so far, this one included (1 on the first claim). */
  attempts: number;
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

/** Columns of a {@link SkillRecord}: `s` is `skills`, `st` its `skill_stats` row (always present). */
const SKILL_COLUMNS = `s.skill_id, s.name, s.provider, s.description, s.capabilities, s.chains, s.pricing_model, s.price_usd,
  s.endpoint, s.status, st.success_rate_24h, st.avg_latency_ms, st.calls_30d, st.rating_sum, st.rating_count, st.popularity,
  s.created_at, s.updated_at`;
const FROM_SKILLS = 'skills s JOIN skill_stats st ON st.skill_id = s.skill_id';

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
  /**
   * @param prisma the Prisma client
   * @param pool the `pg` pool under it, used directly by the routing query (hundreds of rows per
   *   request; the driver's own row parsing is markedly cheaper there)
   */
  constructor(
    private readonly prisma: PrismaDb,
    private readonly pool: Pool,
  ) {}

  /**
   * Registers a skill or updates it when the same key registered it; either way it becomes
   * `pending_verification` (an update increments `revision`, so it is verified again).
   * @param input the validated register body (capabilities and chains lowercased)
   * @param ownerKeyId the API key registering it
   * @returns created/updated with the new revision, or `forbidden` when another key owns the id
   */
  async upsert(input: RegisterSkillRequest, ownerKeyId: string): Promise<UpsertOutcome> {
    const rows = await this.prisma.$queryRawUnsafe<{ revision: number; inserted: boolean }[]>(
      `WITH up AS (
       INSERT INTO skills (skill_id, name, provider, description, capabilities, chains, pricing_model, price_usd,
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
         verification_reason = NULL, verification_lease_until = NULL, verification_attempts = 0, updated_at = now()
       WHERE skills.owner_key_id = EXCLUDED.owner_key_id
       RETURNING skill_id, revision, (xmax = 0) AS inserted),
     stats AS (
       -- No periodic health checks until the new revision is verified.
       INSERT INTO skill_stats (skill_id) SELECT skill_id FROM up
       ON CONFLICT (skill_id) DO UPDATE SET next_health_check_at = NULL, consecutive_failures = 0, consecutive_successes = 0)
     SELECT revision, inserted FROM up`,
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
    const where = [`s.status = 'active'`];
    const args: unknown[] = [];
    if (filter.category) {
      args.push([filter.category]);
      where.push(`s.capabilities @> $${args.length}::text[]`);
    }
    if (filter.chain) {
      args.push([filter.chain]);
      where.push(`s.chains @> $${args.length}::text[]`);
    }
    if (filter.search) {
      args.push(filter.search);
      where.push(`s.search_vector @@ websearch_to_tsquery('english', $${args.length})`);
    }
    const order =
      filter.sort === 'newest' ? 's.created_at DESC, s.skill_id' : 'st.popularity DESC, s.skill_id';
    const whereSql = where.join(' AND ');
    const [items, count] = await Promise.all([
      this.prisma.$queryRawUnsafe<SkillRow[]>(
        `SELECT ${SKILL_COLUMNS} FROM ${FROM_SKILLS} WHERE ${whereSql} ORDER BY ${order}
         LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
        ...args,
        filter.limit,
        filter.offset,
      ),
      this.prisma.$queryRawUnsafe<{ total: bigint }[]>(
        `SELECT count(*) AS total FROM skills s WHERE ${whereSql}`,
        ...args,
      ),
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
      `SELECT ${SKILL_COLUMNS}, s.input_schema, s.output_schema, s.verification, s.verification_reason, s.verified_at,
              st.last_health_check_at, st.consecutive_failures
         FROM ${FROM_SKILLS} WHERE s.skill_id = $1`,
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
   * When more than `limit` skills match, the best `limit` by `ts_rank` are kept. A candidate's
   * `matchTerms` holds only those of its capability and description lexemes that occur in the task
   * (the intersection is all capability_match needs, and it keeps the rows small).
   * @param task the natural-language task
   * @returns the task's distinct lexemes, the candidates, and how many skills matched before the cut
   */
  async routeCandidates(
    task: string,
    chains: string[] | undefined,
    limit: number,
  ): Promise<{ taskTerms: string[]; candidates: CandidateRecord[]; total: number }> {
    const chainFilter = chains && chains.length > 0;
    // One round trip: the task's lexemes ride along on every row (a few short strings), and of the
    // skill's lexemes only those in the task are sent (all capability_match needs). Ranking by
    // ts_rank is only paid for when more than `limit` skills match.
    const query = async (ranked: boolean) =>
      (
        await this.pool.query<CandidateRow>(
          `WITH q AS (SELECT replace(plainto_tsquery('english', $1)::text, ' & ', ' | ')::tsquery AS tsq,
                             tsvector_to_array(to_tsvector('english', $1)) AS terms)
           SELECT s.skill_id, s.name, s.endpoint, s.chains, s.price_usd,
                  ARRAY(SELECT t FROM unnest(s.match_terms) t WHERE t = ANY (q.terms)) AS match_terms,
                  st.success_rate_24h, st.avg_latency_ms, st.calls_30d, st.rating_sum, st.rating_count,
                  CASE WHEN row_number() OVER () = 1 THEN q.terms END AS task_terms, count(*) OVER () AS total
             FROM q, skills s JOIN skill_stats st ON st.skill_id = s.skill_id
            WHERE s.status = 'active' AND s.route_vector @@ q.tsq ${chainFilter ? 'AND s.chains && $3::text[]' : ''}
            ${ranked ? 'ORDER BY ts_rank(s.route_vector, q.tsq) DESC, s.skill_id' : ''}
            LIMIT $2`,
          [task, ranked ? limit : limit + 1, ...(chainFilter ? [chains] : [])],
        )
      ).rows;
    let rows = await query(false);
    if (rows.length > limit) rows = await query(true);
    return {
      taskTerms: rows.find((r) => r.task_terms)?.task_terms ?? [],
      candidates: rows.map((r) => ({
        skillId: r.skill_id,
        name: r.name,
        endpoint: r.endpoint,
        chains: r.chains ?? [],
        priceUsd: Number(r.price_usd),
        matchTerms: r.match_terms ?? [],
        successRate24h: Number(r.success_rate_24h),
        avgLatencyMs: r.avg_latency_ms === null ? null : Number(r.avg_latency_ms),
        calls30d: Number(r.calls_30d),
        ratingSum: Number(r.rating_sum),
        ratingCount: Number(r.rating_count),
      })),
      total: Number(rows[0]?.total ?? 0),
    };
  }

  /**
   * Claims up to `batch` pending skills for verification (`FOR UPDATE SKIP LOCKED`, so replicas never
   * claim the same one) by setting a lease and counting the attempt; a lease that expires (crashed
   * worker) is claimed again, and the returned `attempts` tells the caller how often that happened.
   */
  async claimPendingVerification(batch: number, leaseMs: number): Promise<VerificationJob[]> {
    const rows = await this.prisma.$queryRawUnsafe<
      {
        skill_id: string;
        revision: number;
        endpoint: string;
        input_schema: unknown;
        output_schema: unknown;
        verification_attempts: number;
      }[]
    >(
      `UPDATE skills SET verification_lease_until = now() + ${ms(2)},
              verification_attempts = verification_attempts + 1
        WHERE skill_id IN (
          SELECT skill_id FROM skills
           WHERE status = 'pending_verification'
             AND (verification_lease_until IS NULL OR verification_lease_until < now())
           ORDER BY updated_at, skill_id
           LIMIT $1
           FOR UPDATE SKIP LOCKED)
        RETURNING skill_id, revision, endpoint, input_schema, output_schema, verification_attempts`,
      batch,
      leaseMs,
    );
    return rows.map((r) => ({
      skillId: r.skill_id,
      revision: Number(r.revision),
      endpoint: r.endpoint,
      inputSchema: r.input_schema,
      outputSchema: r.output_schema,
      attempts: Number(r.verification_attempts),
    }));
  }

  /**
   * Extends the leases of verifications still in progress on this replica, so that only a replica
   * that died or stalled loses its claims (and has them counted as unfinished attempts).
   * @param jobs the claimed revisions still being verified
   * @param leaseMs the new lease, from now, in milliseconds
   */
  async renewVerificationLeases(
    jobs: readonly { skillId: string; revision: number }[],
    leaseMs: number,
  ): Promise<void> {
    if (jobs.length === 0) return;
    await this.prisma.$executeRawUnsafe(
      `UPDATE skills SET verification_lease_until = now() + ${ms(3)}
        FROM unnest($1::text[], $2::int[]) AS j(skill_id, revision)
       WHERE skills.skill_id = j.skill_id AND skills.revision = j.revision
         AND skills.status = 'pending_verification'`,
      jobs.map((j) => j.skillId),
      jobs.map((j) => j.revision),
      leaseMs,
    );
  }

  /**
   * Applies a verification result to the revision that was verified: `active` (first health check
   * due after `healthIntervalMs`) or `verification_failed`, with the per-step results and the reason.
   * The probes are recorded as health checks of kind `verification` and the metrics refreshed.
   * @returns `false` when the skill changed meanwhile (an update re-queued it) and nothing was applied
   */
  async completeVerification(
    job: { skillId: string; revision: number },
    result: {
      passed: boolean;
      steps: VerificationStepResult[];
      reason: string | null;
      probes: ProbeRecord[];
    },
    healthIntervalMs: number,
  ): Promise<boolean> {
    const applied = await this.prisma.$transaction(async (tx) => {
      const n = await tx.$executeRawUnsafe(
        `UPDATE skills SET
           status = CASE WHEN $3 THEN 'active' ELSE 'verification_failed' END,
           verification = $4::jsonb, verification_reason = $5,
           verified_at = CASE WHEN $3 THEN now() ELSE verified_at END,
           verification_lease_until = NULL
         WHERE skill_id = $1 AND revision = $2 AND status = 'pending_verification'`,
        job.skillId,
        job.revision,
        result.passed,
        JSON.stringify(result.steps),
        result.reason,
      );
      if (n !== 1) return false;
      await tx.$executeRawUnsafe(
        `INSERT INTO skill_stats (skill_id, next_health_check_at) VALUES ($1, CASE WHEN $2 THEN now() + ${ms(3)} END)
         ON CONFLICT (skill_id) DO UPDATE SET next_health_check_at = EXCLUDED.next_health_check_at,
           consecutive_failures = 0, consecutive_successes = 0`,
        job.skillId,
        result.passed,
        healthIntervalMs,
      );
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
    const rows = await this.prisma.$queryRawUnsafe<
      { skill_id: string; revision: number; endpoint: string; status: string }[]
    >(
      `UPDATE skill_stats st SET next_health_check_at = now() + ${ms(2)}
         FROM skills s
        WHERE s.skill_id = st.skill_id
          AND st.skill_id IN (
            SELECT d.skill_id FROM skill_stats d JOIN skills k ON k.skill_id = d.skill_id
             WHERE d.next_health_check_at <= now() AND k.status IN ('active', 'suspended')
             ORDER BY d.next_health_check_at, d.skill_id
             LIMIT $1
             FOR UPDATE OF d SKIP LOCKED)
        RETURNING s.skill_id, s.revision, s.endpoint, s.status`,
      batch,
      intervalMs,
    );
    return rows.map((r) => ({
      skillId: r.skill_id,
      revision: Number(r.revision),
      endpoint: r.endpoint,
      status: r.status as SkillStatus,
    }));
  }

  /**
   * Records a periodic health check: counts consecutive failures/successes, suspends an active skill
   * after `failuresToSuspend` failures in a row and resumes a suspended one after `successesToResume`
   * successes in a row, then refreshes the metrics. Only the status change touches `skills`.
   * @returns the status after the check, or `null` when the skill changed meanwhile
   */
  async recordHealthCheck(
    job: { skillId: string; revision: number },
    probe: ProbeRecord,
    thresholds: { failuresToSuspend: number; successesToResume: number },
  ): Promise<SkillStatus | null> {
    const status = await this.prisma.$transaction(async (tx) => {
      // Locks the skill row first, so an update (new revision) cannot interleave.
      const current = await tx.$queryRawUnsafe<{ status: string }[]>(
        `SELECT status FROM skills WHERE skill_id = $1 AND revision = $2 AND status IN ('active', 'suspended') FOR UPDATE`,
        job.skillId,
        job.revision,
      );
      const before = current[0]?.status as SkillStatus | undefined;
      if (!before) return null;
      const counters = await tx.$queryRawUnsafe<
        { consecutive_failures: number; consecutive_successes: number }[]
      >(
        `UPDATE skill_stats SET
           last_health_check_at = now(),
           consecutive_failures = CASE WHEN $2 THEN 0 ELSE consecutive_failures + 1 END,
           consecutive_successes = CASE WHEN $2 THEN consecutive_successes + 1 ELSE 0 END
         WHERE skill_id = $1
         RETURNING consecutive_failures, consecutive_successes`,
        job.skillId,
        probe.ok,
      );
      const c = counters[0];
      let after: SkillStatus = before;
      if (c && before === 'active' && !probe.ok && c.consecutive_failures >= thresholds.failuresToSuspend)
        after = 'suspended';
      if (c && before === 'suspended' && probe.ok && c.consecutive_successes >= thresholds.successesToResume)
        after = 'active';
      if (after !== before) {
        await tx.$executeRawUnsafe(`UPDATE skills SET status = $2 WHERE skill_id = $1`, job.skillId, after);
      }
      await tx.healthCheck.create({ data: { skillId: job.skillId, kind: 'periodic', ...probe } });
      return after;
    });
    if (status) await this.refreshMetrics(job.skillId);
    return status;
  }

  /**
   * Stores a call report and, when it counts (its key is a day old and has routed calls), refreshes
   * the skill's metrics; other reports are kept but move nothing (README, "Security").
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
    // Sock-puppet keys are free: only a key a day old that has routed calls moves the metrics.
    const key = await this.prisma.apiKey.findUnique({
      where: { id: report.apiKeyId },
      select: { createdAt: true, firstRoutedAt: true },
    });
    const counted =
      key !== null && key.firstRoutedAt !== null && key.createdAt.getTime() <= Date.now() - 86_400_000;
    await this.prisma.callReport.create({
      data: {
        counted,
        skillId: report.skillId,
        apiKeyId: report.apiKeyId,
        caller: report.caller,
        callResult: report.callResult,
        latencyMs: report.latencyMs ?? null,
        satisfaction: report.satisfaction ?? null,
        notes: report.notes ?? null,
      },
    });
    if (counted) await this.refreshMetrics(report.skillId);
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
   * Recomputes the denormalised metrics the router and the listing read (success_rate_24h,
   * avg_latency_ms, calls_30d, ratings, popularity). With no observation in 24 hours the success
   * rate and latency keep their last values.
   */
  async refreshMetrics(skillId: string): Promise<void> {
    const w = await this.metricWindow(skillId);
    const pop = popularity(w.calls30d, w.ratingSum, w.ratingCount).value;
    await this.prisma.$executeRawUnsafe(
      `UPDATE skill_stats SET
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
