import { createLoop, type Logger, type Loop, type LoopMetrics } from '@repo/service-kit';
import type { DeploymentService } from '../../domain/deployments';

/** Options of {@link verificationScheduleLoop}. */
export interface VerificationScheduleOptions {
  deployments: Pick<DeploymentService, 'verifyDue'>;
  /** Milliseconds between passes (`VERIFICATION_INTERVAL_MS`, README, "Configuration"). */
  intervalMs: number;
  logger: Logger;
  metrics?: LoopMetrics;
}

/**
 * The scheduled verification (README, "Deployments and verification"): each interval, the deployments
 * whose after-window closed get their verdict. Every replica runs it; the `SKIP LOCKED` lease and the
 * conditional verdict update verify each deployment once. A failed pass is logged and retried later.
 */
export function verificationScheduleLoop(options: VerificationScheduleOptions): Loop {
  return createLoop({
    name: 'verification-schedule',
    intervalMs: options.intervalMs,
    logger: options.logger,
    metrics: options.metrics,
    // A full batch of 100 means more may be due: the loop runs the next round at once.
    round: async () => (await options.deployments.verifyDue(100)) === 100,
  });
}
