import type { Logger, Loop } from '@repo/service-kit';
import type { HealthChecks } from '../../data/health-checks';
import type { SkillStats } from '../../data/skill-stats';
import { probeMcpServer, statusAfterHealthCheck } from '../../domain/health';
import type { McpServers } from '../../domain/mcp-tools';
import { refreshSkillMetrics } from '../../domain/skill-metrics';
import { probeHealth, type Probe } from '../../domain/verification';
import type { GuardedSkillHttp } from '../../adapters/skill-http';
import { createClaimLoop, type ClaimLoopSettings } from './claim-loop';

/**
 * Settings of the health worker (config HEALTH_*): `intervalMs` between polls for due checks
 * (HEALTH_POLL_INTERVAL_MS), `batchSize` checks claimed per poll.
 */
export interface HealthWorkerOptions extends ClaimLoopSettings {
  /** Time from a claimed check to the skill's next one, in milliseconds (HEALTH_CHECK_INTERVAL_MS). */
  checkIntervalMs: number;
  failuresToSuspend: number;
  successesToResume: number;
  /** Called after each recorded check (metrics). */
  onChecked?: (ok: boolean, status: string) => void;
}

/**
 * The periodic health checker: claims active and suspended skills whose check is due (one replica
 * each), probes them through the SSRF guard, records the result (which feeds success_rate_24h and
 * avg_latency_ms) and suspends or resumes skills after sustained failure or recovery. An HTTP skill
 * is probed with a `GET` of its endpoint; the tools of an MCP server with the handshake and a `ping`
 * (README, "MCP servers as skills"), once per server and round: the tools claimed together share the
 * probe. `http` and `mcp` carry the health check timeout. Nothing runs until the loop is started or
 * kicked.
 */
export function createHealthWorker(
  deps: {
    healthChecks: HealthChecks;
    stats: SkillStats;
    http: GuardedSkillHttp;
    mcp: McpServers;
    logger: Logger;
  },
  options: HealthWorkerOptions,
): Loop {
  const probe = async (endpoint: string, mcp: boolean): Promise<Probe> => {
    const refusal = await deps.http.refusal(endpoint);
    if (refusal)
      return { ok: false, latencyMs: null, statusCode: null, error: `endpoint refused: ${refusal}` };
    if (mcp) return probeMcpServer(deps.mcp, endpoint);
    const { detail: _detail, ...probed } = await probeHealth(deps.http, endpoint);
    return probed;
  };
  // The probes of this round's MCP servers, by URL (rounds never overlap: the loop runs one at a time).
  let serverProbes = new Map<string, Promise<Probe>>();
  const probeServer = (endpoint: string): Promise<Probe> => {
    let probed = serverProbes.get(endpoint);
    if (!probed) serverProbes.set(endpoint, (probed = probe(endpoint, true)));
    return probed;
  };

  return createClaimLoop('health', deps.logger, options, {
    claim: (batchSize) => {
      serverProbes = new Map();
      return deps.healthChecks.claimDue(batchSize, options.checkIntervalMs);
    },
    work: async (job) => {
      const probed =
        job.mcpTool === null ? await probe(job.endpoint, false) : await probeServer(job.endpoint);
      const status = await deps.healthChecks.record(job, probed, (before, counters) =>
        statusAfterHealthCheck(before, probed.ok, counters, options),
      );
      if (status) {
        await refreshSkillMetrics(deps.stats, job.skillId);
        options.onChecked?.(probed.ok, status);
        if (status !== job.status)
          deps.logger.warn(
            { skillId: job.skillId, from: job.status, to: status, error: probed.error },
            'skill status changed by health checks',
          );
      }
    },
    failure: 'health check failed unexpectedly',
  });
}
