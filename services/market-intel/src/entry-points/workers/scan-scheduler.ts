import type { ScoutSectorSources } from '@repo/compute';
import type { Logger } from '@repo/service-kit';
import type { JobLifecycle } from '../../domain/job-lifecycle';
import type { ScanRepository } from '../../data/scans';
import type { OutboxRelay } from './outbox-relay';
import { tickingWorker, type TickingWorker, type WorkerLoopOptions } from './worker-loop';

/** Options of {@link createScanScheduler}; times in milliseconds. */
export interface ScanSchedulerOptions extends WorkerLoopOptions {
  /** Minimum time between two scheduled scans of one sector (default daily). */
  intervalMs: number;
  /** How often each replica checks which sectors are due. */
  tickMs: number;
  /** Days of stored items a scan analyses. */
  windowDays: number;
  /** A scan without progress for this long is failed, so its sector can be scanned again. */
  staleMs: number;
}

/**
 * The scan scheduler: the `scan-scheduler` loop, whose round is one `tick`: it fails stale scans, then
 * starts a scan of every due sector, and resolves the ids of the scan jobs it started.
 */
export type ScanScheduler = TickingWorker<string[]>;

/**
 * Starts scout scans on schedule (README, "Scout scans"). Every replica ticks every `tickMs`; the
 * claim in {@link ScanRepository.start} lets one scan per sector run at a time whichever replica
 * starts it, and only when the sector's last scan started at least `intervalMs` ago. Scans stuck for
 * `staleMs` (no runner took them) are failed, which releases their sector.
 * @param sectors the configured sectors and their sources
 * @param onStarted called with each scan started (metrics)
 */
export function createScanScheduler(
  scans: ScanRepository,
  lifecycle: Pick<JobLifecycle, 'fail'>,
  outbox: OutboxRelay,
  sectors: readonly ScoutSectorSources[],
  options: ScanSchedulerOptions,
  logger: Logger,
  onStarted?: (sector: string) => void,
): ScanScheduler {
  const tick = async (): Promise<string[]> => {
    for (const jobId of await scans.staleScans(options.staleMs)) {
      const minutes = Math.round(options.staleMs / 60_000);
      await lifecycle.fail(jobId, {
        code: 'stalled',
        detail: `scan made no progress for ${minutes} minutes`,
      });
      logger.warn({ jobId }, 'stale scan failed');
    }
    const started: string[] = [];
    for (const { sector, sources } of sectors) {
      const result = await scans.start(
        { sector, sources, windowDays: options.windowDays },
        { intervalMs: options.intervalMs, force: false },
      );
      if (!result.started) continue;
      started.push(result.jobId);
      onStarted?.(sector);
      logger.info({ sector, jobId: result.jobId }, 'scheduled scan started');
      await outbox.publishNow([result.outboxId]);
    }
    return started;
  };
  return tickingWorker('scan-scheduler', tick, { intervalMs: options.tickMs }, options, logger);
}
