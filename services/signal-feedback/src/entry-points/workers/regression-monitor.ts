import { createLoop, type Logger, type Loop, type LoopMetrics } from '@repo/service-kit';
import type { RegressionMonitor } from '../../domain/regression-monitor';

/** Options of {@link regressionMonitorLoop}. */
export interface RegressionMonitorLoopOptions {
  monitor: Pick<RegressionMonitor, 'runOnce'>;
  /** Milliseconds between passes (`MONITOR_INTERVAL_MS`, README, "Configuration"). */
  intervalMs: number;
  logger: Logger;
  metrics?: LoopMetrics;
}

/**
 * The open-window monitor's loop (README, "The open-window monitor"): each interval, the open
 * deployments not looked at for an interval are evaluated. Every replica runs it; the `SKIP LOCKED`
 * claim shares the deployments and the conditional update records each regression once.
 */
export function regressionMonitorLoop(options: RegressionMonitorLoopOptions): Loop {
  return createLoop({
    name: 'regression-monitor',
    intervalMs: options.intervalMs,
    logger: options.logger,
    metrics: options.metrics,
    // A full batch of 100 means more may be due: the loop runs the next round at once.
    round: async () => (await options.monitor.runOnce(100)).claimed === 100,
  });
}
