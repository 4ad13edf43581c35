// market-intel's own wire schemas (services/market-intel/README.md, "Endpoints"): the request bodies,
// query and path parameters its routes validate, and the answers only it sends. The resources shared
// with the agent client and the pipeline-runner (reports, jobs, x402) are in @repo/schemas.
import { z } from 'zod';
import { ErrorEnvelope } from '@repo/errors';
import { ErrorClass, SectorTag, SessionConfigInput } from '@repo/schemas';

/** A `webhook_url`: an absolute http(s) URL of at most 2048 characters. */
export const WebhookUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }).max(2048);

/**
 * Body of POST /api/v1/forge/ideate (services/market-intel/README.md, "Endpoints"): every field
 * optional; `session_config` as an object or a string, resolved with `SESSION_CONFIG_DEFAULTS` of
 * `@repo/schemas`. Unknown top-level fields are ignored.
 */
export const ForgeRequest = z.object(
  {
    sectors: z.array(SectorTag).max(20).default([]),
    context: z.string().max(10_000).optional(),
    product_modes: z.array(z.string().trim().min(1).max(100)).max(10).default([]),
    session_config: SessionConfigInput,
    webhook_url: WebhookUrl.optional(),
  },
  {
    error: (issue) =>
      issue.input === undefined ? 'a JSON object body is required' : 'the body must be a JSON object',
  },
);
export type ForgeRequest = z.output<typeof ForgeRequest>;

/** Body of POST /api/v1/prove/debate (services/market-intel/README.md, "Endpoints"): `idea` of 10 to 10 000 characters, read verbatim. */
export const ProveRequest = z.object(
  {
    idea: z.string({ error: 'idea is required (10 to 10000 characters)' }).min(10).max(10_000),
    session_config: SessionConfigInput,
    webhook_url: WebhookUrl.optional(),
  },
  {
    error: (issue) =>
      issue.input === undefined ? 'a JSON object body is required' : 'the body must be a JSON object',
  },
);
export type ProveRequest = z.output<typeof ProveRequest>;

/** Path parameters of GET /api/v1/jobs/{jobId}. */
export const JobParams = z.object({
  jobId: z
    .string()
    .min(1)
    .max(100)
    .meta({ description: 'the jobId of the 202 answer of a compute POST (the end of its statusUrl)' }),
});

/** Scout items per list sent with a forge job (keeps step messages small). */
export const FORGE_SCOUT_ITEMS = 20;

/** The 202 answer of a compute POST (services/market-intel/README.md, "Endpoints"); `proveSessionId` for prove/debate only. */
export const JobAccepted = z.object({
  jobId: z.string(),
  status: z.literal('pending'),
  statusUrl: z.string().describe('path of GET /api/v1/jobs/{jobId}'),
  etaMinutes: z.number().int(),
  proveSessionId: z.uuid().optional(),
});
export type JobAccepted = z.infer<typeof JobAccepted>;

/**
 * The 503 of a compute POST whose health preflight failed (README "Failed jobs and health (market-intel)"): the error
 * envelope (`code: service_unavailable`, `details: { llm, search }` when the upstreams were probed)
 * plus `errorClass`, `upstream` (retry after 30 s) or `config` (an operator must fix it).
 */
export const ComputeUnavailable = ErrorEnvelope.extend({ errorClass: ErrorClass });
export type ComputeUnavailable = z.infer<typeof ComputeUnavailable>;

/**
 * `network` query parameter accepted on every endpoint (services/market-intel/README.md, "Endpoints"):
 * `devnet` selects the test network; absent means the main network. `solana`/`solana-devnet`/`mainnet`
 * are accepted as aliases; anything else is a 400.
 */
export const NetworkParam = z.enum(['devnet', 'solana-devnet', 'mainnet', 'solana']).optional().meta({
  description:
    '`devnet` selects the test network (its USDC mint and merchant account); default the main network',
});

/** `sector` query parameter: a sector tag; omitted, every sector is merged. */
const SectorParam = SectorTag.optional().meta({
  description: 'sector tag (see /api/v1/sectors); omitted: every sector merged',
});

/**
 * An integer query parameter within `[min, max]` with a default, e.g. `limit`: digits only on the
 * wire (the input side, published in the x402 discovery metadata), an integer once parsed (the output
 * side, documented in the OpenAPI document with its range and default). The default is applied
 * before the range check, so the final schema of the chain is the integer one.
 */
export function intParam(min: number, max: number, defaultValue: number) {
  return z
    .string()
    .regex(/^[0-9]+$/, `must be an integer from ${min} to ${max}`)
    .optional()
    .transform((v) => (v === undefined ? defaultValue : Number(v)))
    .pipe(z.number().int().min(min).max(max).meta({ default: defaultValue }));
}

/**
 * An optional integer argument of an MCP tool within `[min, max]` (the JSON-number form of
 * {@link intParam}); left out, the route applies `defaultValue`.
 */
function intArg(min: number, max: number, defaultValue: number) {
  return z.number().int().min(min).max(max).optional().meta({ default: defaultValue });
}

/**
 * The parameters of the scout lists (services/market-intel/README.md, "Endpoints"), declared once for
 * the query of their routes and the arguments of their MCP tools, which must accept the same ranges
 * with the same defaults: `int` gives an integer parameter the form of one side ({@link intParam} or
 * {@link intArg}).
 */
function scoutListParams<I extends z.ZodType>(int: (min: number, max: number, defaultValue: number) => I) {
  return {
    sectorLimit: z.object({ sector: SectorParam, limit: int(1, 100, 20), network: NetworkParam }),
    trends: z.object({
      sector: SectorParam,
      days: int(1, 30, 7),
      limit: int(1, 100, 20),
      network: NetworkParam,
    }),
    keywords: z.object({ sector: SectorParam, limit: int(1, 200, 50), network: NetworkParam }),
  };
}

const SCOUT_LIST_QUERIES = scoutListParams(intParam);
const SCOUT_LIST_ARGS = scoutListParams(intArg);

/** Query of gaps and pain-clusters: `sector`, `limit` 1–100 (default 20). */
export const SectorLimitQuery = SCOUT_LIST_QUERIES.sectorLimit;

/** Query of trends: `sector`, `days` 1–30 (default 7), `limit` 1–100 (default 20). */
export const TrendsQuery = SCOUT_LIST_QUERIES.trends;

/** Query of keywords: `sector`, `limit` 1–200 (default 50). */
export const KeywordsQuery = SCOUT_LIST_QUERIES.keywords;

/** Query of endpoints that take only `network`. */
export const NetworkOnlyQuery = z.object({ network: NetworkParam });

/** Arguments of the MCP tools `scout_gaps` and `scout_pain_clusters` (the query of {@link SectorLimitQuery}). */
export const SectorLimitArgs = SCOUT_LIST_ARGS.sectorLimit;

/** Arguments of the MCP tool `scout_trends` (the query of {@link TrendsQuery}). */
export const TrendsArgs = SCOUT_LIST_ARGS.trends;

/** Arguments of the MCP tool `scout_keywords` (the query of {@link KeywordsQuery}). */
export const KeywordsArgs = SCOUT_LIST_ARGS.keywords;

/** Arguments of the MCP tool `get_job`: {@link JobParams} and `network`. */
export const JobArgs = JobParams.extend({ network: NetworkParam });

/** Arguments of the MCP tool `forge_ideate`: the body of POST /api/v1/forge/ideate and `network`. */
export const ForgeArgs = ForgeRequest.extend({ network: NetworkParam });

/** Arguments of the MCP tool `prove_debate`: the body of POST /api/v1/prove/debate and `network`. */
export const ProveArgs = ProveRequest.extend({ network: NetworkParam });
