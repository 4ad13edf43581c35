import type { Server } from 'node:http';
import type { Logger } from 'pino';

/** One step of a graceful shutdown, run in order. */
export interface ShutdownStep {
  name: string;
  run: () => Promise<unknown> | unknown;
}

/**
 * Closes an HTTP server: stops accepting, lets in-flight requests finish, closes idle keep-alive
 * connections.
 * @param server the server to close
 */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeIdleConnections();
  });
}

/**
 * Installs SIGTERM/SIGINT handlers that run `steps` in order once (mark not ready, drain HTTP, close
 * clients...) and exit 0, or exit 1 after `timeoutMs` milliseconds (an `unref`ed timer) if a step hangs.
 * @returns a function that runs the same shutdown programmatically
 */
export function onShutdown(logger: Logger, steps: ShutdownStep[], timeoutMs: number): () => Promise<void> {
  let started: Promise<void> | undefined;
  const shutdown = (signal: string): Promise<void> => {
    if (started) return started;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out, forcing exit');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    started = (async () => {
      for (const step of steps) {
        try {
          await step.run();
        } catch (err) {
          logger.error({ err, step: step.name }, 'shutdown step failed');
        }
      }
      clearTimeout(timer);
      logger.info('shutdown complete');
    })();
    return started;
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM').then(() => process.exit(0)));
  process.once('SIGINT', () => void shutdown('SIGINT').then(() => process.exit(0)));
  return () => shutdown('programmatic');
}
