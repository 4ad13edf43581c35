import { z } from 'zod';
import {
  assertProductionReady,
  BaseHttpEnv,
  BrokerEnv,
  ConfigError,
  intVar,
  parseConfig,
  portVar,
  replicaIdVar,
} from '@repo/service-kit';
import { parseAllowlist } from '@repo/ssrf-guard';
import { DEFAULT_SCOUT_FETCH_SETTINGS as SCOUT, type ScoutFetchSettings } from './domain/scout/settings';

const optionalUrl = z.url().optional();

/**
 * The pipeline-runner's environment (README, "Configuration"). Parsed once at boot; every bad
 * variable is named; blank strings count as unset; no default for any secret.
 */
export const RunnerEnv = z.object({
  ...BaseHttpEnv,
  /** Port of the runner's own probes and `/metrics` (it serves no API). */
  PORT: portVar(3004),
  ...BrokerEnv,
  /** OpenAI-compatible base URL including `/v1` (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter); unset: no LLM, health reports `config`. */
  LLM_BASE_URL: optionalUrl,
  LLM_API_KEY: z.string().optional(),
  LLM_MODEL: z.string().min(1).optional(),
  /** Timeout of one LLM request in milliseconds. */
  LLM_TIMEOUT_MS: intVar(120_000, 1000, 900_000),
  /** `searxng`, `tavily` or `none` (the prove debate then runs without search). */
  SEARCH_PROVIDER: z.enum(['searxng', 'tavily', 'none']).default('none'),
  SEARXNG_URL: optionalUrl,
  TAVILY_API_KEY: z.string().optional(),
  /** Step messages processed at once by this runner (AMQP prefetch). */
  RUNNER_PREFETCH: intVar(8, 1, 512),
  /** Heartbeat period in milliseconds. */
  HEARTBEAT_INTERVAL_MS: intVar(5000, 100, 60_000),
  /** How often the LLM and search provider are probed, in milliseconds. */
  PROBE_INTERVAL_MS: intVar(30_000, 500, 600_000),
  /** Backoff before a failed step is requeued, in milliseconds (doubles per attempt, capped at 30 s). */
  STEP_RETRY_BASE_MS: intVar(1000, 0, 60_000),
  /** Scout scans: deadline of one source request (connect, headers, body), in milliseconds. */
  SCOUT_FETCH_TIMEOUT_MS: intVar(SCOUT.timeoutMs, 100, 120_000),
  /** Scout scans: largest source response accepted, in bytes (default 2 MiB). */
  SCOUT_MAX_RESPONSE_BYTES: intVar(SCOUT.maxResponseBytes, 1024, 100 * 1024 * 1024),
  /** Scout scans: minimum gap between two requests to one host, in milliseconds. */
  SCOUT_HOST_DELAY_MS: intVar(SCOUT.hostDelayMs, 0, 60_000),
  /** Scout scans: items kept per source at most. */
  SCOUT_MAX_ITEMS_PER_SOURCE: intVar(SCOUT.maxItemsPerSource, 1, 1000),
  /** Scout scans: comma-separated ISO 639-1 codes of the languages kept (default `en`). */
  SCOUT_LANGUAGES: z
    .string()
    .default(SCOUT.languages.join(','))
    .transform((v) =>
      v
        .split(',')
        .map((l) => l.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^[a-z]{2,3}$/, 'must be ISO 639-1 codes such as en,de')).min(1)),
  /** Scout scans: titles shorter than this many characters drop their item. */
  SCOUT_MIN_TITLE_CHARS: intVar(SCOUT.minTitleChars, 1, 200),
  /** Scout scans: the `User-Agent` of source requests. */
  SCOUT_USER_AGENT: z.string().min(1).max(300).default(SCOUT.userAgent),
  /**
   * Hosts, IP addresses and CIDR blocks that scout sources and their redirects may reach although they
   * are loopback, private, link-local or metadata addresses (development and tests only, e.g.
   * `127.0.0.1` for the fixture feeds), comma-separated. Empty by default: public addresses only.
   */
  SSRF_ALLOWLIST: z
    .string()
    .default('')
    .transform((value, ctx) => {
      try {
        return parseAllowlist(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    }),
  /** Identifies this runner in heartbeats and events; default host name + pid. */
  RUNNER_ID: replicaIdVar(),
});

/** The parsed configuration. */
export type RunnerConfig = z.infer<typeof RunnerEnv>;

/**
 * Reads the configuration.
 * @throws ConfigError naming every invalid or missing variable (LLM_BASE_URL without LLM_MODEL, a
 *   search provider without its URL or key), and with `NODE_ENV=production` RabbitMQ's default or no
 *   credentials, a broker URL that reaches this machine (loopback or unspecified address in any form,
 *   a `localhost` name) or a non-empty `SSRF_ALLOWLIST` (README, "Security")
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  const config = parseConfig(RunnerEnv, env);
  const problems: string[] = [];
  if (config.LLM_BASE_URL && !config.LLM_MODEL)
    problems.push('LLM_MODEL is required when LLM_BASE_URL is set');
  if (config.SEARCH_PROVIDER === 'searxng' && !config.SEARXNG_URL)
    problems.push('SEARXNG_URL is required with SEARCH_PROVIDER=searxng');
  if (config.SEARCH_PROVIDER === 'tavily' && !config.TAVILY_API_KEY)
    problems.push('TAVILY_API_KEY is required with SEARCH_PROVIDER=tavily');
  if (problems.length > 0) throw new ConfigError(problems);
  assertProductionReady(config.NODE_ENV, [
    { kind: 'broker', name: 'AMQP_URL', value: config.AMQP_URL },
    { kind: 'empty', name: 'SSRF_ALLOWLIST', value: env.SSRF_ALLOWLIST },
  ]);
  return config;
}

/**
 * The scout pipeline's fetch settings from the configuration (`PipelineDeps.scout`); the settings
 * without a variable keep their defaults.
 * @param config the parsed configuration
 */
export function scoutFetchSettings(config: RunnerConfig): Partial<ScoutFetchSettings> {
  return {
    timeoutMs: config.SCOUT_FETCH_TIMEOUT_MS,
    maxResponseBytes: config.SCOUT_MAX_RESPONSE_BYTES,
    hostDelayMs: config.SCOUT_HOST_DELAY_MS,
    maxItemsPerSource: config.SCOUT_MAX_ITEMS_PER_SOURCE,
    languages: config.SCOUT_LANGUAGES,
    minTitleChars: config.SCOUT_MIN_TITLE_CHARS,
    userAgent: config.SCOUT_USER_AGENT,
    ssrfAllowlist: config.SSRF_ALLOWLIST,
  };
}
