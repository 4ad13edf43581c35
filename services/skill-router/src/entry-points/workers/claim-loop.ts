import { createLoop, type Logger, type Loop, type LoopMetrics } from '@repo/service-kit';

/** How often a claiming worker runs and how much it claims (from the service's config). */
export interface ClaimLoopSettings {
  /** Milliseconds between the end of a round and the start of the next. */
  intervalMs: number;
  /** Jobs claimed per round; a full batch starts the next round at once. */
  batchSize: number;
  /** Series of the shared loop metrics (`background_loop_*{loop="<name>"}`). */
  loopMetrics?: LoopMetrics;
}

/** What a claiming worker does in each round (see {@link createClaimLoop}). */
export interface ClaimedWork<Job extends { skillId: string }> {
  /** Claims at most `batchSize` due jobs, each for this replica alone. */
  claim: (batchSize: number) => Promise<Job[]>;
  /** Works on one claimed job; the round's jobs run concurrently. */
  work: (job: Job) => Promise<void>;
  /** The log message when `work` throws (logged at error with the skill id; the claim then expires). */
  failure: string;
  /**
   * Started once a round has claimed jobs, with the jobs still in progress (each is removed when its
   * work ends); returns what stops it when the round ends.
   */
  whileWorking?: (inProgress: ReadonlySet<Job>) => () => void;
}

/**
 * A background loop that claims a batch of skills' jobs per round and works on them concurrently
 * (docs/architecture.md, "Runtime"): one job's failure is logged and leaves the others
 * alone, and the next round starts at once while batches come back full. Nothing runs until the loop
 * is started or kicked.
 * @param name the loop's name in logs and metrics
 */
export function createClaimLoop<Job extends { skillId: string }>(
  name: string,
  logger: Logger,
  settings: ClaimLoopSettings,
  claimed: ClaimedWork<Job>,
): Loop {
  return createLoop({
    name,
    intervalMs: settings.intervalMs,
    logger,
    metrics: settings.loopMetrics,
    round: async () => {
      const jobs = await claimed.claim(settings.batchSize);
      if (jobs.length === 0) return false;
      const inProgress = new Set(jobs);
      const stop = claimed.whileWorking?.(inProgress);
      try {
        await Promise.all(
          jobs.map(async (job) => {
            try {
              await claimed.work(job);
            } catch (err) {
              logger.error({ err, skillId: job.skillId }, claimed.failure);
            } finally {
              inProgress.delete(job);
            }
          }),
        );
      } finally {
        stop?.();
      }
      return jobs.length === settings.batchSize;
    },
  });
}
