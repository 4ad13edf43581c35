import type { Application } from 'express';
import { createSchemaCheck, packageMigrationsDir, type SchemaCheck } from '@repo/db-migrate';
import { createLlmClient } from '@repo/llm';
import { parseAllowlist, type LookupFunction } from '@repo/ssrf-guard';
import {
  createApiKeyCache,
  createReadiness,
  listenForNotifications,
  sweepRateLimits,
  type ComposedService,
  type Database,
  type Logger,
  type Loop,
} from '@repo/service-kit';
import { createApp } from './entry-points/http/app';
import { DashboardRepository } from './data/dashboard';
import { cookieSecure, llmSettings, type SignalFeedbackConfig } from './config';
import { AccountRepository } from './data/accounts';
import { AnalysisRepository } from './data/analysis';
import { openDatabase, type Db } from './data/prisma';
import { DeploymentRepository } from './data/deployments';
import { KEY_CHANGES_CHANNEL, ProductRepository } from './data/products';
import { ProposalRepository } from './data/proposals';
import { AuthRateLimiter } from './data/rate-limits';
import { MonitorRepository } from './data/regression-monitor';
import { SignalRepository, type KeyOwner } from './data/signals';
import { WebhookRepository } from './data/webhooks';
import { AnalysisService } from './domain/analysis';
import { DeploymentService } from './domain/deployments';
import { PasswordHasher } from './domain/passwords';
import { PRIORITY_FEEDBACK } from './domain/proposal-priority';
import { LlmProposalWriter } from './domain/proposal-writer';
import { RegressionMonitor, verificationEvaluator } from './domain/regression-monitor';
import { MESSAGE_ID_WINDOW_MS } from './domain/signals';
import { expirySweepLoop } from './entry-points/workers/expiry-sweep';
import { scheduledPasses } from './entry-points/workers/schedules';
import { webhookDeliveryLoop, type WebhookDelivery } from './entry-points/workers/webhook-delivery';
import {
  createSignalFeedbackMetrics,
  type SignalFeedbackEvents,
  type SignalFeedbackMetrics,
} from './metrics';

/** What a test (or the CLI) may replace in {@link compose}. */
export interface ComposeOverrides {
  /** The app's logger (a test reading access-log lines passes its own). */
  logger?: Logger;
  /** The clock of the routes and the analysis. */
  now?: () => Date;
  /** The registry (a test reading `/metrics` passes its own). */
  metrics?: SignalFeedbackMetrics;
  /** The domain counters (default: those of `metrics`). */
  events?: SignalFeedbackEvents;
  /** Resolver of webhook hosts instead of the system's, at registration and at every connection (tests). */
  webhookLookup?: LookupFunction;
}

/** signal-feedback composed: what the runtime runs, plus the handles the tests and the CLI use. */
export interface SignalFeedbackService extends ComposedService {
  http: Application;
  metrics: SignalFeedbackMetrics;
  loops: Loop[];
  database: Database<Db>;
  /** The Prisma client (`database.prisma`). */
  db: Db;
  accounts: AccountRepository;
  analysis: AnalysisService;
  deployments: DeploymentService;
  limiter: AuthRateLimiter;
  /** The scheduled analysis; absent when `ANALYSIS_INTERVAL_MS` is 0. */
  analysisSchedule?: Loop;
  /** The scheduled verification of deployments; absent when `VERIFICATION_INTERVAL_MS` is 0. */
  verificationSchedule?: Loop;
  /** The hourly sweep of expired sessions, rate-limit counters and signal message ids. */
  expirySweep: Loop;
  /** Product webhook settings and the outbox. */
  webhooks: WebhookRepository;
  /** The open-window monitor (README, "The open-window monitor"). */
  monitor: RegressionMonitor;
  /** Its loop; absent when `MONITOR_INTERVAL_MS` is 0. */
  monitorLoop?: Loop;
  /** The webhook delivery worker; absent when `WEBHOOK_POLL_INTERVAL_MS` is 0. */
  webhookDelivery?: WebhookDelivery;
}

/**
 * The composition root of signal-feedback: configuration -> database -> repositories -> use cases
 * (analysis with the LLM writer when configured, passwords, log-in throttling) -> entry points (the
 * HTTP app, the analysis schedule and the expiry sweep). Used by `main.ts` through `runService`, by the
 * admin CLI and by the tests. Nothing runs until the runtime starts the loops.
 * @throws whatever PostgreSQL throws for the boot `SELECT 1` (the service refuses to start without its database);
 *   DbMigrateError `invalid-migrations-dir` when the package's `prisma/migrations` is missing or empty
 */
export async function compose(
  context: { config: SignalFeedbackConfig; logger: Logger },
  overrides: ComposeOverrides = {},
): Promise<SignalFeedbackService> {
  const { config } = context;
  const logger = overrides.logger ?? context.logger;
  const database = openDatabase(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  let schema: SchemaCheck;
  try {
    await database.prisma.$queryRawUnsafe('SELECT 1');
    // Not ready until the database has every migration this build ships (README, "Observability").
    schema = await createSchemaCheck({
      pool: database.pool,
      migrationsDir: packageMigrationsDir(__dirname),
      logger,
    });
  } catch (err) {
    await database.close();
    throw err;
  }
  const db = database.prisma;
  const metrics = overrides.metrics ?? createSignalFeedbackMetrics();
  const events = overrides.events ?? metrics.events;

  const accounts = new AccountRepository(db);
  const proposals = new ProposalRepository(db, PRIORITY_FEEDBACK);
  const signals = new SignalRepository(database.pool);
  const llm = llmSettings(config);
  const analysis = new AnalysisService({
    analysis: new AnalysisRepository(db),
    proposals,
    writer: llm
      ? new LlmProposalWriter(
          // One SDK retry and one repair turn bound how long a proposal waits for the model.
          createLlmClient({ ...llm, maxRetries: 1, repairAttempts: 1 }),
        )
      : undefined,
    logger,
    minSignals: config.ANALYSIS_MIN_SIGNALS,
    now: overrides.now,
    onProposal: (source) => events.proposalCreated(source),
  });
  const limiter = new AuthRateLimiter(database.rateLimitPool, {
    loginFreeFailures: config.LOGIN_FREE_FAILURES,
    maxDelaySeconds: config.LOGIN_MAX_DELAY_SECONDS,
    loginPerIp: config.LOGIN_MAX_ATTEMPTS_PER_IP,
    windowSeconds: config.LOGIN_WINDOW_SECONDS,
    signupPerIpPerHour: config.SIGNUP_MAX_PER_IP_PER_HOUR,
  });

  const deploymentRepository = new DeploymentRepository(db);
  const deployments = new DeploymentService({
    deployments: deploymentRepository,
    defaults: {
      windowMinutes: config.VERIFICATION_WINDOW_MINUTES,
      alpha: config.VERIFICATION_ALPHA,
      minSignals: config.VERIFICATION_MIN_SIGNALS,
    },
    logger,
    now: overrides.now,
    onVerdict: (verdict) => events.deploymentVerified(verdict),
    // Two monitor periods (the monitor's own, at least a second): one look may be late, not two.
    ...(config.DEPLOYMENT_LISTING_SNAPSHOTS
      ? { listingSnapshots: { maxAgeMs: 2 * Math.max(config.MONITOR_INTERVAL_MS, 1000) } }
      : {}),
  });

  // A rotated or deleted key is dropped from every replica's key cache as soon as its change commits;
  // while this connection is down the cache is off.
  const keys = createApiKeyCache<KeyOwner>({
    load: (hash) => signals.findKeyOwner(hash),
    keyHashOf: (owner) => owner.apiKeyHash,
    ttlMs: config.API_KEY_CACHE_TTL_MS,
    caching: false,
  });
  const keyChanges = listenForNotifications({
    databaseUrl: config.DATABASE_URL,
    channel: KEY_CHANGES_CHANNEL,
    onNotification: (productId) => keys.invalidate((owner) => owner.productId === productId),
    onListening: (listening) => keys.setCaching(listening),
    onError: (err) =>
      logger.warn(
        { err },
        'key change listener lost its connection: keys are read from the database until it is back',
      ),
  });

  // Webhooks (README, "Webhooks (signal-feedback)") and the open-window monitor that queues them.
  const webhooks = new WebhookRepository(db);
  const ssrfPolicy = { allowlist: parseAllowlist(config.SSRF_ALLOWLIST) };
  const monitor = new RegressionMonitor({
    store: new MonitorRepository(db, deploymentRepository),
    evaluate: verificationEvaluator((id) => deployments.provisionalDecision(id)),
    logger,
    intervalMs: Math.max(config.MONITOR_INTERVAL_MS, 1000),
    ...(config.PUBLIC_URL ? { publicUrl: config.PUBLIC_URL } : {}),
    now: overrides.now,
    onDetected: () => events.regressionDetected(),
  });

  const readiness = createReadiness({ database: database.ping, schema: schema.isUpToDate });
  const http = createApp({
    logger,
    accounts,
    products: new ProductRepository(db),
    signals,
    keys,
    proposals,
    analysis,
    deployments,
    passwords: new PasswordHasher({ memoryKib: config.ARGON2_MEMORY_KIB, timeCost: config.ARGON2_TIME_COST }),
    limiter,
    maxBatch: config.MAX_BATCH_SIZE,
    sessionTtlMs: config.SESSION_TTL_HOURS * 3_600_000,
    secureCookies: cookieSecure(config),
    isReady: readiness.isReady,
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT,
    corsOrigins: config.CORS_ORIGINS,
    now: overrides.now,
    metrics,
    events,
    dashboard: new DashboardRepository(database.pool),
    analysisMinSignals: config.ANALYSIS_MIN_SIGNALS,
    webhooks: {
      repository: webhooks,
      policy: ssrfPolicy,
      production: config.NODE_ENV === 'production',
      ...(overrides.webhookLookup ? { lookup: overrides.webhookLookup } : {}),
    },
  });

  const { analysisSchedule, verificationSchedule, monitorLoop } = scheduledPasses(
    { analysis, deployments, monitor },
    {
      analysisMs: config.ANALYSIS_INTERVAL_MS,
      verificationMs: config.VERIFICATION_INTERVAL_MS,
      monitorMs: config.MONITOR_INTERVAL_MS,
    },
    { logger, metrics: metrics.loops },
  );
  const webhookDelivery =
    config.WEBHOOK_POLL_INTERVAL_MS > 0
      ? webhookDeliveryLoop({
          webhooks,
          policy: ssrfPolicy,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
          pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
          ...(overrides.webhookLookup ? { lookup: overrides.webhookLookup } : {}),
          onAttempt: (outcome) => events.webhookAttempt(outcome),
          logger,
          metrics: metrics.loops,
        })
      : undefined;
  const expirySweep = expirySweepLoop({
    deleteExpiredSessions: (now) => accounts.deleteExpiredSessions(now),
    sweepRateLimits: (now) => sweepRateLimits(database.pool, now),
    deleteExpiredMessageIds: (now) =>
      signals.deleteExpiredMessageIds(new Date(now.getTime() - MESSAGE_ID_WINDOW_MS)),
    logger,
    metrics: metrics.loops,
  });

  return {
    http,
    readiness,
    metrics,
    loops: [analysisSchedule, verificationSchedule, monitorLoop, webhookDelivery, expirySweep].filter(
      (l): l is Loop => l !== undefined,
    ),
    close: async () => {
      await keyChanges.close();
      await database.close();
    },
    describe: {
      analysisIntervalMs: config.ANALYSIS_INTERVAL_MS,
      verificationIntervalMs: config.VERIFICATION_INTERVAL_MS,
      monitorIntervalMs: config.MONITOR_INTERVAL_MS,
      llm: llm ? config.LLM_MODEL : 'none (proposals from evidence)',
      maxBatch: config.MAX_BATCH_SIZE,
    },
    database,
    db,
    accounts,
    analysis,
    deployments,
    limiter,
    ...(analysisSchedule ? { analysisSchedule } : {}),
    ...(verificationSchedule ? { verificationSchedule } : {}),
    expirySweep,
    webhooks,
    monitor,
    ...(monitorLoop ? { monitorLoop } : {}),
    ...(webhookDelivery ? { webhookDelivery } : {}),
  };
}
