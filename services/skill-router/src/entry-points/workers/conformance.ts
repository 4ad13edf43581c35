import type { Logger, Loop } from '@repo/service-kit';
import type { ConformanceChecks, ConformanceJob } from '../../data/conformance-checks';
import {
  countConformance,
  jitteredDelay,
  statusAfterConformance,
  type ConformanceSchedule,
  type ConformanceThresholds,
} from '../../domain/conformance';
import { callWithGeneratedInput, type CallVerdict, type SchemaChecks } from '../../domain/verification';
import type { GuardedSkillHttp } from '../../adapters/skill-http';
import {
  mcpConformanceCall,
  registerChangedTool,
  type McpServers,
  type ToolRevisions,
} from '../../domain/mcp-tools';
import type { SkillStatus } from '../../schemas';
import { createClaimLoop, type ClaimLoopSettings } from './claim-loop';

/**
 * Settings of the conformance worker (config CONFORMANCE_*): `intervalMs` between polls for due
 * calls (CONFORMANCE_POLL_INTERVAL_MS), `batchSize` calls claimed per poll (CONFORMANCE_BATCH_SIZE).
 */
export interface ConformanceWorkerOptions extends ClaimLoopSettings, ConformanceThresholds {
  /** When the next call of a skill is due after each call. */
  schedule: ConformanceSchedule;
  /** A claimed call not recorded within this time may be claimed again, in milliseconds (VERIFY_LEASE_MS). */
  leaseMs: number;
  /** Called after each recorded call (metrics). */
  onChecked?: (verdict: CallVerdict, status: SkillStatus) => void;
  /** Numbers in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
}

/** What a conformance call needs: the schedule, the outbound clients, the sandbox, and the directory for re-listed MCP tools. */
export interface ConformanceDeps {
  checks: ConformanceChecks;
  /** Where a tool whose listed definition changed is registered as a new revision. */
  directory: ToolRevisions;
  http: GuardedSkillHttp;
  mcp: McpServers;
  schemas: SchemaChecks;
}

/**
 * Runs one claimed conformance call (README, "Pinned definitions"): an input generated from the
 * skill's `input_schema` is POSTed through the SSRF guard and the answer checked against its
 * `output_schema`, both in the schema sandbox; the verdict moves the skill between `active` and
 * `degraded` and schedules the next call. For a tool imported from an MCP server the server's tools
 * are listed again first (README, "MCP servers as skills"): a tool listed with another description or
 * other schemas is registered as a new revision (`pending_verification`, out of routing until it
 * verifies) and its status is then `pending_verification`.
 * @returns the verdict and the status after it; `null` status when the skill changed meanwhile
 * @throws SandboxClosedError when the service shuts down mid-call (the lease then expires)
 */
export async function runConformanceCall(
  deps: ConformanceDeps,
  job: ConformanceJob,
  options: Pick<ConformanceWorkerOptions, 'schedule' | 'failuresToDegrade' | 'successesToRecover' | 'random'>,
): Promise<{ verdict: CallVerdict; detail: string; status: SkillStatus | null }> {
  const refusal = await deps.http.refusal(job.endpoint);
  let call: { verdict: CallVerdict; detail: string };
  if (refusal) call = { verdict: 'inconclusive', detail: `endpoint refused: ${refusal}` };
  else if (job.mcpTool === null) call = await callWithGeneratedInput(deps.http, deps.schemas, job);
  else {
    const checked = await mcpConformanceCall(deps.mcp, deps.schemas, { ...job, mcpTool: job.mcpTool });
    if (checked.verdict !== 'changed') call = checked;
    else {
      const revised = await registerChangedTool(deps.directory, job.skillId, job.revision, checked.tool);
      if (revised === null)
        return { verdict: 'inconclusive', detail: 'the skill changed meanwhile', status: null };
      // The next call is scheduled when the new revision verifies; the lease just expires.
      if (revised.ok)
        return { verdict: 'nonconforming', detail: checked.detail, status: 'pending_verification' };
      call = { verdict: 'nonconforming', detail: revised.reason };
    }
  }
  const next = jitteredDelay(options.schedule, (options.random ?? Math.random)());
  const status = await deps.checks.record(
    job,
    { judged: call.verdict !== 'inconclusive', error: call.verdict === 'conforms' ? null : call.detail },
    next,
    (before) => countConformance(before, call.verdict),
    (before, counters) => statusAfterConformance(before, counters, options),
  );
  return { verdict: call.verdict, detail: call.detail, status };
}

/**
 * The conformance worker: claims active and degraded skills whose call is due (one replica each, at
 * most one call in flight per skill under a lease), calls them concurrently and records the verdicts.
 * Nothing runs until the loop is started or kicked.
 */
export function createConformanceWorker(
  deps: ConformanceDeps & { logger: Logger },
  options: ConformanceWorkerOptions,
): Loop {
  return createClaimLoop('conformance', deps.logger, options, {
    claim: (batchSize) => deps.checks.claimDue(batchSize, options.leaseMs),
    work: async (job) => {
      const { verdict, detail, status } = await runConformanceCall(deps, job, options);
      if (!status) return;
      options.onChecked?.(verdict, status);
      if (status !== job.status)
        deps.logger.warn(
          { skillId: job.skillId, from: job.status, to: status, verdict, detail },
          'skill status changed by conformance calls',
        );
    },
    failure: 'conformance call failed unexpectedly',
  });
}
