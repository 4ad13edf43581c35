import type { Logger } from '@repo/service-kit';
import type { ApplyResult } from '../../data/jobs';
import type { JobLifecycle } from '../../domain/job-lifecycle';
import type { OutboxRelay } from './outbox-relay';
import { tickingWorker, type TickingWorker, type WorkerLoopOptions } from './worker-loop';

/** Options of {@link createJobWatchdog}; times in milliseconds. */
export interface JobWatchdogOptions extends WorkerLoopOptions {
  /** A paid job still pending after this long gets its first step published again. */
  republishAfterMs: number;
  /** A paid job still pending after this long is failed (`stalled`). */
  failAfterMs: number;
  /** How often each replica looks. */
  tickMs: number;
}

/**
 * The job watchdog: the `job-watchdog` loop, whose round is one `tick`, one look: it fails the jobs
 * pending too long and republishes the first step of those pending a while, and resolves how many
 * jobs it republished and failed.
 */
export type JobWatchdog = TickingWorker<{ republished: number; failed: number }>;

/**
 * Finds paid jobs no runner started (README, "Failed jobs and health (market-intel)"): republishes
 * their first step after `republishAfterMs` and fails them after `failAfterMs`, so a paid job never
 * waits unseen in `pending`. Every replica ticks (the first tick one `tickMs` after start); the rows
 * are locked, so each job is handled once per tick.
 * @param onFailed told of each job it failed (webhooks, metrics)
 */
export function createJobWatchdog(
  lifecycle: Pick<JobLifecycle, 'reviveUnstarted'>,
  outbox: OutboxRelay,
  options: JobWatchdogOptions,
  logger: Logger,
  onFailed?: (result: ApplyResult) => void,
): JobWatchdog {
  const tick = async (): Promise<{ republished: number; failed: number }> => {
    const { outboxIds, failed } = await lifecycle.reviveUnstarted(
      options.republishAfterMs,
      options.failAfterMs,
    );
    const applied = failed.filter((f) => f.applied);
    for (const result of applied) onFailed?.(result);
    if (outboxIds.length > 0) {
      logger.warn({ jobs: outboxIds.length }, 'paid jobs not started in time: first step published again');
      await outbox.publishNow(outboxIds);
    }
    if (applied.length > 0) logger.warn({ jobs: applied.length }, 'paid jobs never started: failed');
    return { republished: outboxIds.length, failed: applied.length };
  };
  return tickingWorker(
    'job-watchdog',
    tick,
    { intervalMs: options.tickMs, initialDelayMs: options.tickMs },
    options,
    logger,
  );
}
