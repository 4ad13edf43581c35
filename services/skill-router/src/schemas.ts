import { z } from 'zod';
import { X402Network } from '@repo/schemas';
import { base58ByteLength } from './domain/payment-proofs';
import { REJECTION_REASONS } from './domain/route-receipts';
import { JsonSchemaObject, paging, SkillId, SolanaAddress, tag } from './schema-parts';

export { SkillId, SolanaAddress } from './schema-parts';

/**
 * Wire schemas of the skill-router API (services/skill-router/README.md, "Endpoints"), used to
 * validate requests and to generate the OpenAPI document.
 */

/**
 * Skill statuses: pending_verification -> active | verification_failed; active <-> suspended (health
 * checks); active <-> degraded (conformance calls); any -> pending_verification on update. Only
 * `active` skills are routed (services/skill-router/README.md, "Registration and verification").
 */
export const SkillStatus = z.enum([
  'pending_verification',
  'active',
  'verification_failed',
  'suspended',
  'degraded',
]);
export type SkillStatus = z.infer<typeof SkillStatus>;

/**
 * The verification steps, in the order they run (services/skill-router/README.md,
 * "Registration and verification").
 */
export const VERIFICATION_STEPS = ['endpoint_health_check', 'schema_validation', 'test_call'] as const;
/** One of {@link VERIFICATION_STEPS}. */
export type VerificationStep = (typeof VERIFICATION_STEPS)[number];

/** Allowed `call_result` values of a report. */
export const CallResult = z.enum(['success', 'failure', 'timeout', 'error']);
export type CallResult = z.infer<typeof CallResult>;

/** Body of POST /api/auth/key. */
export const CreateKeyRequest = z.object({ name: z.string().trim().min(1).max(100) });
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

/** Answer of POST /api/auth/key; `api_key` is shown only here. */
export const CreateKeyResponse = z.object({
  ok: z.literal(true),
  api_key: z.string(),
  prefix: z.string(),
  message: z.string(),
});

/**
 * Body of POST /api/discover/register (services/skill-router/README.md,
 * "Registration and verification").
 */
export const RegisterSkillRequest = z.object({
  skill_id: SkillId,
  name: z.string().trim().min(1).max(200),
  provider: z.string().trim().min(1).max(200),
  description: z.string().trim().min(10, 'must be at least 10 characters').max(5000),
  capabilities: z.array(tag('a capability')).min(1).max(50),
  chains: z.array(tag('a chain')).max(50),
  pricing: z.object({
    model: z.string().trim().min(1).max(50),
    price_usd: z.number().min(0).max(1_000_000),
    /**
     * Extension: the Solana USDC token account calls are paid into (the x402 push-mode `payTo`); paid
     * call reports must pay it (services/skill-router/README.md, "Reputation").
     */
    pay_to: SolanaAddress.optional(),
  }),
  endpoint: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2048),
  input_schema: JsonSchemaObject,
  output_schema: JsonSchemaObject,
});
export type RegisterSkillRequest = z.infer<typeof RegisterSkillRequest>;

/**
 * Body of POST /api/discover/register/mcp (services/skill-router/README.md, "MCP servers as skills"):
 * an MCP server (Streamable HTTP transport) whose tools each become a skill `<server_id>.<tool>`.
 */
export const RegisterMcpServerRequest = z.object({
  server_id: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/,
      'must be 1-64 characters: letters, digits, "_", "-", starting with a letter or digit',
    )
    .meta({ description: "prefix of the skill ids of the server's tools: `<server_id>.<tool name>`" }),
  url: z
    .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
    .max(2048)
    .meta({ description: 'the MCP endpoint of the server (Streamable HTTP transport)' }),
  provider: z.string().trim().min(1).max(200),
  capabilities: z
    .array(tag('a capability'))
    .max(49)
    .optional()
    .meta({ description: "capability tags given to every tool, beside the tool's name" }),
  chains: z.array(tag('a chain')).max(50),
  pricing: RegisterSkillRequest.shape.pricing,
});
export type RegisterMcpServerRequest = z.infer<typeof RegisterMcpServerRequest>;

/** One tool of an MCP server registration's answer. */
export const ImportedTool = z.object({
  tool: z.string(),
  skill_id: z.string(),
  /**
   * `pending_verification`: registered or updated, verified before it is routed; `unchanged`: already
   * registered with this definition, left as it is.
   */
  status: z.enum(['pending_verification', 'unchanged']),
});

/** Answer of POST /api/discover/register/mcp. */
export const RegisterMcpServerResponse = z.object({
  ok: z.literal(true),
  server_id: z.string(),
  url: z.string(),
  /** What the server said of itself in the MCP handshake. */
  server: z.object({ name: z.string(), version: z.string(), protocol_version: z.string() }),
  skills: z.array(ImportedTool),
  /** Listed tools that could not become skills, with the reason (for example a missing description). */
  skipped: z.array(z.object({ tool: z.string(), reason: z.string() })),
  verification_steps: z.array(z.enum(VERIFICATION_STEPS)),
});

/** Answer of POST /api/discover/register. */
export const RegisterSkillResponse = z.object({
  ok: z.literal(true),
  skill_id: z.string(),
  status: z.literal('pending_verification'),
  verification_steps: z.array(z.enum(VERIFICATION_STEPS)),
});

/** Body of POST /api/discover/route (services/skill-router/README.md, "Endpoints"). */
export const RouteRequest = z.object({
  task: z.string().trim().min(1).max(2000),
  requirements: z
    .object({
      chains: z.array(tag('a chain')).max(50).optional(),
      max_price_usd: z.number().min(0).optional(),
      max_latency_ms: z.number().int().min(1).optional(),
    })
    .optional(),
  context: z
    .object({ caller_agent: z.string().max(200).optional(), urgency: z.string().max(50).optional() })
    .optional(),
  /** Extension: how many matches to return (default ROUTE_DEFAULT_MATCHES, at most 100). */
  limit: z.number().int().min(1).max(100).optional(),
});
export type RouteRequest = z.infer<typeof RouteRequest>;

/** Live metrics of a skill. */
export const SkillMetrics = z.object({
  success_rate_24h: z.number(),
  avg_latency_ms: z.number(),
  calls_30d: z.number().int(),
});

/**
 * How a caller calls a skill (services/skill-router/README.md, "MCP servers as skills"): an HTTP `POST`
 * of the input to `url`, or, for a tool imported from an MCP server, a `tools/call` of `tool` over the
 * MCP Streamable HTTP transport at `url`.
 */
export const SkillCall = z
  .discriminatedUnion('transport', [
    z.object({ transport: z.literal('http'), method: z.literal('POST'), url: z.string() }),
    z.object({ transport: z.literal('mcp-streamable-http'), url: z.string(), tool: z.string() }),
  ])
  .meta({
    description:
      'how to call the skill: POST the input as JSON to url, or (transport mcp-streamable-http) call the MCP tool `tool` with tools/call on the MCP server at url',
  });
export type SkillCall = z.infer<typeof SkillCall>;

/** How every answer names a skill: its id and its name. */
const SkillRef = z.object({ skill_id: z.string(), name: z.string() });

/** One element of `matches` (services/skill-router/README.md, "Routing and the score"). */
export const RouteMatch = SkillRef.extend({
  match_score: z.number().min(0).max(1),
  match_reasons: z.array(z.string()),
  pricing: z.object({ per_call_usd: z.number() }),
  metrics: SkillMetrics,
  endpoint: z.string(),
  /** Extension: how to call it (HTTP POST, or an MCP tool). */
  call: SkillCall,
});

/**
 * One element of `rejected` (services/skill-router/README.md, "Routing receipts"): a skill sharing a
 * lexeme with the task that the route removed, with its capability match (0..1) and the reasons:
 * first why routing cannot return it at all (`unhealthy`, `degraded`, `unverified_version`), then
 * `chain` when it supports none of the requested chains, then the budgets it exceeds.
 */
export const RejectedCandidate = SkillRef.extend({
  capability_match: z.number().min(0).max(1),
  reasons: z.array(z.enum(REJECTION_REASONS)).min(1).meta({
    description:
      'unhealthy (suspended by health checks), degraded (answers stopped conforming to output_schema), unverified_version (an update awaiting verification; the earlier verified version is not served), chain (supports none of the requested chains), over_max_price, over_max_latency; in that order',
  }),
});

/** Answer of POST /api/discover/route. */
export const RouteResponse = z.object({
  matches: z.array(RouteMatch),
  total_matches: z.number().int(),
  routed_at: z.iso.datetime(),
  /** Extension: the nearest skills the route removed, at most 10, nearest first. */
  rejected: z.array(RejectedCandidate).max(10).meta({
    description:
      'the nearest skills sharing a lexeme with the task that the route removed (unhealthy, degraded or an unverified update, or off the requested chains), at most 10, nearest first (most shared task lexemes, then skill_id)',
  }),
  /** Extension: when the health and reliability data the route used were read (the database's clock). */
  snapshot_at: z.iso.datetime().meta({
    description: 'when the health and reliability data the route used were read (the database clock)',
  }),
});

/** The paging of a skills listing: pages of 1–100 skills, 20 by default. */
const SKILLS_PAGE = paging({ max: 100, default: 20 }, 'skills');

/** Query of GET /api/discover/skills. */
export const ListSkillsQuery = z.object({
  category: tag('category').optional().meta({ description: 'capability tag (case-insensitive)' }),
  chain: tag('chain').optional().meta({ description: 'chain name (case-insensitive)' }),
  search: z.string().trim().min(1).max(200).regex(/\S/, 'search must not be blank').optional().meta({
    description:
      'full-text search in name and description (web-search syntax: all words, "phrases", -excluded)',
  }),
  sort: z.enum(['popularity', 'newest', 'quality']).default('popularity').meta({
    description:
      'popularity (default), newest, or quality (definition quality score, best first; not a routing factor)',
  }),
  ...SKILLS_PAGE.query,
});
export type ListSkillsQuery = z.infer<typeof ListSkillsQuery>;

/** Arguments of the MCP tool `list_skills`: {@link ListSkillsQuery} with JSON numbers for the page. */
export const ListSkillsArgs = ListSkillsQuery.extend(SKILLS_PAGE.args);

/**
 * The definition quality score of a skill's current revision (services/skill-router/README.md,
 * "Definition quality"): 0–100, the sum of five explained parts. It sorts the listing on request and
 * is never a routing factor. `score` is null (and `parts` empty) until it is computed.
 */
export const DefinitionQuality = z.object({
  score: z.number().int().min(0).max(100).nullable(),
  parts: z.array(
    z.object({
      part: z.enum(['description', 'parameters', 'examples', 'schema_completeness', 'error_documentation']),
      points: z.number().int().min(0),
      max_points: z.number().int().min(1),
      /** Why, in one short sentence, e.g. "4 of 6 input parameters described". */
      explanation: z.string(),
    }),
  ),
});

/** One explained part of a {@link DefinitionQuality}. */
export type DefinitionQualityPart = z.infer<typeof DefinitionQuality>['parts'][number];

/** A skill in the directory listing. */
export const SkillSummary = SkillRef.extend({
  provider: z.string(),
  description: z.string(),
  capabilities: z.array(z.string()),
  chains: z.array(z.string()),
  pricing: z.object({ model: z.string(), price_usd: z.number() }),
  endpoint: z.string(),
  /** Extension: how to call it (HTTP POST, or an MCP tool). */
  call: SkillCall,
  status: SkillStatus,
  metrics: SkillMetrics.extend({
    /** Average satisfaction 1–5 over 30 days, null when unrated. */
    rating: z.number().nullable(),
    ratings_30d: z.number().int(),
    popularity: z.number(),
  }),
  /** Extension: how well the definition documents itself (README, "Definition quality"). */
  quality: DefinitionQuality,
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

/** Answer of GET /api/discover/skills: one page and the total for paging. */
export const SkillList = z.object({
  skills: z.array(SkillSummary),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

/** One verification step's outcome. */
export const VerificationStepResult = z.object({
  step: z.enum(VERIFICATION_STEPS),
  status: z.enum(['passed', 'failed', 'skipped']),
  detail: z.string(),
  duration_ms: z.number().int(),
});
export type VerificationStepResult = z.infer<typeof VerificationStepResult>;

/**
 * Lowercase hex SHA-256 of the canonical JSON (RFC 8785) of a definition: endpoint, description,
 * pricing and both schemas (services/skill-router/README.md, "Pinned definitions"); null for a
 * revision registered before definitions were pinned.
 */
const DefinitionHash = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  .nullable()
  .meta({ description: 'SHA-256 (hex) of the canonical JSON of endpoint, description, pricing and schemas' });

/**
 * The conformance calls of a skill (services/skill-router/README.md, "Pinned definitions"): live
 * answers checked against `output_schema`.
 */
export const SkillConformance = z.object({
  last_check_at: z.iso.datetime().nullable(),
  /** Non-conforming answers in a row (inconclusive calls, such as timeouts, do not count). */
  consecutive_failures: z.number().int(),
  /** Why the last judged answer did not conform; null when it did or none was judged yet. */
  last_error: z.string().nullable(),
  next_check_at: z.iso.datetime().nullable(),
});

/** Answer of GET /api/discover/skills/:id: the skill, its schemas, verification and live metrics. */
export const SkillDetail = SkillSummary.extend({
  input_schema: z.record(z.string(), z.unknown()),
  output_schema: z.record(z.string(), z.unknown()),
  /** The revision shown, incremented by every update. */
  revision: z.number().int(),
  definition_hash: DefinitionHash,
  verification: z.object({
    steps: z.array(VerificationStepResult),
    reason: z.string().nullable(),
    verified_at: z.iso.datetime().nullable(),
  }),
  health: z.object({
    last_check_at: z.iso.datetime().nullable(),
    consecutive_failures: z.number().int(),
    checks_24h: z.number().int(),
  }),
  conformance: SkillConformance,
  metrics_at: z.iso.datetime(),
});

/** What happened to one registered revision: awaiting, passed or failed its verification, or replaced first. */
export const SkillVersionStatus = z.enum(['pending_verification', 'passed', 'failed', 'superseded']);
export type SkillVersionStatus = z.infer<typeof SkillVersionStatus>;

/** One registered revision of a skill and the verification of exactly that definition. */
export const SkillVersion = z.object({
  revision: z.number().int(),
  definition_hash: DefinitionHash,
  /** The reviewed definition (the register body's fields of that revision). */
  definition: z.object({
    endpoint: z.string(),
    description: z.string(),
    /** `pay_to` when that revision named the token account its calls are paid into (README, "Reputation"). */
    pricing: z.object({ model: z.string(), price_usd: z.number(), pay_to: z.string().optional() }),
    input_schema: z.record(z.string(), z.unknown()),
    output_schema: z.record(z.string(), z.unknown()),
    /** For a tool imported from an MCP server, the tool's name (README, "MCP servers as skills"). */
    mcp_tool: z.string().optional(),
  }),
  registered_at: z.iso.datetime(),
  /** Whether this is the revision the skill has now. */
  current: z.boolean(),
  verification: z.object({
    status: SkillVersionStatus,
    steps: z.array(VerificationStepResult),
    reason: z.string().nullable(),
    verified_at: z.iso.datetime().nullable(),
  }),
});

/**
 * The paging of a versions listing: pages of 1–20 versions, 10 by default. Each version carries both schemas (up to 64 KiB), so a
 * page of this public endpoint stays under about 1.3 MB.
 */
const VERSIONS_PAGE = paging({ max: 20, default: 10 }, 'versions');

/** Query of GET /api/discover/skills/{id}/versions. */
export const ListVersionsQuery = z.object(VERSIONS_PAGE.query);
export type ListVersionsQuery = z.infer<typeof ListVersionsQuery>;

/** Arguments of the MCP tool `list_skill_versions`: the skill id and {@link ListVersionsQuery} with JSON numbers. */
export const ListVersionsArgs = z.object({ id: SkillId, ...VERSIONS_PAGE.args });

/** Answer of GET /api/discover/skills/{id}/versions: newest revision first. */
export const SkillVersionList = z.object({
  skill_id: z.string(),
  versions: z.array(SkillVersion),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

/**
 * A paid call's proof in a report (services/skill-router/README.md, "Reputation"): the network and
 * the signature of the x402 payment into the skill's `pricing.pay_to`.
 */
export const ReportPayment = z.object({
  network: X402Network,
  signature: z
    .string()
    .regex(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/, 'must be a base58 transaction signature')
    // The length bound first: decoding is quadratic in the length.
    .refine(
      (s) => s.length <= 88 && base58ByteLength(s) === 64,
      'must be a base58 transaction signature of 64 bytes',
    ),
});

/** Body of POST /api/discover/report (services/skill-router/README.md, "Endpoints"). */
export const ReportRequest = z.object({
  skill_id: SkillId,
  caller: z.string().trim().min(1).max(200),
  call_result: CallResult,
  latency_ms: z.number().int().min(0).max(3_600_000).optional(),
  satisfaction: z.number().int().min(1).max(5).optional(),
  notes: z.string().max(2000).optional(),
  /** Extension: proof that the call was paid; such a report weighs 1 (README, "Reputation"). */
  payment: ReportPayment.optional(),
});
export type ReportRequest = z.infer<typeof ReportRequest>;

/**
 * Answer of POST /api/discover/report: `ok`, and how the report was taken (services/skill-router/README.md,
 * "Reputation"): `counted` whether it moves the skill's metrics, `weight` how much (0..1; 1 for a paid
 * report, 0 when it does not count).
 */
export const ReportResponse = z.object({
  ok: z.literal(true),
  counted: z.boolean(),
  weight: z.number().min(0).max(1),
});

/** Answer of GET /api/health. */
export const HealthResponse = z.object({
  status: z.enum(['ok', 'unavailable']),
  service: z.literal('skill-router'),
  version: z.string(),
  timestamp: z.iso.datetime(),
});
