import type { QueueLogger } from '@repo/queue';
import type { ApplyResult, JobRepository } from '../data/jobs';
import type { OutboxRelay } from './outbox';

/** Options of {@link JobWatchdog}; times in milliseconds. */
export interface JobWatchdogOptions {
  /** A paid job still pending after this long gets its first step published again. */
  republishAfterMs: number;
  /** A paid job still pending after this long is failed (`stalled`). */
  failAfterMs: number;
  /** How often each replica looks. */
  tickMs: number;
}

/**
 * Finds paid jobs no runner started (README, "Failed jobs and health"): republishes their first step
 * after `republishAfterMs` and fails them after `failAfterMs`, so a paid job never waits unseen in
 * `pending`. Every replica ticks; the rows are locked, so each job is handled once per tick.
 */
export class JobWatchdog {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<unknown> | null = null;
  private stopped = false;

  /**
   * @param onFailed told of each job it failed (webhooks, metrics)
   */
  constructor(
    private readonly jobs: JobRepository,
    private readonly outbox: OutboxRelay,
    private readonly options: JobWatchdogOptions,
    private readonly logger: QueueLogger,
    private readonly onFailed?: (result: ApplyResult) => void,
  ) {}

  /** Starts ticking (the first tick after `tickMs`). */
  start(): void {
    this.stopped = false;
    const tick = (): void => {
      this.ticking = this.tick()
        .catch((err: unknown) => this.logger.warn({ err: String(err) }, 'job watchdog tick failed'))
        .finally(() => {
          this.ticking = null;
          if (!this.stopped) this.timer = setTimeout(tick, this.options.tickMs);
        });
    };
    this.timer = setTimeout(tick, this.options.tickMs);
  }

  /** Stops ticking and waits for a tick in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
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
