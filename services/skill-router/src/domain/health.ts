import type { HealthCounters } from '../data/health-checks';
import type { McpServers } from './mcp-tools';
import { unansweredProbe, type Probe } from './verification';
import type { SkillStatus } from '../schemas';

/** When health checks change a skill's status (config HEALTH_FAILURES_TO_SUSPEND, HEALTH_SUCCESSES_TO_RESUME). */
export interface HealthThresholds {
  /** Failed checks in a row that suspend an active skill. */
  failuresToSuspend: number;
  /** Good checks in a row that make a suspended skill active again. */
  successesToResume: number;
}

/**
 * The status of a skill after a periodic health check (README, "Registration and verification"): an
 * active skill is suspended after `failuresToSuspend` failed checks in a row, a suspended one resumes
 * after `successesToResume` good checks in a row; any other status stays.
 * @param before the status when the check was recorded
 * @param ok whether this check succeeded
 * @param counters the runs of failures and successes, this check included
 */
export function statusAfterHealthCheck(
  before: SkillStatus,
  ok: boolean,
  counters: HealthCounters,
  thresholds: HealthThresholds,
): SkillStatus {
  if (before === 'active' && !ok && counters.consecutiveFailures >= thresholds.failuresToSuspend)
    return 'suspended';
  if (before === 'suspended' && ok && counters.consecutiveSuccesses >= thresholds.successesToResume)
    return 'active';
  return before;
}

/**
 * The health probe of an MCP server (README, "MCP servers as skills"): the handshake (`initialize`)
 * and a `ping` in a session of its own, bounded like every MCP session (each request's timeout, the
 * response cap, the SSRF guard). Healthy when the ping is answered; the latency is the ping's, in
 * milliseconds (`null` when no answer came in time). An unhealthy probe's `error` is the session's
 * one-line reason (`MCP handshake: no answer within 5000 ms`, `ping: …`), in which the server's own
 * text appears as at most a short excerpt.
 */
export async function probeMcpServer(servers: McpServers, endpoint: string): Promise<Probe> {
  const t0 = performance.now();
  const opened = await servers.open(endpoint);
  if (!opened.ok) return unansweredProbe({ ...opened, latencyMs: Math.round(performance.now() - t0) });
  try {
    const pong = await opened.session.ping();
    return pong.ok
      ? { ok: true, latencyMs: pong.latencyMs, statusCode: null, error: null }
      : unansweredProbe(pong);
  } finally {
    await opened.session.close();
  }
}
