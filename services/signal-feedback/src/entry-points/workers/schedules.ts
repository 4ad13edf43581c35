import { createLoop, type Logger, type Loop, type LoopMetrics, type RoundResult } from '@repo/service-kit';
import type { AnalysisService } from '../../domain/analysis';
import type { DeploymentService } from '../../domain/deployments';
import type { RegressionMonitor } from '../../domain/regression-monitor';

/** What every scheduled pass shares: the service's logger and loop metrics. */
export interface ScheduleContext {
  logger: Logger;
  metrics?: LoopMetrics;
}

/** The most items a batched pass handles; a full batch means more may be due, so the next runs at once. */
const PASS_BATCH = 100;

/**
 * A pass run every `intervalMs` milliseconds (its `*_INTERVAL_MS`, README, "Configuration") on every
 * replica; a failed pass is logged and retried after a longer wait.
 * @returns the loop, or undefined when `intervalMs` is 0 (the schedule is turned off)
 */
function scheduledPass(
  name: string,
  intervalMs: number,
  context: ScheduleContext,
  round: () => Promise<RoundResult>,
  initialDelayMs?: number,
): Loop | undefined {
  if (intervalMs <= 0) return undefined;
  return createLoop({
    name,
    intervalMs,
    initialDelayMs,
    logger: context.logger,
    metrics: context.metrics,
    round,
  });
}

/** The work of the scheduled passes. */
export interface ScheduledWork {
  analysis: Pick<AnalysisService, 'runOnce'>;
  deployments: Pick<DeploymentService, 'verifyDue'>;
  monitor: Pick<RegressionMonitor, 'runOnce'>;
}

/** The scheduled passes' loops; each is undefined when its interval is 0 (turned off). */
export interface ScheduledPasses {
  analysisSchedule: Loop | undefined;
  verificationSchedule: Loop | undefined;
  monitorLoop: Loop | undefined;
}

/**
 * The service's scheduled passes, each run on every replica:
 * - the analysis (README, "Routing, classification and analysis"), every `ANALYSIS_INTERVAL_MS`, the
 *   first one interval after start: one pass over every due context; the per-context lease keeps two
 *   replicas off the same context;
 * - the verification (README, "Deployments and verification"), every `VERIFICATION_INTERVAL_MS`: the
 *   deployments whose after-window closed get their verdict; the `SKIP LOCKED` lease and the
 *   conditional verdict update verify each once;
 * - the open-window monitor (README, "The open-window monitor"), every `MONITOR_INTERVAL_MS`: the open
 *   deployments not looked at for an interval; the `SKIP LOCKED` claim shares them and the
 *   conditional update records each regression once.
 * @param intervals the three intervals in milliseconds; 0 turns a pass off
 */
export function scheduledPasses(
  work: ScheduledWork,
  intervals: { analysisMs: number; verificationMs: number; monitorMs: number },
  context: ScheduleContext,
): ScheduledPasses {
  return {
    analysisSchedule: scheduledPass(
      'analysis-schedule',
      intervals.analysisMs,
      context,
      async () => {
        await work.analysis.runOnce('schedule');
      },
      intervals.analysisMs,
    ),
    verificationSchedule: scheduledPass(
      'verification-schedule',
      intervals.verificationMs,
      context,
      async () => (await work.deployments.verifyDue(PASS_BATCH)) === PASS_BATCH,
    ),
    monitorLoop: scheduledPass(
      'regression-monitor',
      intervals.monitorMs,
      context,
      async () => (await work.monitor.runOnce(PASS_BATCH)).claimed === PASS_BATCH,
    ),
  };
}
