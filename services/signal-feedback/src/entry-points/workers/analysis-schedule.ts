import { createLoop, type Logger, type Loop, type LoopMetrics } from '@repo/service-kit';
import type { AnalysisService } from '../../domain/analysis';

/** Options of {@link analysisScheduleLoop}. */
export interface AnalysisScheduleOptions {
  analysis: Pick<AnalysisService, 'runOnce'>;
  /** Milliseconds between passes (`ANALYSIS_INTERVAL_MS`, README, "Configuration"); the first pass waits one interval too. */
  intervalMs: number;
  logger: Logger;
  metrics?: LoopMetrics;
}

/**
 * The scheduled analysis (README, "Routing, classification and analysis"): one pass over every due
 * context per interval. Every replica runs it; the per-context lease taken by the analysis keeps two
 * replicas off the same context. A failed pass is logged and retried after a longer wait.
 */
export function analysisScheduleLoop(options: AnalysisScheduleOptions): Loop {
  return createLoop({
    name: 'analysis-schedule',
    intervalMs: options.intervalMs,
    initialDelayMs: options.intervalMs,
    logger: options.logger,
    metrics: options.metrics,
    round: async () => {
      await options.analysis.runOnce('schedule');
    },
  });
}
