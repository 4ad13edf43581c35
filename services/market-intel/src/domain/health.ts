import type { HealthResponse } from '@repo/schemas';

/** Retry-After in seconds per error class (market-intel spec, "Discovery and health"). */
export const RETRY_AFTER_SECONDS = { upstream: 30, config: 600 } as const;

/** A health answer: the body and the HTTP status to send it with. */
export interface HealthReport {
  status: 200 | 503;
  body: HealthResponse;
}

/** Produces the current health of the compute upstreams. */
export type HealthProbe = () => Promise<HealthReport>;

/**
 * Health while no compute upstream is configured: the LLM is reported as not configured, search as
 * `null`, and the service as unhealthy with `errorClass: "config"` (ARCHITECTURE.md, "Compute jobs":
 * with no LLM configured, health reports `config`).
 * @param now the clock for `server_time`
 */
export function unconfiguredHealth(now: () => Date = () => new Date()): HealthProbe {
  return async () => ({
    status: 503,
    body: {
      ok: false,
      llm: { ok: false, latency_ms: 0, error: 'LLM not configured' },
      search: null,
      server_time: now().toISOString(),
      errorClass: 'config',
    },
  });
}
