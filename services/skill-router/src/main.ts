import { createServer } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { closeServer, createLogger, listenMetrics, onShutdown } from '@repo/service-kit';
import { loadConfig } from './config';
import { createSkillRouterMetrics } from './metrics';
import { createRuntime } from './runtime';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ name: 'skill-router', level: config.LOG_LEVEL, buffered: true });
  const metrics = createSkillRouterMetrics();
  const runtime = createRuntime(config, logger, metrics);
  await runtime.db.prisma.$queryRawUnsafe('SELECT 1');

  const server = createServer(runtime.app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const metricsServer = await listenMetrics(metrics, config.METRICS_PORT, config.HOST);
  if (config.WORKERS_ENABLED) runtime.startWorkers();
  logger.info(
    {
      port,
      metricsPort: metricsServer.port,
      workers: config.WORKERS_ENABLED,
      ssrfAllowlist: config.SSRF_ALLOWLIST || null,
    },
    `skill-router listening on http://${config.HOST}:${port}`,
  );

  onShutdown(
    logger,
    [
      { name: 'mark not ready', run: () => runtime.markShuttingDown() },
      // Load balancers see /readyz fail and stop sending new connections before the port closes.
      { name: 'wait for load balancers', run: () => delay(config.SHUTDOWN_DRAIN_DELAY_MS) },
      { name: 'drain http', run: () => closeServer(server) },
      { name: 'close the metrics port', run: () => closeServer(metricsServer.server) },
      { name: 'stop workers, close connections and database', run: () => runtime.close() },
      { name: 'flush logs', run: () => logger.flush() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
