import type { Logger } from '@repo/service-kit';

/** A running background loop. */
export interface Loop {
  /** Stops scheduling new rounds and waits for the round in progress. */
  stop(): Promise<void>;
  /** Runs a round now (if none is running) and resolves when it is done; for tests and demos. */
  kick(): Promise<void>;
}

/**
 * Runs `round` every `intervalMs` milliseconds; when a round reports a full batch (`true`) the next
 * one starts at once, so a backlog drains without waiting. Errors are logged, never thrown.
 * @param round one unit of work; resolves `true` when more work is likely waiting
 */
export function startLoop(
  name: string,
  intervalMs: number,
  round: () => Promise<boolean>,
  logger: Logger,
): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;

  const runOnce = (): Promise<void> => {
    if (current) return current;
    current = (async () => {
      let more = false;
      try {
        more = await round();
      } catch (err) {
        logger.error({ err, worker: name }, 'worker round failed');
      } finally {
        current = undefined;
      }
      schedule(more ? 0 : intervalMs);
    })();
    return current;
  };

  function schedule(delay: number): void {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void runOnce(), delay);
  }

  schedule(0);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
    },
    kick: () => runOnce(),
  };
}
