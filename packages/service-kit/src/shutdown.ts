import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

/** One step of a graceful shutdown, run in order. */
export interface ShutdownStep {
  name: string;
  run: () => Promise<unknown> | unknown;
}

/**
 * Closes an HTTP server: stops accepting, lets in-flight requests finish, and closes keep-alive
 * connections as soon as they are idle (responses finished while closing carry `connection: close`,
 * and idle connections are swept every 100 ms, so a busy keep-alive client cannot hold the close
 * open until its keep-alive timeout).
 * @param server the server to close
 */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    const lastResponse = (_req: IncomingMessage, res: ServerResponse): void => {
      if (!res.headersSent) res.setHeader('connection', 'close');
    };
    server.prependListener('request', lastResponse);
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    sweep.unref();
    server.close((err) => {
      clearInterval(sweep);
      server.off('request', lastResponse);
      if (err) reject(err);
      else resolve();
    });
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
        const stepStarted = Date.now();
        try {
          await step.run();
          logger.info({ step: step.name, ms: Date.now() - stepStarted }, 'shutdown step done');
        } catch (err) {
          logger.error({ err, step: step.name, ms: Date.now() - stepStarted }, 'shutdown step failed');
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
