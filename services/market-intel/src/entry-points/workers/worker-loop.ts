import { createLoop, type Logger, type Loop, type LoopMetrics, type RoundResult } from '@repo/service-kit';

/** What the options of every market-intel worker carry for its loop. */
export interface WorkerLoopOptions {
  /** Series the loop reports into (`background_loop_*`). */
  loopMetrics?: LoopMetrics;
}

/** When a worker's rounds run, in milliseconds (see `LoopOptions` of `createLoop`). */
export interface WorkerSchedule {
  /** Between the end of a round and the start of the next. */
  intervalMs: number;
  /** Before the first round once started (default 0). */
  initialDelayMs?: number;
}

/**
 * The loop of a market-intel worker (docs/architecture.md, "Runtime"): `createLoop` under the worker's
 * name, on its schedule, reporting into the worker's `loopMetrics` when its options carry them.
 * @param round one round of the worker; resolves `true` when more work is likely waiting
 */
export function workerLoop(
  name: string,
  round: () => Promise<RoundResult>,
  schedule: WorkerSchedule,
  options: WorkerLoopOptions,
  logger: Logger,
): Loop {
  return createLoop({ name, ...schedule, round, logger, metrics: options.loopMetrics });
}

/** A worker whose loop's round is one {@link TickingWorker.tick}. */
export interface TickingWorker<T> extends Loop {
  /** One round's work, run at once outside the loop (tests); resolves its outcome. */
  tick(): Promise<T>;
}

/**
 * A worker that ticks (docs/architecture.md, "Runtime"): its loop runs `tick` each round, waiting the
 * whole interval after each (the outcome is for callers of `tick`, not a sign of more work), and the
 * worker keeps `tick` callable beside the loop.
 */
export function tickingWorker<T>(
  name: string,
  tick: () => Promise<T>,
  schedule: WorkerSchedule,
  options: WorkerLoopOptions,
  logger: Logger,
): TickingWorker<T> {
  const loop = workerLoop(
    name,
    async () => {
      await tick();
    },
    schedule,
    options,
    logger,
  );
  return { ...loop, tick };
}
