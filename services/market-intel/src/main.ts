import { createServer } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { closeServer, createLogger, listenMetrics, onShutdown } from '@repo/service-kit';
import { loadConfig } from './config';
import { createMarketIntelService } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ name: 'market-intel', level: config.LOG_LEVEL, buffered: true });
  const service = await createMarketIntelService(config, logger);
  await service.db.$queryRawUnsafe('SELECT 1');
  await service.start();

  const server = createServer(service.app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const metricsServer = await listenMetrics(service.metrics, config.METRICS_PORT, config.HOST);
  logger.info(
    {
      port,
      metricsPort: metricsServer.port,
      payTo: config.MERCHANT_TOKEN_ACCOUNT,
      mint: config.USDC_MINT,
      webhooks: Boolean(service.webhooks),
    },
    `market-intel listening on http://${config.HOST}:${port}`,
  );

  onShutdown(
    logger,
    [
      { name: 'mark not ready', run: () => service.markShuttingDown() },
      // Load balancers see /readyz fail and stop sending new connections before the port closes.
      { name: 'wait for load balancers', run: () => delay(config.SHUTDOWN_DRAIN_DELAY_MS) },
      { name: 'drain http', run: () => closeServer(server) },
      { name: 'close the metrics port', run: () => closeServer(metricsServer.server) },
      {
        name: 'stop background work, drain consumers, close RabbitMQ, RPC pools and database',
        run: () => service.stop(),
      },
      { name: 'flush logs', run: () => logger.flush() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
