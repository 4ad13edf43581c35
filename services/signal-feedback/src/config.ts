import { z } from 'zod';
import {
  assertProductionReady,
  boolVar,
  ConfigError,
  DatabaseEnv,
  intVar,
  parseConfig,
  publicServiceEnv,
} from '@repo/service-kit';

/**
 * signal-feedback's environment (README, "Configuration"). Parsed once at boot; every bad variable is
 * named. Secrets (LLM_API_KEY) have no defaults.
 */
export const SignalFeedbackEnv = z.object({
  ...publicServiceEnv(3002, 9102),
  /** A batch of 1,000 signals with small payloads is about 200 KB. */
  BODY_LIMIT: z.string().default('1mb'),
  ...DatabaseEnv,
  /** Largest signal array accepted by /api/signals and /api/ingest; larger batches get 413. */
  MAX_BATCH_SIZE: intVar(1000, 1, 10_000),
  /** How long an API key lookup (product, plan, contexts) is reused in this process, ms; 0 disables. */
  API_KEY_CACHE_TTL_MS: intVar(5_000, 0, 300_000),
  /** Session lifetime in hours (absolute, from log-in). */
  SESSION_TTL_HOURS: intVar(168, 1, 24 * 90),
  /**
   * Secure cookies; unset: true when NODE_ENV=production (see `cookieSecure`), where false is refused.
   * No default here (`boolVar` has one), so that unset stays unset.
   */
  COOKIE_SECURE: z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1' || v === 'yes')),
  /** argon2id cost (OWASP's minimum: 19 MiB, 2 iterations, 1 lane). */
  ARGON2_MEMORY_KIB: intVar(19_456, 1024, 1_048_576),
  ARGON2_TIME_COST: intVar(2, 1, 20),
  /**
   * Failed log-ins of one address from one client (IPv4 address or IPv6 /64) before each further
   * failure makes that pair wait 1 s, 2 s, 4 s … up to LOGIN_MAX_DELAY_SECONDS.
   */
  LOGIN_FREE_FAILURES: intVar(5, 0, 1000),
  LOGIN_MAX_DELAY_SECONDS: intVar(900, 1, 86_400),
  /** Log-in attempts allowed per client (IPv4 address or IPv6 /64) per window. */
  LOGIN_MAX_ATTEMPTS_PER_IP: intVar(50, 1, 100_000),
  LOGIN_WINDOW_SECONDS: intVar(900, 1, 86_400),
  /** Sign-ups allowed per client IP per hour. */
  SIGNUP_MAX_PER_IP_PER_HOUR: intVar(20, 1, 100_000),
  /** Background analysis period in ms; 0 disables the schedule (manual runs still work). */
  ANALYSIS_INTERVAL_MS: intVar(600_000, 0, 86_400_000),
  /** Minimum signals in the last 24 hours before a context is analysed. */
  ANALYSIS_MIN_SIGNALS: intVar(5, 1, 1_000_000),
  /** Period of the scheduled verification of deployments whose after-window closed, ms; 0 disables it (on-demand verification still works). */
  VERIFICATION_INTERVAL_MS: intVar(60_000, 0, 86_400_000),
  /** Length of each window a deployment's verification compares when the deployment names none, minutes (24 h). */
  VERIFICATION_WINDOW_MINUTES: intVar(1440, 1, 10_080),
  /** Two-sided significance level of the verification's z-test when the deployment names none. */
  VERIFICATION_ALPHA: z.coerce.number().min(0.0001).max(0.2).default(0.05),
  /** Fewest signals each compared window needs for a verdict other than `inconclusive`. */
  VERIFICATION_MIN_SIGNALS: intVar(30, 1, 1_000_000),
  /** Period of the open-window monitor (README, "The open-window monitor"), ms; 0 disables it. Each open deployment is looked at about once per period. */
  MONITOR_INTERVAL_MS: intVar(60_000, 0, 86_400_000),
  /**
   * The open-deployment listing's fast path (README, "The open-window monitor"; docs/architecture.md,
   * "Fast paths"): the monitor stores each open deployment's provisional figures, and a listing serves
   * them while they are current; false: every listing computes them.
   */
  DEPLOYMENT_LISTING_SNAPSHOTS: boolVar(true),
  /** The service's public origin, e.g. https://feedback.example.com, for links in webhooks; unset: `link` is null. */
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Per-attempt webhook deadline (connect, headers, body), ms (README, "Webhooks (signal-feedback)"). */
  WEBHOOK_TIMEOUT_MS: intVar(10_000, 100, 120_000),
  /** Webhook attempts before a delivery is given up. */
  WEBHOOK_MAX_ATTEMPTS: intVar(8, 1, 50),
  /** Delay before the second webhook attempt, ms; doubles per attempt up to one hour. */
  WEBHOOK_RETRY_BASE_MS: intVar(5000, 10, 3_600_000),
  /** How often each replica looks for due webhook deliveries, ms; 0 disables the delivery worker. */
  WEBHOOK_POLL_INTERVAL_MS: intVar(1000, 0, 60_000),
  /** Comma-separated hosts, IPs or CIDRs webhooks may reach although private (development only; refused in production). */
  SSRF_ALLOWLIST: z.string().optional(),
  /** OpenAI-compatible Chat Completions endpoint (e.g. https://api.openai.com/v1); unset: evidence-only proposals. */
  LLM_BASE_URL: z.url().optional(),
  LLM_API_KEY: z.string().optional(),
  LLM_MODEL: z.string().optional(),
  LLM_TIMEOUT_MS: intVar(30_000, 100, 600_000),
});

/** The parsed configuration. */
export type SignalFeedbackConfig = z.infer<typeof SignalFeedbackEnv>;

/** The LLM settings when all three variables are set. */
export interface LlmSettings {
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Per-request timeout in ms. */
  timeoutMs: number;
}

/**
 * Reads the configuration from the environment.
 * @throws ConfigError naming every invalid or missing variable, or the LLM variables when they are
 *   only partly set; with `NODE_ENV=production` also (README, "Configuration") a `DATABASE_URL` that
 *   reaches this machine (loopback or unspecified address in any form, a `localhost` name, a socket,
 *   pg's `host` parameter), `COOKIE_SECURE=false`, `*` or an `http:` origin in `CORS_ORIGINS`, and a
 *   non-empty `SSRF_ALLOWLIST`
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): SignalFeedbackConfig {
  const config = parseConfig(SignalFeedbackEnv, env);
  const llm = [config.LLM_BASE_URL, config.LLM_MODEL].filter(Boolean).length;
  if (llm === 1) {
    throw new ConfigError([
      'LLM_BASE_URL and LLM_MODEL must be set together (LLM_API_KEY too, unless the endpoint needs none)',
    ]);
  }
  // Production refuses a local database, cookies without Secure, open CORS and SSRF exceptions (README, "Configuration").
  assertProductionReady(config.NODE_ENV, [
    { kind: 'remote', name: 'DATABASE_URL', value: config.DATABASE_URL },
    {
      kind: 'enabled',
      name: 'COOKIE_SECURE',
      value: config.COOKIE_SECURE,
      why: 'session cookies would be sent over plain HTTP, without their __Host- prefix',
    },
    { kind: 'cors', name: 'CORS_ORIGINS', value: config.CORS_ORIGINS },
    { kind: 'empty', name: 'SSRF_ALLOWLIST', value: config.SSRF_ALLOWLIST },
  ]);
  return config;
}

/** The LLM settings of a configuration, or undefined when no LLM is configured. */
export function llmSettings(config: SignalFeedbackConfig): LlmSettings | undefined {
  if (!config.LLM_BASE_URL || !config.LLM_MODEL) return undefined;
  return {
    baseUrl: config.LLM_BASE_URL,
    apiKey: config.LLM_API_KEY ?? 'none',
    model: config.LLM_MODEL,
    timeoutMs: config.LLM_TIMEOUT_MS,
  };
}

/** Whether cookies carry `Secure`: COOKIE_SECURE when set, else NODE_ENV=production. */
export function cookieSecure(config: SignalFeedbackConfig): boolean {
  return config.COOKIE_SECURE ?? config.NODE_ENV === 'production';
}
