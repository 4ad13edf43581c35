import { notifyRouting } from './routing-rows';
import type {
  DefinitionQualityPart,
  RegisterSkillRequest,
  SkillStatus,
  SkillVersionStatus,
  VerificationStepResult,
} from '../schemas';
import type { PrismaDb } from './prisma';

/** A stored definition quality score (0–100) and its explained parts (README, "Definition quality"). */
export interface StoredQuality {
  score: number;
  parts: DefinitionQualityPart[];
}

/** A skill as the directory reads it (plain object, times as Dates). */
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
  /** The MCP tool the skill calls at `endpoint`, or `null` for an HTTP skill (README, "MCP servers as skills"). */
  mcpTool: string | null;
  status: SkillStatus;
  successRate24h: number;
  avgLatencyMs: number | null;
  calls30d: number;
  ratingSum: number;
  ratingCount: number;
  popularity: number;
  /** The definition quality score and its parts (README, "Definition quality"); null until computed. */
  quality: StoredQuality | null;
  createdAt: Date;
  updatedAt: Date;
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
  revision: number;
  /** Hex SHA-256 of the current revision's definition; null when registered before pinning. */
  definitionHash: string | null;
  lastConformanceAt: Date | null;
  nextConformanceAt: Date | null;
  /** Non-conforming answers in a row. */
  conformanceFailures: number;
  lastConformanceError: string | null;
}

/** One registered revision of a skill (`skill_versions`), newest first in {@link SkillDirectory.versions}. */
export interface SkillVersionRecord {
  revision: number;
  definitionHash: string | null;
  definition: {
    endpoint: string;
    description: string;
    pricing: { model: string; price_usd: number };
    input_schema: Record<string, unknown>;
    output_schema: Record<string, unknown>;
    mcp_tool?: string;
  };
  status: SkillVersionStatus;
  verification: VerificationStepResult[];
  verificationReason: string | null;
  verifiedAt: Date | null;
  createdAt: Date;
}

/** Versions kept per skill: older ones are deleted when a new one is registered. */
export const VERSIONS_KEPT = 100;

/** Filters and paging of the directory listing. */
export interface ListFilter {
  category?: string;
  chain?: string;
  search?: string;
  /** `quality`: definition quality score, best first (README, "Definition quality"). */
  sort: 'popularity' | 'newest' | 'quality';
  limit: number;
  offset: number;
}

/** Outcome of {@link SkillDirectory.upsert}. */
export type UpsertOutcome = { outcome: 'created' | 'updated'; revision: number } | { outcome: 'forbidden' };

/**
 * The columns of a {@link SkillRecord}, named as its fields, so that a row is the record: `s` is
 * `skills`, `st` its `skill_stats` row (always present). `quality` stays null until both the score and
 * its parts are stored; `json_build_object` keeps its keys in the order written.
 */
const SKILL_COLUMNS = `s.skill_id AS "skillId", s.name, s.provider, s.description,
  COALESCE(s.capabilities, '{}') AS capabilities, COALESCE(s.chains, '{}') AS chains,
  s.pricing_model AS "pricingModel", s.price_usd AS "priceUsd", s.endpoint, s.mcp_tool AS "mcpTool", s.status,
  st.success_rate_24h AS "successRate24h", st.avg_latency_ms AS "avgLatencyMs", st.calls_30d AS "calls30d",
  st.rating_sum AS "ratingSum", st.rating_count AS "ratingCount", st.popularity,
  CASE WHEN s.quality_score IS NULL OR s.quality_parts IS NULL THEN NULL
       ELSE json_build_object('score', s.quality_score, 'parts', s.quality_parts) END AS quality,
  s.created_at AS "createdAt", s.updated_at AS "updatedAt"`;
const FROM_SKILLS = 'skills s JOIN skill_stats st ON st.skill_id = s.skill_id';

/**
 * The skill directory (`skills` with its `skill_stats` row): registration, the listing and a skill's
 * detail. Full-text vectors and capability terms are computed by PostgreSQL's `english` text search
 * configuration in the writing statement.
 */
export class SkillDirectory {
  constructor(private readonly prisma: PrismaDb) {}

  /**
   * Registers a skill or updates it when the same key registered it; either way it becomes
   * `pending_verification` (an update increments `revision`, so it is verified again and is out of
   * routing until then) and the revision is recorded in `skill_versions` with its definition and
   * hash; a revision still pending when the next one arrives becomes `superseded`, and only the last
   * {@link VERSIONS_KEPT} revisions are kept (README, "Pinned definitions").
   * @param input the validated register body (capabilities and chains lowercased), with `mcp_tool` for
   *   a tool imported from an MCP server (README, "MCP servers as skills"; part of the pinned definition)
   * @param ownerKeyId the API key registering it
   * @param definitionHash lowercase hex SHA-256 of the canonical definition (domain/definition.ts)
   * @param quality the definition quality of `input` (domain/definition-quality.ts), stored for the
   *   listing's sort; without it the column stays null until `backfillDefinitionQuality` scores the row
   * @returns created/updated with the new revision, or `forbidden` when another key owns the id
   */
  async upsert(
    input: RegisterSkillRequest & { mcp_tool?: string },
    ownerKeyId: string,
    definitionHash: string,
    quality?: StoredQuality,
  ): Promise<UpsertOutcome> {
    const rows = await this.prisma.$queryRawUnsafe<{ revision: number; inserted: boolean }[]>(
      `WITH up AS (
       INSERT INTO skills (skill_id, name, provider, description, capabilities, chains, pricing_model, price_usd,
         endpoint, input_schema, output_schema, owner_key_id, status, revision, definition_hash, search_vector, route_vector,
         match_terms, created_at, updated_at, changed_at, pay_to, quality_score, quality_parts, mcp_tool)
       VALUES ($1, $2, $3, $4, $5::text[], $6::text[], $7, $8, $9, $10::jsonb, $11::jsonb, $12::uuid, 'pending_verification', 1, $13,
         to_tsvector('english', $2 || ' ' || $4),
         setweight(to_tsvector('english', $2), 'A')
           || setweight(to_tsvector('english', array_to_string($5::text[], ' ')), 'B')
           || setweight(to_tsvector('english', $4), 'C'),
         tsvector_to_array(to_tsvector('english', array_to_string($5::text[], ' ') || ' ' || $4)),
         now(), now(), clock_timestamp(), $14, $15, $16::jsonb, $17)
       ON CONFLICT (skill_id) DO UPDATE SET
         name = EXCLUDED.name, provider = EXCLUDED.provider, description = EXCLUDED.description,
         capabilities = EXCLUDED.capabilities, chains = EXCLUDED.chains, pricing_model = EXCLUDED.pricing_model,
         price_usd = EXCLUDED.price_usd, pay_to = EXCLUDED.pay_to, endpoint = EXCLUDED.endpoint, mcp_tool = EXCLUDED.mcp_tool, input_schema = EXCLUDED.input_schema,
         output_schema = EXCLUDED.output_schema, definition_hash = EXCLUDED.definition_hash,
         quality_score = EXCLUDED.quality_score, quality_parts = EXCLUDED.quality_parts,
         search_vector = EXCLUDED.search_vector,
         route_vector = EXCLUDED.route_vector, match_terms = EXCLUDED.match_terms,
         status = 'pending_verification', revision = skills.revision + 1, verification = NULL,
         verification_reason = NULL, verification_lease_until = NULL, verification_attempts = 0, updated_at = now(),
         changed_at = clock_timestamp()
       WHERE skills.owner_key_id = EXCLUDED.owner_key_id
       RETURNING skill_id, revision, (xmax = 0) AS inserted),
     stats AS (
       -- No periodic health checks or conformance calls until the new revision is verified.
       INSERT INTO skill_stats (skill_id) SELECT skill_id FROM up
       ON CONFLICT (skill_id) DO UPDATE SET next_health_check_at = NULL, consecutive_failures = 0, consecutive_successes = 0,
         next_conformance_at = NULL, conformance_failures = 0, conformance_successes = 0, last_conformance_error = NULL),
     version AS (
       INSERT INTO skill_versions (skill_id, revision, definition_hash, definition)
       SELECT skill_id, revision, $13, jsonb_build_object('endpoint', $9::text, 'description', $4::text,
         'pricing', jsonb_strip_nulls(jsonb_build_object('model', $7::text, 'price_usd', $8::float8, 'pay_to', $14::text)),
         'input_schema', $10::jsonb, 'output_schema', $11::jsonb)
         || CASE WHEN $17::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('mcp_tool', $17::text) END FROM up
       ON CONFLICT (skill_id, revision) DO NOTHING),
     superseded AS (
       UPDATE skill_versions v SET status = 'superseded' FROM up
        WHERE v.skill_id = up.skill_id AND v.revision < up.revision AND v.status = 'pending_verification'),
     pruned AS (
       DELETE FROM skill_versions v USING up WHERE v.skill_id = up.skill_id AND v.revision <= up.revision - ${VERSIONS_KEPT})
     SELECT revision, inserted, ${notifyRouting('skill_id')} FROM up`,
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
      definitionHash,
      input.pricing.pay_to ?? null,
      quality?.score ?? null,
      quality ? JSON.stringify(quality.parts) : null,
      input.mcp_tool ?? null,
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
      filter.sort === 'newest'
        ? 's.created_at DESC, s.skill_id'
        : filter.sort === 'quality'
          ? 's.quality_score DESC NULLS LAST, st.popularity DESC, s.skill_id'
          : 'st.popularity DESC, s.skill_id';
    const whereSql = where.join(' AND ');
    const [items, count] = await Promise.all([
      this.prisma.$queryRawUnsafe<SkillRecord[]>(
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
    return { items, total: Number(count[0]?.total ?? 0) };
  }

  /** A skill in any status with its schemas and verification, or `null`. */
  async get(skillId: string): Promise<SkillDetailRecord | null> {
    const rows = await this.prisma.$queryRawUnsafe<SkillDetailRecord[]>(
      `SELECT ${SKILL_COLUMNS}, s.input_schema AS "inputSchema", s.output_schema AS "outputSchema",
              COALESCE(s.verification, '[]') AS verification, s.verification_reason AS "verificationReason",
              s.verified_at AS "verifiedAt", st.last_health_check_at AS "lastHealthCheckAt",
              st.consecutive_failures AS "consecutiveFailures", s.revision, s.definition_hash AS "definitionHash",
              st.last_conformance_at AS "lastConformanceAt", st.next_conformance_at AS "nextConformanceAt",
              st.conformance_failures AS "conformanceFailures", st.last_conformance_error AS "lastConformanceError"
         FROM ${FROM_SKILLS} WHERE s.skill_id = $1`,
      skillId,
    );
    return rows[0] ?? null;
  }

  /**
   * One page of a skill's recorded revisions, newest first, and how many there are.
   * @returns `null` when the skill does not exist
   */
  async versions(
    skillId: string,
    page: { limit: number; offset: number },
  ): Promise<{ currentRevision: number; items: SkillVersionRecord[]; total: number } | null> {
    const skill = await this.prisma.skill.findUnique({ where: { skillId }, select: { revision: true } });
    if (!skill) return null;
    const [rows, total] = await Promise.all([
      this.prisma.skillVersion.findMany({
        where: { skillId },
        orderBy: { revision: 'desc' },
        take: page.limit,
        skip: page.offset,
      }),
      this.prisma.skillVersion.count({ where: { skillId } }),
    ]);
    return {
      currentRevision: skill.revision,
      total,
      items: rows.map((r) => ({
        revision: r.revision,
        definitionHash: r.definitionHash,
        definition: r.definition as unknown as SkillVersionRecord['definition'],
        status: r.status as SkillVersionStatus,
        verification: (r.verification as unknown as VerificationStepResult[] | null) ?? [],
        verificationReason: r.verificationReason,
        verifiedAt: r.verifiedAt,
        createdAt: r.createdAt,
      })),
    };
  }

  /**
   * Up to `batch` skills without a definition quality score (rows registered before it existed),
   * with what the score reads: the current revision's description and schemas.
   */
  async unscoredDefinitions(
    batch: number,
  ): Promise<
    { skillId: string; revision: number; description: string; inputSchema: unknown; outputSchema: unknown }[]
  > {
    const rows = await this.prisma.$queryRawUnsafe<
      {
        skill_id: string;
        revision: number;
        description: string;
        input_schema: unknown;
        output_schema: unknown;
      }[]
    >(
      `SELECT skill_id, revision, description, input_schema, output_schema FROM skills
        WHERE quality_score IS NULL ORDER BY skill_id LIMIT $1`,
      batch,
    );
    return rows.map((r) => ({
      skillId: r.skill_id,
      revision: Number(r.revision),
      description: r.description,
      inputSchema: r.input_schema,
      outputSchema: r.output_schema,
    }));
  }

  /**
   * Stores the definition quality of a skill's `revision` when it has none yet (an update in between
   * stored its own), so that concurrent backfills are harmless.
   */
  async storeQuality(skillId: string, revision: number, quality: StoredQuality): Promise<void> {
    await this.prisma.$executeRawUnsafe(
      `UPDATE skills SET quality_score = $3, quality_parts = $4::jsonb
        WHERE skill_id = $1 AND revision = $2 AND quality_score IS NULL`,
      skillId,
      revision,
      quality.score,
      JSON.stringify(quality.parts),
    );
  }

  /**
   * What a skill was registered with (its current revision), for re-registering it: the register body,
   * the owning key, the status and the definition hash.
   * @returns `null` when the skill does not exist
   */
  async registration(skillId: string): Promise<{
    body: RegisterSkillRequest & { mcp_tool?: string };
    ownerKeyId: string;
    status: SkillStatus;
    revision: number;
    definitionHash: string | null;
  } | null> {
    const r = await this.prisma.skill.findUnique({ where: { skillId } });
    if (!r) return null;
    return {
      body: {
        skill_id: r.skillId,
        name: r.name,
        provider: r.provider,
        description: r.description,
        capabilities: r.capabilities,
        chains: r.chains,
        pricing: {
          model: r.pricingModel,
          price_usd: r.priceUsd,
          ...(r.payTo === null ? {} : { pay_to: r.payTo }),
        },
        endpoint: r.endpoint,
        input_schema: r.inputSchema as Record<string, unknown>,
        output_schema: r.outputSchema as Record<string, unknown>,
        ...(r.mcpTool === null ? {} : { mcp_tool: r.mcpTool }),
      },
      ownerKeyId: r.ownerKeyId,
      status: r.status as SkillStatus,
      revision: r.revision,
      definitionHash: r.definitionHash,
    };
  }

  /** Whether a skill with this id exists (any status). */
  async exists(skillId: string): Promise<boolean> {
    return (await this.prisma.skill.count({ where: { skillId } })) > 0;
  }
}
