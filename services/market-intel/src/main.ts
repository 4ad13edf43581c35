import { createServer } from 'node:http';
import { closeServer, createLogger, onShutdown } from '@repo/service-kit';
import { createApp } from './app';
import { loadConfig } from './config';
import { createDb } from './data/prisma';
import { ReportRepository } from './data/reports';
import { unconfiguredHealth } from './domain/health';
import { createMarketIntelMetrics } from './metrics';
import { createPaymentGateway, paymentGate } from './payments';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ name: 'market-intel', level: config.LOG_LEVEL, buffered: true });
  const db = createDb(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  await db.$queryRawUnsafe('SELECT 1');

  let shuttingDown = false;
  const metrics = createMarketIntelMetrics();
  const payments = createPaymentGateway(config, db);
  const gateway = { ...payments, onPaymentEvent: metrics.onPaymentEvent };
  const app = createApp({
    logger,
    reports: new ReportRepository(db),
    pay: paymentGate(gateway, config.PAYMENT_MAX_TIMEOUT_SECONDS),
    health: unconfiguredHealth(),
    isReady: async () => !shuttingDown && (await db.$queryRawUnsafe('SELECT 1').then(() => true, () => false)),
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT,
    metrics,
    corsOrigins: config.CORS_ORIGINS?.split(',').map((o) => o.trim()).filter(Boolean),
  });

  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  logger.info(
    { port, networks: Object.keys(gateway.verifiers), payTo: config.MERCHANT_TOKEN_ACCOUNT, mint: config.USDC_MINT },
    `market-intel listening on http://${config.HOST}:${port}`,
  );

  onShutdown(
    logger,
    [
      { name: 'mark not ready', run: () => (shuttingDown = true) },
      { name: 'drain http', run: () => closeServer(server) },
      { name: 'close RPC connections', run: () => payments.close() },
      { name: 'disconnect database', run: () => db.$disconnect() },
      { name: 'flush logs', run: () => logger.flush() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
