import { z } from 'zod';
import { SolanaAddress } from './schemas';
import {
  assertProductionReady,
  assertSetTogether,
  boolVar,
  DatabaseEnv,
  intVar,
  parseConfig,
  publicServiceEnv,
} from '@repo/service-kit';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const DAY_SECONDS = 86_400;

/**
 * skill-router's environment (services/skill-router/README.md, "Configuration"). Parsed once at boot;
 * every bad variable is named. Durations are milliseconds unless the name says seconds.
 */
export const SkillRouterEnv = z.object({
  ...publicServiceEnv(3003, 9103),
  ...DatabaseEnv,
  /** POST /api/auth/key per client IP and minute (services/skill-router/README.md, "Limits": 5). */
  KEY_CREATION_LIMIT_PER_MINUTE: intVar(5, 1, 10_000),
  /** Call reports accepted per API key and skill within REPORT_LIMIT_WINDOW_SECONDS. */
  REPORT_LIMIT_PER_KEY_SKILL: intVar(30, 1, 1_000_000),
  REPORT_LIMIT_WINDOW_SECONDS: intVar(3600, 1, 30 * DAY_SECONDS),
  /** Skill registrations (creations and updates) one API key may make per day, across replicas. */
  REGISTRATIONS_PER_KEY_PER_DAY: intVar(50, 1, 1_000_000),
  /** Route requests one API key may make per minute, across replicas. */
  ROUTES_PER_KEY_PER_MINUTE: intVar(300, 1, 1_000_000),
  /**
   * Hosts, IP addresses and CIDR ranges skill endpoints may use although they are loopback, private,
   * link-local or metadata addresses (development and tests only), comma-separated. Empty by default.
   */
  SSRF_ALLOWLIST: z.string().default(''),
  /** Run the verification and health-check workers in this process. */
  WORKERS_ENABLED: boolVar(true),
  /** How often the verification worker looks for pending skills. */
  VERIFY_INTERVAL_MS: intVar(2000, 10, HOUR_MS),
  /** Skills claimed per verification round (per replica). */
  VERIFY_BATCH_SIZE: intVar(16, 1, 1000),
  /** Timeout of each outbound request of a verification (health check, test call). */
  VERIFY_TIMEOUT_MS: intVar(5000, 50, 120_000),
  /** A claimed verification not finished within this lease is claimed again by any replica. */
  VERIFY_LEASE_MS: intVar(60_000, 1000, HOUR_MS),
  /** Claims of one revision that may end without a result before the skill is failed instead. */
  VERIFY_MAX_ATTEMPTS: intVar(3, 1, 100),
  /** Worker threads of the schema sandbox (registrants' schema checks, input generation, reply checks). */
  SANDBOX_THREADS: intVar(2, 1, 64),
  /** Heap limit of each sandbox thread, in MB; a check that reaches it is stopped and fails. */
  SANDBOX_MEMORY_MB: intVar(64, 16, 4096),
  /** Deadline of one sandbox check, counted from when a thread takes it; a check past it fails. */
  SANDBOX_TASK_TIMEOUT_MS: intVar(2000, 50, 120_000),
  /** How long an idle sandbox thread lives; threads start when checks arrive. */
  SANDBOX_IDLE_TIMEOUT_MS: intVar(300_000, 1_000, DAY_MS),
  /** Interval between two periodic health checks of one active (or suspended) skill. */
  HEALTH_CHECK_INTERVAL_MS: intVar(60_000, 10, DAY_MS),
  /** How often the health worker looks for due skills. */
  HEALTH_POLL_INTERVAL_MS: intVar(5000, 10, HOUR_MS),
  HEALTH_CHECK_TIMEOUT_MS: intVar(5000, 50, 120_000),
  HEALTH_BATCH_SIZE: intVar(32, 1, 1000),
  /** Consecutive failed health checks after which an active skill is suspended. */
  HEALTH_FAILURES_TO_SUSPEND: intVar(3, 1, 1000),
  /** Consecutive successful health checks after which a suspended skill is active again. */
  HEALTH_SUCCESSES_TO_RESUME: intVar(3, 1, 1000),
  /**
   * Interval between two conformance calls of one active or degraded skill (README, "Pinned
   * definitions"): each is one call with a generated input, so a provider with N skills gets N calls
   * per interval from the whole service, never two at once for one skill.
   */
  CONFORMANCE_INTERVAL_MS: intVar(900_000, 10, DAY_MS),
  /** How far each conformance interval is moved at random either way, in percent. */
  CONFORMANCE_JITTER_PERCENT: intVar(20, 0, 90),
  /** How often the conformance worker looks for due calls. */
  CONFORMANCE_POLL_INTERVAL_MS: intVar(10_000, 10, HOUR_MS),
  /** Conformance calls claimed per poll (per replica), run concurrently. */
  CONFORMANCE_BATCH_SIZE: intVar(8, 1, 1000),
  /** Non-conforming answers in a row that make an active skill `degraded` (out of routing). */
  CONFORMANCE_FAILURES_TO_DEGRADE: intVar(2, 1, 1000),
  /** Conforming answers in a row that make a degraded skill `active` again. */
  CONFORMANCE_SUCCESSES_TO_RECOVER: intVar(2, 1, 1000),
  /**
   * Most candidates a route request ranked in PostgreSQL scores (best full-text rank first); the
   * routing index scores every match.
   */
  ROUTE_CANDIDATE_LIMIT: intVar(1000, 10, 100_000),
  /** Rank routes from the in-memory routing index while it is current (false: always in PostgreSQL). */
  ROUTING_INDEX: boolVar(true),
  /** Milliseconds between the routing index's watermark checks. */
  ROUTING_WATERMARK_INTERVAL_MS: intVar(5000, 10, HOUR_MS),
  /** First wait before the routing change listener reconnects, in milliseconds (doubles up to 30 s). */
  ROUTING_LISTEN_RETRY_MS: intVar(500, 10, 60_000),
  /** How far before the previous check a watermark check looks again, in milliseconds. */
  ROUTING_WATERMARK_MARGIN_MS: intVar(10_000, 0, HOUR_MS),
  /** Matches returned by a route request unless it asks for fewer. */
  ROUTE_DEFAULT_MATCHES: intVar(10, 1, 100),
  /** Largest response body read from a skill endpoint, in bytes. */
  MAX_RESPONSE_BYTES: intVar(1_048_576, 1024, 100 * 1_048_576),
  /**
   * JSON-RPC URL of Solana's main network and its USDC mint, to check paid call reports there (README,
   * "Reputation"); both or neither. Unset: payment proofs on `solana` are refused.
   */
  SOLANA_RPC_URL: z.url().optional(),
  USDC_MINT: SolanaAddress.optional(),
  /** The same for `solana-devnet`. */
  SOLANA_DEVNET_RPC_URL: z.url().optional(),
  USDC_MINT_DEVNET: SolanaAddress.optional(),
  /** How old (block time, seconds) a payment may be when it is first offered with a report. */
  PAYMENT_PROOF_MAX_AGE_SECONDS: intVar(DAY_SECONDS, 60, 30 * DAY_SECONDS),
  /** Payment proofs one API key may have checked per hour (each can cost RPC calls), across replicas. */
  PAYMENT_PROOFS_PER_KEY_PER_HOUR: intVar(60, 1, 1_000_000),
  /**
   * OpenAI-compatible embeddings endpoint, e.g. https://api.openai.com/v1 (`POST {base}/embeddings`),
   * and its model: with both, capability_match blends meaning with words (services/skill-router/
   * README.md, "Search by meaning"); both or neither. Unset: words alone.
   */
  EMBEDDINGS_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  EMBEDDINGS_MODEL: z.string().max(200).optional(),
  /** Sent as `Authorization: Bearer`; unset for endpoints that need none. */
  EMBEDDINGS_API_KEY: z.string().optional(),
  /** Deadline of one embeddings request (connect, headers, body), in milliseconds. */
  EMBEDDINGS_TIMEOUT_MS: intVar(2000, 50, 120_000),
  /** Cosine similarity from which a skill sharing no word with the task still matches it, in hundredths (50: 0.50). */
  EMBEDDINGS_MIN_SIMILARITY_PERCENT: intVar(50, 0, 100),
  /** Distinct tasks whose embeddings each replica remembers. */
  EMBEDDINGS_TASK_CACHE: intVar(10_000, 0, 1_000_000),
});

/** The parsed configuration. */
export type SkillRouterConfig = z.infer<typeof SkillRouterEnv>;

/**
 * Reads the configuration from the environment.
 * @throws ConfigError naming every invalid or missing variable, and with `NODE_ENV=production`
 *   (services/skill-router/README.md, "Security") a `DATABASE_URL` that reaches this machine (loopback
 *   or unspecified address in any form, a `localhost` name, a socket, pg's `host` parameter), a
 *   non-empty `SSRF_ALLOWLIST`, or `*` or an `http:` origin in `CORS_ORIGINS`, or a Solana RPC URL
 *   that reaches this machine; always when a Solana RPC URL and its USDC mint are not set together,
 *   or one of EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL without the other
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): SkillRouterConfig {
  const config = parseConfig(SkillRouterEnv, env);
  // Production refuses a local database, a development allowlist and open CORS
  // (services/skill-router/README.md, "Security").
  assertProductionReady(config.NODE_ENV, [
    { kind: 'remote', name: 'DATABASE_URL', value: config.DATABASE_URL },
    { kind: 'empty', name: 'SSRF_ALLOWLIST', value: config.SSRF_ALLOWLIST },
    { kind: 'cors', name: 'CORS_ORIGINS', value: config.CORS_ORIGINS },
    ...(config.SOLANA_RPC_URL
      ? [{ kind: 'remote' as const, name: 'SOLANA_RPC_URL', value: config.SOLANA_RPC_URL }]
      : []),
    ...(config.SOLANA_DEVNET_RPC_URL
      ? [{ kind: 'remote' as const, name: 'SOLANA_DEVNET_RPC_URL', value: config.SOLANA_DEVNET_RPC_URL }]
      : []),
  ]);
  assertSetTogether(config, [
    ['SOLANA_RPC_URL', 'USDC_MINT'],
    ['SOLANA_DEVNET_RPC_URL', 'USDC_MINT_DEVNET'],
    ['EMBEDDINGS_BASE_URL', 'EMBEDDINGS_MODEL'],
  ]);
  return config;
}

/** The embeddings settings when both EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL are set. */
export interface EmbeddingsSettings {
  /** Base URL; requests go to `{baseUrl}/embeddings`. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per-request deadline in ms. */
  timeoutMs: number;
  /** Cosine similarity (0..1) from which a skill sharing no word with the task matches it. */
  minSimilarity: number;
  /** Distinct task texts whose embeddings are remembered. */
  taskCacheEntries: number;
}

/** The embeddings settings of a configuration, or undefined when search by meaning is off. */
export function embeddingsSettings(config: SkillRouterConfig): EmbeddingsSettings | undefined {
  if (!config.EMBEDDINGS_BASE_URL || !config.EMBEDDINGS_MODEL) return undefined;
  return {
    baseUrl: config.EMBEDDINGS_BASE_URL,
    model: config.EMBEDDINGS_MODEL,
    ...(config.EMBEDDINGS_API_KEY ? { apiKey: config.EMBEDDINGS_API_KEY } : {}),
    timeoutMs: config.EMBEDDINGS_TIMEOUT_MS,
    minSimilarity: config.EMBEDDINGS_MIN_SIMILARITY_PERCENT / 100,
    taskCacheEntries: config.EMBEDDINGS_TASK_CACHE,
  };
}
