import { hostname } from 'node:os';
import type { Application } from 'express';
import { Broker } from '@repo/queue';
import { declareComputeTopology } from '@repo/compute';
import type { Logger } from '@repo/service-kit';
import { parseAllowlist } from '@repo/ssrf-guard';
import type { PaymentEventListener } from '@repo/x402-express';
import { createApp } from './app';
import type { MarketIntelConfig } from './config';
import type { PipelineKind } from '@repo/compute';
import { JobRepository, type ApplyResult, type JobKindHooks } from './data/jobs';
import { createDb, type Db } from './data/prisma';
import { ReportRepository } from './data/reports';
import { ScanRepository } from './data/scans';
import { loadSourcesFile } from './domain/scout-sources';
import { RunnerHealthMonitor } from './domain/health';
import { heartbeatTopology, startComputeConsumers } from './messaging/compute-events';
import { OutboxRelay } from './messaging/outbox';
import { JobWatchdog } from './messaging/job-watchdog';
import { ScanScheduler } from './messaging/scan-scheduler';
import { createMarketIntelMetrics, type MarketIntelMetrics } from './metrics';
import { FeePayerMonitor } from './fee-payer-monitor';
import { createPaymentGateway, createRefundSenders, paymentGate } from './payments';
import { PrismaRefundLedger, type RefundRecord } from '@repo/x402-ledger';
import type { JobRefund } from '@repo/schemas';
import { REFUNDED_JOB_FAILURES, refundReason } from './domain/refunds';
import { RefundWorker } from './workers/refund-worker';
import { WebhookDispatcher } from './webhooks';

/** How often old payment sightings are pruned, in milliseconds. */
const SIGHTING_PRUNE_INTERVAL_MS = 3_600_000;

/** The wired service: the app and the parts `main.ts` (and the tests) start and stop. */
export interface MarketIntelService {
  app: Application;
  db: Db;
  broker: Broker;
  jobs: JobRepository;
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
  metrics: MarketIntelMetrics;
  /** Starts the consumers, the outbox sweep, the webhook dispatcher, the scan scheduler and the job watchdog. */
  start(): Promise<void>;
  /** Marks the service not ready (readiness turns false before the HTTP server drains). */
  markShuttingDown(): void;
  /** Stops background work, drains consumers, closes RabbitMQ, the RPC pools and the database (after the HTTP server closed). */
  stop(): Promise<void>;
}

/**
 * Builds market-intel from its configuration: Prisma, the x402 gateway, RabbitMQ (the compute
 * topology plus this replica's heartbeat queue), the job repository, the outbox relay, the runner
 * health monitor, the webhook dispatcher (when `WEBHOOK_SECRET` is set) and the express app.
 * Nothing runs until {@link MarketIntelService.start}.
 * @param extra `onPaymentEvent`: an extra listener (tests count verifications with it)
 */
export async function createMarketIntelService(
  config: MarketIntelConfig,
  logger: Logger,
  extra: { onPaymentEvent?: PaymentEventListener } = {},
): Promise<MarketIntelService> {
  // Read first: a bad refund wallet stops the boot before any connection is opened.
  const refundSenders = createRefundSenders(config);
  const db = createDb(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const instanceId = config.INSTANCE_ID ?? `${hostname()}-${process.pid}`;
  const metrics = createMarketIntelMetrics();
  const payments = createPaymentGateway(config, db, (call) => metrics.onRpcCall(call));
  const gateway = {
    ...payments,
    onPaymentEvent: extra.onPaymentEvent
      ? (event: Parameters<PaymentEventListener>[0]) => {
          metrics.onPaymentEvent(event);
          extra.onPaymentEvent?.(event);
        }
      : metrics.onPaymentEvent,
  };
  const feePayers = new FeePayerMonitor(payments.settlers ?? {}, {
    minLamports: BigInt(config.X402_FEE_PAYER_MIN_LAMPORTS),
    logger,
    onBalance: (network, lamports) => metrics.onFeePayerBalance(network, lamports),
  });
  const reports = new ReportRepository(db);
  const hooks: Partial<Record<PipelineKind, JobKindHooks>> = {};
  const refundLedger = new PrismaRefundLedger(db);
  const refundWallet = refundSenders.solana?.wallet;
  const jobs = new JobRepository(db, hooks, {
    refundOf: async (signature) => publicRefund(await refundLedger.forPayment(signature)),
    ...(refundWallet !== undefined
      ? {
          onPaidJobFailed: (tx, job, code) =>
            REFUNDED_JOB_FAILURES[code]
              ? refundLedger.queue(job.txSignature, { reason: refundReason(code), jobId: job.id }, tx)
              : Promise.resolve(null),
        }
      : {}),
  });
  const scans = new ScanRepository(db, jobs, reports, metrics.scans);
  hooks.scout = scans.hooks();
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
  const outbox = new OutboxRelay(db, broker, logger, {
    sweepIntervalMs: config.OUTBOX_SWEEP_INTERVAL_MS,
    leaseMs: 30_000,
    batchSize: 100,
  });
  const policy = { allowlist: parseAllowlist(config.SSRF_ALLOWLIST) };
  const webhooks = config.WEBHOOK_SECRET
    ? new WebhookDispatcher(
        db,
        {
          secret: config.WEBHOOK_SECRET,
          policy,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
          pollIntervalMs: Math.min(1000, config.WEBHOOK_RETRY_BASE_MS),
        },
        logger,
      )
    : null;
  const scheduler =
    sectors.length > 0 && config.SCOUT_SCAN_INTERVAL_MINUTES > 0
      ? new ScanScheduler(
          scans,
          jobs,
          outbox,
          sectors,
          {
            intervalMs: config.SCOUT_SCAN_INTERVAL_MINUTES * 60_000,
            tickMs: config.SCOUT_SCHEDULER_TICK_MS,
            windowDays: config.SCOUT_WINDOW_DAYS,
            staleMs: config.SCOUT_SCAN_STALE_MINUTES * 60_000,
          },
          logger,
        )
      : null;
  const refunds =
    refundWallet !== undefined
      ? new RefundWorker(
          refundLedger,
          refundSenders,
          {
            intervalMs: config.X402_REFUND_INTERVAL_MS,
            confirmTimeoutMs: config.X402_REFUND_CONFIRM_TIMEOUT_MS,
          },
          logger,
          (network, outcome) => metrics.onRefund(network, outcome),
        )
      : null;
  /** After a job event or a watchdog failure committed: a refund it queued is counted and sent now. */
  const afterFailure = (result: ApplyResult): void => {
    if (!result.refundQueued) return;
    metrics.onRefund(result.refundQueued, 'queued');
    refunds?.kick();
  };
  const watchdog = new JobWatchdog(
    jobs,
    outbox,
    {
      republishAfterMs: config.JOB_START_REPUBLISH_MINUTES * 60_000,
      failAfterMs: config.JOB_START_FAIL_MINUTES * 60_000,
      tickMs: config.JOB_WATCHDOG_TICK_MS,
    },
    logger,
    (result) => {
      metrics.onJobEvent('watchdog', result.applied);
      if (result.webhookQueued) webhooks?.kick();
      afterFailure(result);
    },
  );
  metrics.observeCompute({
    countByStatus: () => jobs.countByStatus(),
    outboxPending: () => outbox.pending(),
    broker,
  });
  if (refunds) metrics.observeRefunds(() => refundLedger.countPending());

  let shuttingDown = false;
  let pruneSightings: NodeJS.Timeout | undefined;
  const app = createApp({
    logger,
    reports,
    pay: paymentGate(gateway, config.PAYMENT_MAX_TIMEOUT_SECONDS),
    health: health.probe,
    compute: {
      jobs,
      reports,
      health: health.probe,
      gateway,
      maxTimeoutSeconds: config.PAYMENT_MAX_TIMEOUT_SECONDS,
      publishNow: (ids) => outbox.publishNow(ids),
      webhooks: webhooks ? { policy } : null,
      onJobCreated: (kind) => metrics.onJobCreated(kind),
      devnetJobsPerDay: config.X402_DEVNET_COMPUTE_PER_DAY,
    },
    isReady: async () =>
      !shuttingDown &&
      broker.isConnected() &&
      (await db.$queryRawUnsafe('SELECT 1').then(
        () => true,
        () => false,
      )),
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT,
    metrics,
    corsOrigins: config.CORS_ORIGINS?.split(',')
      .map((o) => o.trim())
      .filter(Boolean),
  });

  return {
    app,
    db,
    broker,
    jobs,
    reports,
    scans,
    scheduler,
    outbox,
    watchdog,
    health,
    webhooks,
    refunds,
    refundLedger,
    metrics,
    async start() {
      await startComputeConsumers(
        {
          broker,
          jobs,
          outbox,
          health,
          logger,
          onWebhookQueued: () => webhooks?.kick(),
          onApplied: (type, result) => {
            metrics.onJobEvent(type, result.applied);
            afterFailure(result);
          },
        },
        instanceId,
      );
      outbox.start();
      webhooks?.start();
      scheduler?.start();
      watchdog.start();
      refunds?.start();
      feePayers.start();
      // Sightings of payments never completed are kept X402_SIGHTING_RETENTION_HOURS, then pruned.
      pruneSightings = setInterval(() => {
        payments.ledger
          .pruneSightings(config.X402_SIGHTING_RETENTION_HOURS * 3_600_000)
          .catch((error: unknown) => logger.warn({ err: error }, 'pruning x402 payment sightings failed'));
      }, SIGHTING_PRUNE_INTERVAL_MS);
      pruneSightings.unref();
    },
    markShuttingDown() {
      shuttingDown = true;
    },
    async stop() {
      clearInterval(pruneSightings);
      await feePayers.stop();
      await scheduler?.stop();
      await watchdog.stop();
      await refunds?.stop();
      await outbox.stop();
      await webhooks?.stop();
      await broker.close(10_000);
      await payments.close();
      await db.$disconnect();
    },
  };
}

/** A refund as GET /api/v1/jobs/{jobId} shows it: the landed transaction only once confirmed. */
function publicRefund(record: RefundRecord | null): JobRefund | null {
  if (!record) return null;
  const confirmed = record.status === 'confirmed';
  return {
    status: record.status,
    amount: record.amountAtomic.toString(),
    network: record.network,
    to: record.payer,
    transaction: confirmed ? record.signature : null,
    confirmedAt: confirmed && record.confirmedAt ? record.confirmedAt.toISOString() : null,
  };
}
