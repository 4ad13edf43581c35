import { AppError, notFound, validationError } from '@repo/errors';
import { createApiKeyCache, hashApiKey, type RateLimit } from '@repo/service-kit';
import type { z } from 'zod';
import type { ApiKeyRepository, StoredApiKey } from '../data/api-keys';
import type { SkillDirectory, SkillRecord } from '../data/skill-directory';
import type { SkillStats } from '../data/skill-stats';
import { skillRouterKeys } from './api-keys';
import { canonicalJson, definitionHash } from './definition';
import { definitionQuality } from './definition-quality';
import { MCP_LIMITS, skillCall, toolRegistration, type McpServers, type ToolRegistration } from './mcp-tools';
import { provePaidCall, type PaymentProofDeps } from './payment-proofs';
import { submitReport } from './reports';
import { routeTask, type RoutingSources } from './routing';
import { withLiveMetrics } from './skill-metrics';
import type { RouteOutcome } from '../metrics';
import {
  VERIFICATION_STEPS,
  type ListSkillsQuery,
  type ListVersionsQuery,
  type RegisterMcpServerRequest,
  type RegisterMcpServerResponse,
  type RegisterSkillRequest,
  type RegisterSkillResponse,
  type ReportRequest,
  type ReportResponse,
  type RouteRequest,
  type RouteResponse,
  type SkillDetail,
  type SkillList,
  type SkillSummary,
  type SkillVersionList,
} from '../schemas';

/** Dependencies of {@link discoverOperations}. */
export interface DiscoverDeps {
  keys: ApiKeyRepository;
  directory: SkillDirectory;
  routing: RoutingSources;
  stats: SkillStats;
  /** How paid call reports are proved (README, "Reputation"). */
  paymentProofs: PaymentProofDeps;
  /** Reports per key and skill (REPORT_LIMIT_*). */
  reportLimit: RateLimit;
  /** Registrations per key and day (REGISTRATIONS_PER_KEY_PER_DAY). */
  registrationLimit: RateLimit;
  /** Route requests per key and minute (ROUTES_PER_KEY_PER_MINUTE). */
  routeLimit: RateLimit;
  /** Refuses endpoints the SSRF policy does not allow; `null` when allowed. */
  endpointRefusal: (url: string) => Promise<string | null>;
  /** MCP servers, for importing their tools (README, "MCP servers as skills"). */
  mcp: McpServers;
  routeCandidateLimit: number;
  routeDefaultMatches: number;
  now: () => Date;
  /** How long a found key is trusted without a lookup, in ms (default 60,000); 0 disables the cache. */
  keyCacheTtlMs?: number;
  /** Called after a registration (metrics). */
  onRegistered?: (outcome: 'created' | 'updated') => void;
  /** Called after a route request with the number of matches (metrics). */
  onRouted?: (matches: number) => void;
  /** Called when a route request's answer is sent, whatever it was (metrics). */
  onRouteServed?: (outcome: RouteOutcome) => void;
  /** Called with the path that ranked a route request (metrics). */
  onRanked?: (source: 'index' | 'database') => void;
}

/** A key {@link DiscoverOperations.authenticate} accepted. */
export interface AuthenticatedKey {
  id: string;
  prefix: string;
}

/**
 * The `/api/discover` use cases as the HTTP routes and the MCP tools both run them (README,
 * "Endpoints" and "MCP"): each takes parsed input and the authenticated key, answers the documented
 * body, and throws the documented AppErrors.
 */
export interface DiscoverOperations {
  /**
   * Checks the key a request presents (its `x-api-key`, else its `Authorization: Bearer` token; README,
   * "Keys"): hashed (SHA-256), looked up by hash and compared in
   * constant time; found keys are cached by hash for `keyCacheTtlMs` (`createApiKeyCache` of
   * `@repo/service-kit`), unknown ones never.
   * @throws AppError `unauthorized` (401, with `WWW-Authenticate`) when missing or unknown
   */
  authenticate(presented: string | undefined): Promise<AuthenticatedKey>;
  /**
   * Ranks active skills for a task, counted against the key's ROUTES_PER_KEY_PER_MINUTE.
   * @throws AppError `rate_limited` (429, `details.retry_after_seconds`)
   */
  route(key: AuthenticatedKey, body: RouteRequest): Promise<z.infer<typeof RouteResponse>>;
  /** One page of active skills with the total. */
  list(query: ListSkillsQuery): Promise<z.infer<typeof SkillList>>;
  /**
   * A skill in any status with verification results and live metrics.
   * @throws AppError `not_found` (404)
   */
  get(id: string): Promise<z.infer<typeof SkillDetail>>;
  /**
   * One page of a skill's registered revisions, newest first, each with its definition, hash and
   * verification (README, "Pinned definitions").
   * @throws AppError `not_found` (404)
   */
  versions(id: string, query: ListVersionsQuery): Promise<z.infer<typeof SkillVersionList>>;
  /**
   * Registers or updates a skill; it is verified before it is routed.
   * @param location where the body came from, the first segment of a field error's path (`body`)
   * @returns whether it was `created` (HTTP 201) or `updated` (200), and the answer
   * @throws AppError `invalid_request` (endpoint refused by the SSRF policy), `rate_limited`,
   *   `forbidden` (the skill belongs to another key)
   */
  register(
    key: AuthenticatedKey,
    body: RegisterSkillRequest,
    location?: string,
  ): Promise<{ outcome: 'created' | 'updated'; answer: z.infer<typeof RegisterSkillResponse> }>;
  /**
   * Imports the tools of an MCP server (Streamable HTTP) as skills `<server_id>.<tool>` (README, "MCP
   * servers as skills"): the handshake and `tools/list` (at most {@link MCP_LIMITS}), then each tool
   * that can become a skill is registered like `register` does, unless it is already registered with
   * the same definition and labels and is active or pending verification (`unchanged`). Against REGISTRATIONS_PER_KEY_PER_DAY
   * the import counts once and every tool written beyond the first once more; nothing is written when
   * the key may not write them all, and such a refused import costs the key one registration.
   * @param location where the body came from, the first segment of a field error's path (`body`)
   * @returns whether any skill was `created` (HTTP 201) or not (200), and the answer
   * @throws AppError `invalid_request` on `<location>.url` (refused by the SSRF policy, no MCP answer,
   *   more tools than the limit, or no tool that can become a skill), `rate_limited`, `forbidden` (a
   *   tool's skill id belongs to another key)
   */
  registerMcp(
    key: AuthenticatedKey,
    body: RegisterMcpServerRequest,
    location?: string,
  ): Promise<{ outcome: 'created' | 'updated'; answer: z.infer<typeof RegisterMcpServerResponse> }>;
  /**
   * Records a call report with its weight (README, "Reputation"): `counted` says whether it moves the
   * skill's metrics, `weight` (0..1) how much.
   * @throws AppError `not_found` (unknown skill), `rate_limited` (per key and skill, or payment proofs
   *   per key), and for a `payment` the refusals of `provePaidCall` (domain/payment-proofs.ts)
   */
  report(key: AuthenticatedKey, body: ReportRequest): Promise<z.infer<typeof ReportResponse>>;
}

/** Keys already marked as routed today, at most this many (a bounded set: the write is idempotent anyway). */
const ROUTED_KEYS_MAX = 100_000;

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

function metricsOf(s: Pick<SkillRecord, 'successRate24h' | 'avgLatencyMs' | 'calls30d'>) {
  return {
    success_rate_24h: round(s.successRate24h, 4),
    avg_latency_ms: s.avgLatencyMs === null ? 0 : round(s.avgLatencyMs, 1),
    calls_30d: s.calls30d,
  };
}

function summary(s: SkillRecord): z.infer<typeof SkillSummary> {
  return {
    skill_id: s.skillId,
    name: s.name,
    provider: s.provider,
    description: s.description,
    capabilities: s.capabilities,
    chains: s.chains,
    pricing: { model: s.pricingModel, price_usd: s.priceUsd },
    endpoint: s.endpoint,
    call: skillCall(s.endpoint, s.mcpTool),
    status: s.status,
    metrics: {
      ...metricsOf(s),
      rating: s.ratingCount > 0 ? round(s.ratingSum / s.ratingCount, 2) : null,
      ratings_30d: s.ratingCount,
      popularity: round(s.popularity, 4),
    },
    quality: s.quality ?? { score: null, parts: [] },
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/** Refuses with 429 `rate_limited` and `Retry-After` when `key` is over `limit`. */
async function enforce(limit: RateLimit, key: string, what: string): Promise<void> {
  const decision = await limit.consume(key);
  if (decision.allowed) return;
  throw new AppError(
    'rate_limited',
    `Too many ${what} for this API key; retry in ${decision.retryAfterSeconds} s`,
    {
      headers: { 'Retry-After': String(decision.retryAfterSeconds) },
      details: { retry_after_seconds: decision.retryAfterSeconds },
    },
  );
}

const unauthorized = (message: string) =>
  new AppError('unauthorized', message, { headers: { 'WWW-Authenticate': 'ApiKey header="x-api-key"' } });

/** Builds the {@link DiscoverOperations} of one app (one key cache, one set of routed keys). */
export function discoverOperations(deps: DiscoverDeps): DiscoverOperations {
  // No revocation exists yet, so nothing invalidates: a found key is trusted for the TTL.
  const keyCache = createApiKeyCache<StoredApiKey>({
    load: (hash) => deps.keys.findByHash(hash),
    keyHashOf: (stored) => stored.keyHash,
    ttlMs: deps.keyCacheTtlMs ?? 60_000,
  });
  const routedKeys = new Set<string>();

  return {
    async authenticate(header) {
      const presented = header?.trim() ?? '';
      if (!presented)
        throw unauthorized(
          'Missing API key: send it in the x-api-key header or as Authorization: Bearer <key>',
        );
      const key = skillRouterKeys.looksLike(presented)
        ? await keyCache.get(hashApiKey(presented))
        : undefined;
      if (!key) throw unauthorized('Invalid API key');
      return { id: key.id, prefix: key.prefix };
    },

    async route(key, body) {
      await enforce(deps.routeLimit, key.id, 'route requests per minute');
      const outcome = await routeTask(
        deps.routing,
        {
          task: body.task,
          chains: body.requirements?.chains,
          maxPriceUsd: body.requirements?.max_price_usd,
          maxLatencyMs: body.requirements?.max_latency_ms,
          limit: body.limit ?? deps.routeDefaultMatches,
        },
        deps.routeCandidateLimit,
      );
      deps.onRouted?.(outcome.matches.length);
      deps.onRanked?.(outcome.source);
      // Each UTC day with routed matches counts once in the key's history (README, "Reputation").
      const routedToday = `${key.id}:${deps.now().toISOString().slice(0, 10)}`;
      if (outcome.matches.length > 0 && !routedKeys.has(routedToday)) {
        await deps.keys.markRouted(key.id);
        if (routedKeys.size >= ROUTED_KEYS_MAX) routedKeys.clear();
        routedKeys.add(routedToday);
      }
      return {
        matches: outcome.matches.map((m) => ({
          skill_id: m.skill.skillId,
          name: m.skill.name,
          match_score: m.score,
          match_reasons: m.reasons,
          pricing: { per_call_usd: m.skill.priceUsd },
          metrics: metricsOf(m.skill),
          endpoint: m.skill.endpoint,
          call: skillCall(m.skill.endpoint, m.skill.mcpTool ?? null),
        })),
        total_matches: outcome.totalMatches,
        routed_at: deps.now().toISOString(),
        rejected: outcome.rejected.map((r) => ({
          skill_id: r.skillId,
          name: r.name,
          capability_match: r.capabilityMatch,
          reasons: r.reasons,
        })),
        snapshot_at: outcome.snapshotAt.toISOString(),
      };
    },

    async list(query) {
      const page = await deps.directory.list(query);
      return { skills: page.items.map(summary), total: page.total, limit: query.limit, offset: query.offset };
    },

    async get(id) {
      const skill = await deps.directory.get(id);
      if (!skill) throw notFound(`Skill ${id}`);
      const live = await deps.stats.metricWindow(skill.skillId);
      const current = withLiveMetrics(skill, live);
      return {
        ...summary(current),
        input_schema: skill.inputSchema,
        output_schema: skill.outputSchema,
        revision: skill.revision,
        definition_hash: skill.definitionHash,
        verification: {
          steps: skill.verification,
          reason: skill.verificationReason,
          verified_at: skill.verifiedAt?.toISOString() ?? null,
        },
        health: {
          last_check_at: skill.lastHealthCheckAt?.toISOString() ?? null,
          consecutive_failures: skill.consecutiveFailures,
          checks_24h: live.checks24h,
        },
        conformance: {
          last_check_at: skill.lastConformanceAt?.toISOString() ?? null,
          consecutive_failures: skill.conformanceFailures,
          last_error: skill.lastConformanceError,
          next_check_at: skill.nextConformanceAt?.toISOString() ?? null,
        },
        metrics_at: deps.now().toISOString(),
      };
    },

    async versions(id, query) {
      const page = await deps.directory.versions(id, query);
      if (!page) throw notFound(`Skill ${id}`);
      return {
        skill_id: id,
        versions: page.items.map((v) => ({
          revision: v.revision,
          definition_hash: v.definitionHash,
          definition: v.definition,
          registered_at: v.createdAt.toISOString(),
          current: v.revision === page.currentRevision,
          verification: {
            status: v.status,
            steps: v.verification,
            reason: v.verificationReason,
            verified_at: v.verifiedAt?.toISOString() ?? null,
          },
        })),
        total: page.total,
        limit: query.limit,
        offset: query.offset,
      };
    },

    async register(key, body, location = 'body') {
      const refusal = await deps.endpointRefusal(body.endpoint);
      if (refusal) {
        const path = `${location}.endpoint`;
        throw validationError([{ path, code: 'custom', message: `is not allowed: ${refusal}` }]);
      }
      await enforce(deps.registrationLimit, key.id, 'registrations per day');
      // Bounded work on the registrant's schemas: walked, never compiled (domain/definition-quality.ts).
      const result = await deps.directory.upsert(body, key.id, definitionHash(body), definitionQuality(body));
      if (result.outcome === 'forbidden') {
        throw new AppError(
          'forbidden',
          `Skill ${body.skill_id} was registered with another API key; only that key may update it`,
        );
      }
      deps.onRegistered?.(result.outcome);
      return {
        outcome: result.outcome,
        answer: {
          ok: true,
          skill_id: body.skill_id,
          status: 'pending_verification',
          verification_steps: [...VERIFICATION_STEPS],
        },
      };
    },

    async registerMcp(key, body, location = 'body') {
      const urlPath = `${location}.url`;
      const refusal = await deps.endpointRefusal(body.url);
      if (refusal)
        throw validationError([{ path: urlPath, code: 'custom', message: `is not allowed: ${refusal}` }]);
      await enforce(deps.registrationLimit, key.id, 'registrations per day');
      const unusable = (why: string) =>
        validationError([{ path: urlPath, code: 'custom', message: `is not a usable MCP server: ${why}` }]);
      const opened = await deps.mcp.open(body.url);
      if (!opened.ok) throw unusable(opened.error);
      const { session } = opened;
      let listed: Awaited<ReturnType<typeof session.listTools>>;
      try {
        listed = await session.listTools(MCP_LIMITS.maxTools, MCP_LIMITS.maxPages);
      } finally {
        await session.close();
      }
      if (!listed.ok) throw unusable(listed.error);

      const skipped: { tool: string; reason: string }[] = [];
      const tools: ToolRegistration[] = [];
      for (const tool of listed.tools) {
        const made = toolRegistration(body, tool);
        if (made.ok) tools.push(made.body);
        else skipped.push({ tool: tool.name.slice(0, 200), reason: made.reason });
      }
      if (tools.length === 0)
        throw validationError([
          {
            path: urlPath,
            code: 'custom',
            message:
              listed.tools.length === 0
                ? 'is an MCP server that lists no tools'
                : `is an MCP server none of whose ${listed.tools.length} tools can become a skill (${skipped[0]?.tool}: ${skipped[0]?.reason})`,
          },
        ]);

      // Every ownership is checked before anything is written.
      const current = await Promise.all(tools.map((t) => deps.directory.registration(t.skill_id)));
      const foreign = tools.find((t, i) => current[i] && current[i].ownerKeyId !== key.id);
      if (foreign)
        throw new AppError(
          'forbidden',
          `Skill ${foreign.skill_id} was registered with another API key; only that key may update it`,
        );
      // An unchanged tool that is routed or being verified is left alone; one out of routing (failed,
      // suspended, degraded) is verified again, as a re-registered HTTP skill is.
      const toWrite = tools.filter((t, i) => {
        const was = current[i];
        const inService = was?.status === 'active' || was?.status === 'pending_verification';
        return !(was && inService && canonicalJson(was.body) === canonicalJson(t));
      });
      // The import itself counted once above; every further tool written counts too. A refused
      // import gives back what it counted for its tools (the refused one included: the limiter counts
      // refusals), so it costs the key the one registration its request to the server did.
      let consumed = 0;
      for (let i = 1; i < toWrite.length; i++) {
        const decision = await deps.registrationLimit.consume(key.id);
        if (!decision.allowed) {
          for (let j = 0; j <= consumed; j++) await deps.registrationLimit.reward(key.id);
          throw new AppError(
            'rate_limited',
            `Importing ${toWrite.length} tools needs ${toWrite.length} registrations, more than this API key has left today; retry in ${decision.retryAfterSeconds} s`,
            {
              headers: { 'Retry-After': String(decision.retryAfterSeconds) },
              details: { retry_after_seconds: decision.retryAfterSeconds },
            },
          );
        }
        consumed++;
      }
      let created = false;
      for (const tool of toWrite) {
        const result = await deps.directory.upsert(
          tool,
          key.id,
          definitionHash(tool),
          definitionQuality(tool),
        );
        if (result.outcome === 'forbidden')
          throw new AppError(
            'forbidden',
            `Skill ${tool.skill_id} was registered with another API key; only that key may update it`,
          );
        created ||= result.outcome === 'created';
        deps.onRegistered?.(result.outcome);
      }
      const written = new Set(toWrite);
      return {
        outcome: created ? 'created' : 'updated',
        answer: {
          ok: true,
          server_id: body.server_id,
          url: body.url,
          server: {
            name: session.server.name,
            version: session.server.version,
            protocol_version: session.server.protocolVersion,
          },
          skills: tools.map((t) => ({
            tool: t.mcp_tool,
            skill_id: t.skill_id,
            status: written.has(t) ? ('pending_verification' as const) : ('unchanged' as const),
          })),
          skipped,
          verification_steps: [...VERIFICATION_STEPS],
        },
      };
    },

    async report(key, body) {
      if (!(await deps.directory.exists(body.skill_id))) throw notFound(`Skill ${body.skill_id}`);
      await enforce(deps.reportLimit, `${key.id}:${body.skill_id}`, `reports for skill ${body.skill_id}`);
      const paid = body.payment
        ? await provePaidCall(deps.paymentProofs, {
            skillId: body.skill_id,
            apiKeyId: key.id,
            network: body.payment.network,
            signature: body.payment.signature,
          })
        : undefined;
      const outcome = await submitReport(
        deps,
        {
          skillId: body.skill_id,
          apiKeyId: key.id,
          caller: body.caller,
          callResult: body.call_result,
          latencyMs: body.latency_ms,
          satisfaction: body.satisfaction,
          notes: body.notes,
        },
        paid,
      );
      return { ok: true, counted: outcome.counted, weight: round(outcome.weight, 4) };
    },
  };
}
