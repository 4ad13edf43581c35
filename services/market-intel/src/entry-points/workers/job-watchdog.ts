import type { Logger, LoopMetrics } from '@repo/service-kit';
import type { ApplyResult, JobRepository } from '../../data/jobs';
import type { OutboxRelay } from './outbox-relay';
import { LoopWorker } from './restartable-loop';

/** Options of {@link JobWatchdog}; times in milliseconds. */
export interface JobWatchdogOptions {
  /** A paid job still pending after this long gets its first step published again. */
  republishAfterMs: number;
  /** A paid job still pending after this long is failed (`stalled`). */
  failAfterMs: number;
  /** How often each replica looks. */
  tickMs: number;
  /** Series the loop reports into (`background_loop_*`). */
  loopMetrics?: LoopMetrics;
}

/**
 * Finds paid jobs no runner started (README, "Failed jobs and health (market-intel)"): republishes
 * their first step after `republishAfterMs` and fails them after `failAfterMs`, so a paid job never
 * waits unseen in `pending`. Every replica ticks; the rows are locked, so each job is handled once per
 * tick.
 */
export class JobWatchdog extends LoopWorker {
  /**
   * @param onFailed told of each job it failed (webhooks, metrics)
   */
  constructor(
    private readonly jobs: JobRepository,
    private readonly outbox: OutboxRelay,
    private readonly options: JobWatchdogOptions,
    private readonly logger: Logger,
    private readonly onFailed?: (result: ApplyResult) => void,
  ) {
    super({
      name: 'job-watchdog',
      intervalMs: options.tickMs,
      initialDelayMs: options.tickMs,
      round: async () => {
        await this.tick();
      },
      logger,
      ...(options.loopMetrics ? { metrics: options.loopMetrics } : {}),
    });
  }

  /**
   * One look: fails the jobs pending too long, republishes the first step of those pending a while.
   * @returns how many jobs were republished and failed
   */
  async tick(): Promise<{ republished: number; failed: number }> {
    const { outboxIds, failed } = await this.jobs.reviveUnstarted(
      this.options.republishAfterMs,
      this.options.failAfterMs,
    );
    const applied = failed.filter((f) => f.applied);
    for (const result of applied) this.onFailed?.(result);
    if (outboxIds.length > 0) {
      this.logger.warn(
        { jobs: outboxIds.length },
        'paid jobs not started in time: first step published again',
      );
      await this.outbox.publishNow(outboxIds);
    }
    if (applied.length > 0) this.logger.warn({ jobs: applied.length }, 'paid jobs never started: failed');
    return { republished: outboxIds.length, failed: applied.length };
  }
}
