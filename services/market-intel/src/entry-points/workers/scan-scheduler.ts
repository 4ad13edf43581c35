import type { ScoutSectorSources } from '@repo/compute';
import type { Logger, LoopMetrics } from '@repo/service-kit';
import type { JobRepository } from '../../data/jobs';
import type { ScanRepository } from '../../data/scans';
import type { OutboxRelay } from './outbox-relay';
import { LoopWorker } from './restartable-loop';

/** Options of {@link ScanScheduler}; times in milliseconds. */
export interface ScanSchedulerOptions {
  /** Minimum time between two scheduled scans of one sector (default daily). */
  intervalMs: number;
  /** How often each replica checks which sectors are due. */
  tickMs: number;
  /** Days of stored items a scan analyses. */
  windowDays: number;
  /** A scan without progress for this long is failed, so its sector can be scanned again. */
  staleMs: number;
  /** Series the loop reports into (`background_loop_*`). */
  loopMetrics?: LoopMetrics;
}

/**
 * Starts scout scans on schedule (README, "Scout scans"). Every replica ticks; the claim in
 * {@link ScanRepository.start} lets one scan per sector run at a time whichever replica starts it, and
 * only when the sector's last scan started at least `intervalMs` ago. Scans stuck for `staleMs` (no
 * runner took them) are failed, which releases their sector.
 */
export class ScanScheduler extends LoopWorker {
  /**
   * @param sectors the configured sectors and their sources
   * @param onStarted called with each scan started (metrics)
   */
  constructor(
    private readonly scans: ScanRepository,
    private readonly jobs: JobRepository,
    private readonly outbox: OutboxRelay,
    private readonly sectors: readonly ScoutSectorSources[],
    private readonly options: ScanSchedulerOptions,
    private readonly logger: Logger,
    private readonly onStarted?: (sector: string) => void,
  ) {
    super({
      name: 'scan-scheduler',
      intervalMs: options.tickMs,
      round: async () => {
        await this.tick();
      },
      logger,
      ...(options.loopMetrics ? { metrics: options.loopMetrics } : {}),
    });
  }

  /**
   * Fails stale scans, then starts a scan of every due sector.
   * @returns the ids of the scan jobs this tick started
   */
  async tick(): Promise<string[]> {
    for (const jobId of await this.scans.staleScans(this.options.staleMs)) {
      const minutes = Math.round(this.options.staleMs / 60_000);
      await this.jobs.fail(jobId, {
        code: 'stalled',
        detail: `scan made no progress for ${minutes} minutes`,
      });
      this.logger.warn({ jobId }, 'stale scan failed');
    }
    const started: string[] = [];
    for (const { sector, sources } of this.sectors) {
      const result = await this.scans.start(
        { sector, sources, windowDays: this.options.windowDays },
        { intervalMs: this.options.intervalMs, force: false },
      );
      if (!result.started) continue;
      started.push(result.jobId);
      this.onStarted?.(sector);
      this.logger.info({ sector, jobId: result.jobId }, 'scheduled scan started');
      await this.outbox.publishNow([result.outboxId]);
    }
    return started;
  }
}
