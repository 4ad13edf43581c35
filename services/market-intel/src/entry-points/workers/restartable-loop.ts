import { createLoop, type Loop, type LoopOptions } from '@repo/service-kit';

/**
 * A {@link Loop} that can be started again after {@link Loop.stop} (each start runs a fresh
 * `createLoop`), for the workers whose tests pause and resume them. Unlike a bare `createLoop`, a
 * kick before the first start or after a stop runs nothing: "work arrived" signals only wake a
 * running worker.
 * @param options the `createLoop` options (name, interval in milliseconds, round, logger, metrics)
 */
export function restartableLoop(options: LoopOptions): Loop {
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
