import { createLoop, type Loop, type LoopOptions } from '@repo/service-kit';

/**
 * A {@link Loop} that can be started again after {@link Loop.stop} (each start runs a fresh
 * `createLoop`), for the workers whose tests pause and resume them. Unlike a bare `createLoop`, a
 * kick before the first start or after a stop runs nothing: "work arrived" signals only wake a
 * running worker.
 * @param options the `createLoop` options (name, interval in milliseconds, round, logger, metrics)
 */
function restartableLoop(options: LoopOptions): Loop {
  let loop: Loop | null = null;
  let running = false;
  return {
    name: options.name,
    start() {
      if (running) return;
      running = true;
      loop = createLoop(options);
      loop.start();
    },
    async stop() {
      running = false;
      await loop?.stop();
    },
    kick: () => (running && loop ? loop.kick() : Promise.resolve()),
  };
}

/**
 * A background worker that is its own {@link Loop}: a subclass names itself and says what one round
 * does; `start`, `stop` (it can be started again) and `kick` come from {@link restartableLoop}.
 */
export abstract class LoopWorker implements Loop {
  private readonly loop: Loop;

  /** @param options the loop's name, interval, first delay, logger and metrics; `round` is one unit of work */
  protected constructor(options: LoopOptions) {
    this.loop = restartableLoop(options);
  }

  get name(): string {
    return this.loop.name;
  }

  /** Starts the rounds (no-op while running). */
  start(): void {
    this.loop.start();
  }

  /** Stops the rounds and waits for the one in progress; the worker can be started again. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Runs a round that starts after this call (see {@link Loop.kick}) while started. */
  kick(): Promise<void> {
    return this.loop.kick();
  }
}
