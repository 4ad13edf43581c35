import { createServer } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { closeServer, createLogger, listenMetrics, onShutdown } from '@repo/service-kit';
import { createApp } from './app';
import { llmSettings, loadConfig } from './config';
import { AccountRepository } from './data/accounts';
import { createSignalFeedbackMetrics } from './metrics';
import { buildWiring } from './wiring';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ name: 'signal-feedback', level: config.LOG_LEVEL, buffered: true });
  let shuttingDown = false;
  const metrics = createSignalFeedbackMetrics();
  const wiring = buildWiring(config, logger, { metrics, events: metrics.events });
  await wiring.db.$queryRawUnsafe('SELECT 1');
  const app = createApp({
    ...wiring.deps,
    isReady: async () =>
      !shuttingDown &&
      (await wiring.db.$queryRawUnsafe('SELECT 1').then(
        () => true,
        () => false,
      )),
  });

  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const metricsServer = await listenMetrics(metrics, config.METRICS_PORT, config.HOST);
  wiring.analysis.start(config.ANALYSIS_INTERVAL_MS);
  // Expired sessions and rate-limit counters are removed hourly (any replica may do it; deletes are idempotent).
  const accounts = new AccountRepository(wiring.db);
  const sweeper = setInterval(() => {
    accounts
      .deleteExpiredSessions(new Date())
      .catch((err: unknown) => logger.warn({ err }, 'session sweep failed'));
    wiring.deps.limiter.sweep().catch((err: unknown) => logger.warn({ err }, 'rate-limit sweep failed'));
  }, 3_600_000);
  sweeper.unref();
  logger.info(
    {
      port,
      metricsPort: metricsServer.port,
      analysisIntervalMs: config.ANALYSIS_INTERVAL_MS,
      llm: llmSettings(config) ? config.LLM_MODEL : 'none (proposals from evidence)',
      maxBatch: config.MAX_BATCH_SIZE,
    },
    `signal-feedback listening on http://${config.HOST}:${port}`,
  );

  onShutdown(
    logger,
    [
      { name: 'mark not ready', run: () => (shuttingDown = true) },
      // Load balancers see /readyz fail and stop sending new connections before the port closes.
      { name: 'wait for load balancers', run: () => delay(config.SHUTDOWN_DRAIN_DELAY_MS) },
      {
        name: 'stop analysis schedule',
        run: () => {
          clearInterval(sweeper);
          return wiring.analysis.stop();
        },
      },
      { name: 'drain http', run: () => closeServer(server) },
      { name: 'close the metrics port', run: () => closeServer(metricsServer.server) },
      { name: 'close database pools', run: () => wiring.close() },
      { name: 'flush logs', run: () => logger.flush() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
