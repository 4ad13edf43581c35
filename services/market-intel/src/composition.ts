import { networkPaymentsOf } from './entry-points/mcp/price-meta';
import { hostname } from 'node:os';
import type { RequestListener } from 'node:http';
import type { Application } from 'express';
import { Broker } from '@repo/queue';
import { declareComputeTopology } from '@repo/compute';
import { createSchemaCheck, packageMigrationsDir } from '@repo/db-migrate';
import {
  createLoop,
  createReadiness,
  parseInput,
  sweepRateLimits,
  type ComposedService,
  type Logger,
  type Loop,
} from '@repo/service-kit';
import { parseAllowlist } from '@repo/ssrf-guard';
import { createHotPath, type HotPath, type HotRoute, type PaymentEventListener } from '@repo/x402-express';
import { PrismaRefundLedger } from '@repo/x402-ledger';
import type { MarketIntelConfig } from './config';
import { JobRepository } from './data/jobs';
import { openDatabase, type Db } from './data/prisma';
import { listenForReportChanges } from './data/report-changes';
import { ReportRepository } from './data/reports';
import { ScanRepository } from './data/scans';
import { RunnerHealthMonitor } from './domain/health';
import { createJobLifecycle, type JobLifecycle } from './domain/job-lifecycle';
import { createDevnetComputeCaps } from './domain/paid-jobs';
import { DATA_PRICES } from './domain/prices';
import { jobRefunds } from './domain/refunds';
import { loadSourcesFile } from './domain/scout-sources';
import { heartbeatTopology, startComputeConsumers } from './entry-points/consumers/compute-events';
import { createApp } from './entry-points/http/app';
import { SCOUT_LISTS } from './entry-points/http/scout-lists';
import type { HttpHandler } from './entry-points/mcp/tools';
import { createPaymentGateway, createReceiptIssuer, createRefundSenders, paymentGate } from './adapters/x402';
import { FEE_PAYER_CHECK_INTERVAL_MS, createFeePayerMonitor } from './entry-points/workers/fee-payer-monitor';
import { createJobWatchdog, type JobWatchdog } from './entry-points/workers/job-watchdog';
import { createOutboxRelay, type OutboxRelay } from './entry-points/workers/outbox-relay';
import { createRefundWorker, type RefundWorker } from './entry-points/workers/refund-worker';
import { createScanScheduler, type ScanScheduler } from './entry-points/workers/scan-scheduler';
import { createWebhookDispatcher, type WebhookDispatcher } from './entry-points/workers/webhook-dispatcher';
import { createMarketIntelMetrics, type MarketIntelMetrics } from './metrics';

/** How often the stored reports' fingerprint is compared with the cached one, in milliseconds. */
const REPORT_WATERMARK_INTERVAL_MS = 30_000;

/** How often old payment sightings are pruned, in milliseconds. */
const SIGHTING_PRUNE_INTERVAL_MS = 3_600_000;

/**
 * The composed service: what `runService` runs (the app, readiness, metrics, loops, consumers, close)
 * plus the handles the tests reach into.
 */
export interface MarketIntelService extends ComposedService {
  /** The public listener: the x402 hot path in front of {@link MarketIntelService.app} (the app alone with `X402_HOT_PATH=false`). */
  http: RequestListener;
  /** The express app (every route; what the hot path hands a request it does not answer from memory). */
  app: Application;
  /** The 402 challenges and paid answers answered from memory (with `X402_HOT_PATH=false`: built, never used, empty). */
  hotPath: HotPath;
  metrics: MarketIntelMetrics;
  loops: Loop[];
  db: Db;
  broker: Broker;
  jobs: JobRepository;
  /** What runner events, dead letters and the watchdog do to jobs. */
  lifecycle: JobLifecycle;
  reports: ReportRepository;
  scans: ScanRepository;
  /** Starts scheduled scans; null without a sources file or with a 0 interval. */
  scheduler: ScanScheduler | null;
  outbox: OutboxRelay;
  /** Republishes, then fails, paid jobs no runner started. */
  watchdog: JobWatchdog;
  health: RunnerHealthMonitor;
  webhooks: WebhookDispatcher | null;
  /** Sends and confirms refunds of failed paid jobs; null when no refund wallet is configured. */
  refunds: RefundWorker | null;
  /** The refunds table (read by GET /api/v1/jobs/{jobId}). */
  refundLedger: PrismaRefundLedger;
}

/**
 * The composition root of market-intel: configuration -> clients (the database, the x402 gateway,
 * RabbitMQ with the compute topology plus this replica's heartbeat queue) -> repositories -> use
 * cases (runner health) -> entry points (the express app, the compute consumers, the loops: outbox
 * sweep, webhook dispatcher when `WEBHOOK_SECRET` is set, scan scheduler, job watchdog, refund worker
 * when a refund wallet is configured, fee payer monitor, payment sighting pruning). Used by `main.ts`
 * and by the tests alike; nothing runs until `start()` (consumers) and the loops are started.
 * @param extra `onPaymentEvent`: an extra listener (tests count verifications with it)
 * @throws Error naming the problem when the refund or fee payer wallet, the sources file or the
 *   database (`SELECT 1`) is unusable, before the service listens; DbMigrateError
 *   `invalid-migrations-dir` when the package's `prisma/migrations` is missing or empty
 */
export async function compose(
  config: MarketIntelConfig,
  logger: Logger,
  extra: { onPaymentEvent?: PaymentEventListener } = {},
): Promise<MarketIntelService> {
  // Read first: a bad refund wallet stops the boot before any connection is opened.
  const refundSenders = createRefundSenders(config);
  const database = openDatabase(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const db = database.prisma;
  const instanceId = config.INSTANCE_ID ?? `${hostname()}-${process.pid}`;
  const metrics = createMarketIntelMetrics();
  const loopMetrics = metrics.loops;
  const payments = createPaymentGateway(
    config,
    { main: database.pool, rateLimit: database.rateLimitPool },
    (call) => metrics.onRpcCall(call),
  );
  const receipts = createReceiptIssuer(config, () =>
    logger.warn(
      'x402 receipts are signed with a key generated for this process: set X402_RECEIPT_SIGNING_KEY so that receipts verify after a restart',
    ),
  );
  const gateway = {
    ...payments,
    receipts,
    onPaymentEvent: extra.onPaymentEvent
      ? (event: Parameters<PaymentEventListener>[0]) => {
          metrics.onPaymentEvent(event);
          extra.onPaymentEvent?.(event);
        }
      : metrics.onPaymentEvent,
  };
  const feePayers = createFeePayerMonitor(payments.settlers ?? {}, {
    minLamports: BigInt(config.X402_FEE_PAYER_MIN_LAMPORTS),
    logger,
    onBalance: (network, lamports) => metrics.onFeePayerBalance(network, lamports),
  });
  const reports = new ReportRepository(db);
  const refundLedger = new PrismaRefundLedger(db);
  const refundWallet = refundSenders.solana?.wallet;
  const jobs = new JobRepository(db, { refundOf: jobRefunds(refundLedger) });
  const scans = new ScanRepository(db, jobs, reports, metrics.scans);
  // Read at boot so that a bad sources file stops the service with every problem named.
  const sectors = config.SCOUT_SOURCES_FILE ? loadSourcesFile(config.SCOUT_SOURCES_FILE).sectors : [];
  const heartbeats = heartbeatTopology(instanceId);
  const broker = await Broker.connect({
    url: config.AMQP_URL,
    connectionName: `market-intel ${instanceId}`,
    logger,
    topology: async (channel) => {
      await declareComputeTopology(channel);
      await heartbeats(channel);
    },
  });
  const health = new RunnerHealthMonitor({
    staleAfterMs: config.RUNNER_STALE_AFTER_MS,
    isBrokerConnected: () => broker.isConnected(),
  });
  const outbox = createOutboxRelay(db, broker, logger, {
    sweepIntervalMs: config.OUTBOX_SWEEP_INTERVAL_MS,
    leaseMs: 30_000,
    batchSize: 100,
    loopMetrics,
  });
  const policy = { allowlist: parseAllowlist(config.SSRF_ALLOWLIST) };
  const webhooks = config.WEBHOOK_SECRET
    ? createWebhookDispatcher(
        db,
        {
          secret: config.WEBHOOK_SECRET,
          policy,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
          pollIntervalMs: Math.min(1000, config.WEBHOOK_RETRY_BASE_MS),
          loopMetrics,
        },
        logger,
      )
    : null;
  const refunds =
    refundWallet !== undefined
      ? createRefundWorker(
          refundLedger,
          refundSenders,
          {
            intervalMs: config.X402_REFUND_INTERVAL_MS,
            confirmTimeoutMs: config.X402_REFUND_CONFIRM_TIMEOUT_MS,
            loopMetrics,
          },
          logger,
          (network, outcome) => metrics.onRefund(network, outcome),
        )
      : null;
  const lifecycle = createJobLifecycle({
    jobs,
    hooks: { scout: scans.hooks() },
    ...(refundWallet !== undefined ? { refunds: refundLedger } : {}),
    publishNow: (ids) => outbox.publishNow(ids),
    metrics,
    webhookLoop: webhooks,
    refundLoop: refunds,
    onJobCompleted: () => reports.invalidate(),
  });
  const scheduler =
    sectors.length > 0 && config.SCOUT_SCAN_INTERVAL_MINUTES > 0
      ? createScanScheduler(
          scans,
          lifecycle,
          outbox,
          sectors,
          {
            intervalMs: config.SCOUT_SCAN_INTERVAL_MINUTES * 60_000,
            tickMs: config.SCOUT_SCHEDULER_TICK_MS,
            windowDays: config.SCOUT_WINDOW_DAYS,
            staleMs: config.SCOUT_SCAN_STALE_MINUTES * 60_000,
            loopMetrics,
          },
          logger,
        )
      : null;
  const watchdog = createJobWatchdog(
    lifecycle,
    outbox,
    {
      republishAfterMs: config.JOB_START_REPUBLISH_MINUTES * 60_000,
      failAfterMs: config.JOB_START_FAIL_MINUTES * 60_000,
      tickMs: config.JOB_WATCHDOG_TICK_MS,
      loopMetrics,
    },
    logger,
    (result) => void lifecycle.settle('watchdog', result),
  );
  const loops: Loop[] = [outbox, watchdog];
  if (webhooks) loops.push(webhooks);
  if (scheduler) loops.push(scheduler);
  if (refunds) loops.push(refunds);
  if (Object.keys(payments.settlers ?? {}).length > 0) {
    loops.push(
      createLoop({
        name: 'fee-payer-monitor',
        intervalMs: FEE_PAYER_CHECK_INTERVAL_MS,
        round: () => feePayers.check(),
        logger,
        metrics: loopMetrics,
      }),
    );
  }
  // Reports deleted by hand are not announced: the cache is dropped when the reports' fingerprint moves.
  let reportMark: string | undefined;
  if (config.REPORT_CACHE)
    loops.push(
      createLoop({
        name: 'report-watermark',
        intervalMs: REPORT_WATERMARK_INTERVAL_MS,
        round: async () => {
          const mark = await reports.watermark();
          if (reportMark !== undefined && mark !== reportMark) reports.invalidate();
          reportMark = mark;
        },
        logger,
        metrics: loopMetrics,
      }),
    );
  // Sightings of payments never completed are kept X402_SIGHTING_RETENTION_HOURS, then pruned, with
  // the verification attempt counters ended an hour ago and the payment identifiers of payments that
  // never verified. Rate limit counters expired for an hour go too: the limiter deletes them only now
  // and then during its own calls.
  loops.push(
    createLoop({
      name: 'payment-sighting-pruner',
      intervalMs: SIGHTING_PRUNE_INTERVAL_MS,
      initialDelayMs: SIGHTING_PRUNE_INTERVAL_MS,
      round: async () => {
        await payments.ledger.pruneSightings(config.X402_SIGHTING_RETENTION_HOURS * 3_600_000);
        await payments.identifiers?.prune(config.X402_SIGHTING_RETENTION_HOURS * 3_600_000);
        await payments.signInWithX?.records.pruneNonces(new Date());
        await sweepRateLimits(database.pool, Date.now() - 3_600_000);
      },
      logger,
      metrics: loopMetrics,
    }),
  );
  metrics.observeCompute({
    countByStatus: () => jobs.countByStatus(),
    outboxPending: () => outbox.pending(),
    broker,
  });
  if (refunds) metrics.observeRefunds(() => refundLedger.countPending());

  // Fails fast: a database that does not answer stops the boot before the port opens.
  await db.$queryRawUnsafe('SELECT 1');
  // Not ready until the database has every migration this build ships (README, "Running").
  const schema = await createSchemaCheck({
    pool: database.pool,
    migrationsDir: packageMigrationsDir(__dirname),
    logger,
  });
  const readiness = createReadiness({
    database: database.ping,
    broker: () => broker.isConnected(),
    schema: schema.isUpToDate,
  });
  // MCP tool calls run through the same handler as HTTP requests, hot path included; it exists once
  // the app does.
  const served: { handler?: HttpHandler } = {};
  const app = createApp({
    httpHandler: () => served.handler ?? app,
    mcpPayments: networkPaymentsOf(payments),
    receiptKeys: { issuer: receipts, publicBaseUrl: config.PUBLIC_BASE_URL },
    logger,
    reports,
    pay: paymentGate(gateway, {
      maxTimeoutSeconds: config.PAYMENT_MAX_TIMEOUT_SECONDS,
      deferVerifiedMark: config.X402_DEFER_VERIFIED_MARK,
    }),
    health: health.probe,
    compute: {
      jobs,
      reports,
      health: health.probe,
      gateway,
      maxTimeoutSeconds: config.PAYMENT_MAX_TIMEOUT_SECONDS,
      paidJobs: {
        jobs,
        ledger: gateway.ledger,
        publishNow: (ids) => outbox.publishNow(ids),
        onJobCreated: (kind) => metrics.onJobCreated(kind),
        devnetJobsPerDay: config.X402_DEVNET_COMPUTE_PER_DAY,
        devnetCaps: createDevnetComputeCaps(database.rateLimitPool, {
          perClientPerDay: config.X402_DEVNET_COMPUTE_PER_CLIENT_PER_DAY,
          globalPerDay: config.X402_DEVNET_COMPUTE_GLOBAL_PER_DAY,
        }),
      },
      webhooks: webhooks ? { policy } : null,
    },
    isReady: readiness.isReady,
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT,
    metrics,
    corsOrigins: config.CORS_ORIGINS,
  });

  // The scout lists, each validated with the query schema its route declares (the one its validate
  // middleware parses with). The brief is not here: its 402 comes only after a brief exists, which
  // can change.
  const hotPath = createHotPath({
    routes: Object.fromEntries(
      SCOUT_LISTS.map((list): [string, HotRoute] => [
        list.path,
        {
          endpoint: DATA_PRICES[list.key].endpoint,
          validateQuery: (query) => void parseInput(list.query, query, 'query'),
        },
      ]),
    ),
    ...(payments.references ? { references: payments.references } : {}),
    onPaymentEvent: gateway.onPaymentEvent,
    corsConfigured: Boolean(config.CORS_ORIGINS),
  });
  // requirePayment tells the hot path of each stored paid answer (onAnswerStored), for its replays.
  // With sign-in-with-x its 402s carry a fresh challenge each, and sign-ins and the replays that need
  // the payer's proof take the full path (docs/architecture.md, "Fast paths").
  const hotPathOn = config.X402_HOT_PATH;
  if (hotPathOn) payments.answersTo(hotPath);

  // The Data API reads the latest reports from memory while every stored report is heard.
  const reportChanges = config.REPORT_CACHE
    ? listenForReportChanges({
        databaseUrl: config.DATABASE_URL,
        onChange: () => reports.invalidate(),
        onListening: (listening) => reports.setCaching(listening),
        onError: (err) =>
          logger.warn(
            { err },
            'report change listener lost its connection: reports are read from the database until it is back',
          ),
      })
    : null;

  // Each fast path has its switch (docs/architecture.md, "Fast paths"); off, the app answers everything.
  const http = hotPathOn ? hotPath.wrap(app) : app;
  served.handler = http;
  return {
    http,
    app,
    hotPath,
    readiness,
    metrics,
    loops,
    describe: {
      payTo: config.MERCHANT_TOKEN_ACCOUNT,
      mint: config.USDC_MINT,
      webhooks: Boolean(webhooks),
    },
    db,
    broker,
    jobs,
    lifecycle,
    reports,
    scans,
    scheduler,
    outbox,
    watchdog,
    health,
    webhooks,
    refunds,
    refundLedger,
    async start() {
      await startComputeConsumers({ broker, lifecycle, health, logger }, instanceId);
    },
    // After HTTP drained and the loops stopped: in-flight requests and rounds may still publish.
    async close() {
      await broker.close(10_000);
      await reportChanges?.close();
      await payments.close();
      await database.close();
    },
  };
}
