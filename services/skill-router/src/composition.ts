import { createSchemaCheck, packageMigrationsDir } from '@repo/db-migrate';
import {
  createLoop,
  createRateLimit,
  createReadiness,
  type ComposedService,
  type Database,
  type Logger,
  type Loop,
} from '@repo/service-kit';
import { parseAllowlist } from '@repo/ssrf-guard';
import { createApp } from './entry-points/http/app';
import { embeddingsSettings, type SkillRouterConfig } from './config';
import { createEmbeddingsClient, type EmbeddingsClient } from './adapters/embeddings';
import { SkillEmbeddings } from './data/skill-embeddings';
import { embedVerifiedSkills, TaskEmbeddings } from './domain/semantic';
import { ApiKeyRepository } from './data/api-keys';
import { ConformanceChecks } from './data/conformance-checks';
import { HealthChecks } from './data/health-checks';
import { openDatabase, type PrismaDb } from './data/prisma';
import { RouteCandidates } from './data/route-candidates';
import { RoutingRows } from './data/routing-rows';
import { RoutingIndexSync } from './domain/routing-sync';
import { createRoutingIndexWorker } from './entry-points/workers/routing-index';
import { SkillDirectory } from './data/skill-directory';
import { SkillStats } from './data/skill-stats';
import { ReportPayments } from './data/report-payments';
import { createSolanaPaymentChecker } from './adapters/solana-payments';
import { RELIABILITY_MODEL } from './domain/skill-metrics';
import { backfillDefinitionQuality } from './domain/definition-quality';
import { VerificationQueue } from './data/verification-queue';
import { createSkillRouterMetrics, type SkillRouterMetrics } from './metrics';
import { SchemaSandbox } from './adapters/sandbox/schema-sandbox';
import { createHealthWorker } from './entry-points/workers/health';
import { createSkillHttp, type GuardedSkillHttp } from './adapters/skill-http';
import { createMcpServers } from './adapters/mcp-client';
import type { McpServers } from './domain/mcp-tools';
import { createVerificationWorker } from './entry-points/workers/verification';
import { createConformanceWorker } from './entry-points/workers/conformance';

/**
 * The background workers of one replica: three loops and the schema sandbox the verification and
 * conformance loops use.
 */
export interface SkillRouterWorkers {
  verification: Loop;
  health: Loop;
  conformance: Loop;
  sandbox: SchemaSandbox;
}

/**
 * skill-router as `runService` runs it, plus the handles tests use: the database, the repositories,
 * the outbound skill HTTP client and the workers.
 */
export interface SkillRouterService extends ComposedService {
  metrics: SkillRouterMetrics;
  db: Database<PrismaDb>;
  keys: ApiKeyRepository;
  directory: SkillDirectory;
  candidates: RouteCandidates;
  /** The replica's in-memory routing index and what keeps it current. */
  routing: RoutingIndexSync;
  /** The loop and listener that keep {@link routing} current (in `loops` when `ROUTING_INDEX`). */
  routingWorker: Loop;
  verificationQueue: VerificationQueue;
  healthChecks: HealthChecks;
  conformanceChecks: ConformanceChecks;
  stats: SkillStats;
  /** The SSRF-guarded client of skill endpoints (verification and registration checks). */
  skillHttp: GuardedSkillHttp;
  /** The SSRF-guarded client of MCP servers (README, "MCP servers as skills"). */
  mcp: McpServers;
  /** The stored embeddings of skills (README, "Search by meaning"). */
  skillEmbeddings: SkillEmbeddings;
  /** The embeddings worker's loop, when an embeddings endpoint is configured (started with the workers). */
  embeddingsLoop?: Loop;
  /**
   * The current workers: created by {@link compose} when `WORKERS_ENABLED` (and then returned in
   * `loops`, which the runtime starts), or by {@link SkillRouterService.startWorkers}. A caller that
   * stops them clears this field so that the next `startWorkers` creates fresh ones.
   */
  workers?: SkillRouterWorkers;
  /** Creates the workers when there are none, starts their loops and returns them (for tests and demos). */
  startWorkers(): SkillRouterWorkers;
}

/**
 * The composition root of skill-router: config -> database and outbound clients -> repositories ->
 * rate limits -> the HTTP app and the verification and health workers. `main.ts` runs it through
 * `runService`; the test harness runs the same function. The workers' loops are returned only when
 * `WORKERS_ENABLED` (README, "Configuration").
 * @throws whatever PostgreSQL throws for the boot `SELECT 1` (an unreachable database stops the boot);
 *   DbMigrateError `invalid-migrations-dir` when the package's `prisma/migrations` is missing or empty
 */
export async function compose({
  config,
  logger,
}: {
  config: SkillRouterConfig;
  logger: Logger;
}): Promise<SkillRouterService> {
  const metrics = createSkillRouterMetrics();
  const db = openDatabase(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  // Fail fast: a wrong DATABASE_URL stops the boot instead of failing every request.
  await db.prisma.$queryRawUnsafe('SELECT 1');
  // Not ready until the database has every migration this build ships (README, "Observability").
  const schema = await createSchemaCheck({
    pool: db.pool,
    migrationsDir: packageMigrationsDir(__dirname),
    logger,
  });
  const readiness = createReadiness({ database: db.ping, schema: schema.isUpToDate });

  const policy = { allowlist: parseAllowlist(config.SSRF_ALLOWLIST) };
  // Verification's clients, and the health checks' with their own timeout (shared when it is the same).
  const clients = <T>(
    create: (o: { policy: typeof policy; timeoutMs: number; maxResponseBytes: number }) => T,
  ) => {
    const options = {
      policy,
      timeoutMs: config.VERIFY_TIMEOUT_MS,
      maxResponseBytes: config.MAX_RESPONSE_BYTES,
    };
    const verify = create(options);
    const health =
      config.HEALTH_CHECK_TIMEOUT_MS === config.VERIFY_TIMEOUT_MS
        ? verify
        : create({ ...options, timeoutMs: config.HEALTH_CHECK_TIMEOUT_MS });
    return { verify, health };
  };
  const { verify: skillHttp, health: healthHttp } = clients(createSkillHttp);
  // The same guard, timeout and response cap for MCP servers (README, "MCP servers as skills"); their
  // health checks are the handshake and a ping.
  const { verify: mcp, health: healthMcp } = clients(createMcpServers);

  const keys = new ApiKeyRepository(db.prisma);
  const directory = new SkillDirectory(db.prisma);
  const candidates = new RouteCandidates(db.pool);
  // Search by meaning (README, "Search by meaning"): only with an embeddings endpoint configured.
  const embeddingsConfig = embeddingsSettings(config);
  const embedder: EmbeddingsClient | undefined =
    embeddingsConfig &&
    createEmbeddingsClient({
      baseUrl: embeddingsConfig.baseUrl,
      model: embeddingsConfig.model,
      ...(embeddingsConfig.apiKey ? { apiKey: embeddingsConfig.apiKey } : {}),
      timeoutMs: embeddingsConfig.timeoutMs,
      policy,
    });
  const taskEmbeddings =
    embedder &&
    embeddingsConfig &&
    new TaskEmbeddings(embedder, {
      cacheEntries: embeddingsConfig.taskCacheEntries,
      minSimilarity: embeddingsConfig.minSimilarity,
      onFallback: (err) => {
        metrics.onEmbeddingFallback();
        logger.debug({ err }, 'route ranked by words alone: the embeddings endpoint failed');
      },
    });
  const skillEmbeddings = new SkillEmbeddings(db.pool);
  const routingRows = new RoutingRows(db.pool, undefined, undefined, embedder?.model ?? null);
  const routing = new RoutingIndexSync(routingRows, {
    // 250 rows of hostile descriptions are about 25 MB of heap, well within the service's V8 limit.
    pageSize: 250,
    marginMs: config.ROUTING_WATERMARK_MARGIN_MS,
    onLoaded: (skills, ms) => {
      metrics.onIndexLoaded(skills, ms);
      logger.info({ skills, ms: Math.round(ms) }, 'routing index loaded');
    },
    onApplied: metrics.onIndexApplied,
  });
  metrics.watchIndex(routing);
  const routingWorker = createRoutingIndexWorker(
    { sync: routing, logger },
    {
      databaseUrl: config.DATABASE_URL,
      intervalMs: config.ROUTING_WATERMARK_INTERVAL_MS,
      retryMs: config.ROUTING_LISTEN_RETRY_MS,
      loopMetrics: metrics.loops,
    },
  );
  const conformanceChecks = new ConformanceChecks(db.prisma);
  const verificationQueue = new VerificationQueue(db.prisma);
  const healthChecks = new HealthChecks(db.prisma);
  const stats = new SkillStats(db.prisma, RELIABILITY_MODEL);
  const paymentChecker = createSolanaPaymentChecker({
    networks: {
      ...(config.SOLANA_RPC_URL && config.USDC_MINT
        ? { solana: { rpcUrl: config.SOLANA_RPC_URL, mint: config.USDC_MINT } }
        : {}),
      ...(config.SOLANA_DEVNET_RPC_URL && config.USDC_MINT_DEVNET
        ? { 'solana-devnet': { rpcUrl: config.SOLANA_DEVNET_RPC_URL, mint: config.USDC_MINT_DEVNET } }
        : {}),
    },
    maxAgeSeconds: config.PAYMENT_PROOF_MAX_AGE_SECONDS,
  });

  // Every limit counts in PostgreSQL, so that it holds across replicas: `points` per `durationSeconds`.
  const rateLimit = (keyPrefix: string, points: number, durationSeconds: number) =>
    createRateLimit(db.rateLimitPool, { keyPrefix, points, durationSeconds });
  const app = createApp({
    logger,
    keys,
    directory,
    routing: {
      index: routing,
      taskTerms: (task) => routingRows.taskTerms(task),
      candidates,
      ...(taskEmbeddings && embedder ? { semantic: { tasks: taskEmbeddings, model: embedder.model } } : {}),
    },
    stats,
    paymentProofs: {
      payments: new ReportPayments(db.prisma),
      checker: paymentChecker,
      proofLimit: rateLimit('payment_proof_key', config.PAYMENT_PROOFS_PER_KEY_PER_HOUR, 3600),
    },
    keyCreationLimit: rateLimit('auth_key_ip', config.KEY_CREATION_LIMIT_PER_MINUTE, 60),
    reportLimit: rateLimit(
      'report_key_skill',
      config.REPORT_LIMIT_PER_KEY_SKILL,
      config.REPORT_LIMIT_WINDOW_SECONDS,
    ),
    registrationLimit: rateLimit('register_key', config.REGISTRATIONS_PER_KEY_PER_DAY, 86_400),
    routeLimit: rateLimit('route_key', config.ROUTES_PER_KEY_PER_MINUTE, 60),
    endpointRefusal: (url) => skillHttp.refusal(url),
    mcp,
    dbReady: db.ping,
    isReady: readiness.isReady,
    routeCandidateLimit: config.ROUTE_CANDIDATE_LIMIT,
    routeDefaultMatches: config.ROUTE_DEFAULT_MATCHES,
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT,
    corsOrigins: config.CORS_ORIGINS,
    metrics,
  });

  // Every loop and sandbox ever created, also those a test replaced by starting new workers.
  const createdLoops: Loop[] = [];
  const createdSandboxes: SchemaSandbox[] = [];
  // Embeds verified skills (README, "Search by meaning"): woken by every passed verification, and
  // every 10 s for skills verified elsewhere or before embeddings were configured. Replicas may embed
  // the same skill at once; the second write stores the same vector.
  const embeddingsLoop =
    embedder &&
    createLoop({
      name: 'skill-embeddings',
      intervalMs: 10_000,
      round: async () => {
        try {
          const read = await embedVerifiedSkills(skillEmbeddings, embedder);
          metrics.onEmbedded('stored', read);
          return read === 32;
        } catch (err) {
          metrics.onEmbedded('failed', 1);
          throw err;
        }
      },
      logger,
      metrics: metrics.loops,
    });
  const createWorkers = (): SkillRouterWorkers => {
    // One schedule for a skill's conformance calls: the first is set when it verifies, the next after each call.
    const conformanceSchedule = {
      intervalMs: config.CONFORMANCE_INTERVAL_MS,
      jitterPercent: config.CONFORMANCE_JITTER_PERCENT,
    };
    const sandbox = new SchemaSandbox({
      threads: config.SANDBOX_THREADS,
      memoryMb: config.SANDBOX_MEMORY_MB,
      taskTimeoutMs: config.SANDBOX_TASK_TIMEOUT_MS,
      idleTimeoutMs: config.SANDBOX_IDLE_TIMEOUT_MS,
      logger,
      onTask: metrics.onSandboxTask,
    });
    const verification = createVerificationWorker(
      { queue: verificationQueue, stats, http: skillHttp, mcp, schemas: sandbox, logger },
      {
        intervalMs: config.VERIFY_INTERVAL_MS,
        batchSize: config.VERIFY_BATCH_SIZE,
        leaseMs: config.VERIFY_LEASE_MS,
        healthIntervalMs: config.HEALTH_CHECK_INTERVAL_MS,
        conformance: conformanceSchedule,
        maxAttempts: config.VERIFY_MAX_ATTEMPTS,
        onVerified: (passed) => {
          metrics.onVerified(passed);
          if (passed) void embeddingsLoop?.kick();
        },
        loopMetrics: metrics.loops,
      },
    );
    const health = createHealthWorker(
      { healthChecks, stats, http: healthHttp, mcp: healthMcp, logger },
      {
        intervalMs: config.HEALTH_POLL_INTERVAL_MS,
        checkIntervalMs: config.HEALTH_CHECK_INTERVAL_MS,
        batchSize: config.HEALTH_BATCH_SIZE,
        failuresToSuspend: config.HEALTH_FAILURES_TO_SUSPEND,
        successesToResume: config.HEALTH_SUCCESSES_TO_RESUME,
        onChecked: metrics.onHealthChecked,
        loopMetrics: metrics.loops,
      },
    );
    const conformance = createConformanceWorker(
      { checks: conformanceChecks, directory, http: skillHttp, mcp, schemas: sandbox, logger },
      {
        intervalMs: config.CONFORMANCE_POLL_INTERVAL_MS,
        batchSize: config.CONFORMANCE_BATCH_SIZE,
        schedule: conformanceSchedule,
        leaseMs: config.VERIFY_LEASE_MS,
        failuresToDegrade: config.CONFORMANCE_FAILURES_TO_DEGRADE,
        successesToRecover: config.CONFORMANCE_SUCCESSES_TO_RECOVER,
        onChecked: metrics.onConformanceChecked,
        loopMetrics: metrics.loops,
      },
    );
    createdSandboxes.push(sandbox);
    createdLoops.push(verification, health, conformance);
    return { verification, health, conformance, sandbox };
  };
  const workers = config.WORKERS_ENABLED ? createWorkers() : undefined;

  // Skills without a definition quality score (registered before it existed, or by an older replica
  // during a rolling update) get theirs, 200 a round, at start and every 10 minutes (README,
  // "Definition quality"); idempotent, so replicas running it at once do no harm.
  const qualityBackfill = createLoop({
    name: 'definition-quality-backfill',
    intervalMs: 600_000,
    round: async () => (await backfillDefinitionQuality(directory)) > 0,
    logger,
    metrics: metrics.loops,
  });

  const service: SkillRouterService = {
    http: app,
    readiness,
    metrics,
    loops: [
      ...(config.ROUTING_INDEX ? [routingWorker] : []),
      qualityBackfill,
      ...(workers ? [workers.verification, workers.health, workers.conformance] : []),
      ...(workers && embeddingsLoop ? [embeddingsLoop] : []),
    ],
    describe: { workers: config.WORKERS_ENABLED, ssrfAllowlist: config.SSRF_ALLOWLIST || null },
    db,
    keys,
    directory,
    candidates,
    routing,
    routingWorker,
    verificationQueue,
    healthChecks,
    conformanceChecks,
    stats,
    skillHttp,
    mcp,
    skillEmbeddings,
    ...(embeddingsLoop ? { embeddingsLoop } : {}),
    workers,
    startWorkers() {
      const current = (service.workers ??= createWorkers());
      current.verification.start();
      current.health.start();
      current.conformance.start();
      embeddingsLoop?.start();
      return current;
    },
    async close() {
      readiness.markShuttingDown();
      await Promise.all(
        [routingWorker, qualityBackfill, ...createdLoops, ...(embeddingsLoop ? [embeddingsLoop] : [])].map(
          (loop) => loop.stop(),
        ),
      );
      await Promise.all(createdSandboxes.map((sandbox) => sandbox.close()));
      await skillHttp.close();
      await mcp.close();
      await paymentChecker.close();
      await embedder?.close();
      if (healthHttp !== skillHttp) await healthHttp.close();
      if (healthMcp !== mcp) await healthMcp.close();
      await db.close();
    },
  };
  return service;
}
