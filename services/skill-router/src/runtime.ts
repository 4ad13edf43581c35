import type { Application } from 'express';
import { parseAllowlist } from '@repo/ssrf-guard';
import { createRateLimit, type Logger } from '@repo/service-kit';
import { createApp } from './app';
import type { SkillRouterConfig } from './config';
import { ApiKeyRepository } from './data/api-keys';
import { HealthChecks } from './data/health-checks';
import { createDb, type Db } from './data/prisma';
import { RouteCandidates } from './data/route-candidates';
import { SkillDirectory } from './data/skill-directory';
import { SkillStats } from './data/skill-stats';
import { VerificationQueue } from './data/verification-queue';
import type { SkillRouterMetrics } from './metrics';
import { SchemaSandbox } from './sandbox/schema-sandbox';
import { startHealthWorker } from './workers/health';
import { createSkillHttp, type GuardedSkillHttp } from './workers/http';
import type { Loop } from './workers/loop';
import { startVerificationWorker } from './workers/verification';

/** The wired service: database, repositories, the app and (when started) the workers. */
export interface Runtime {
  app: Application;
  db: Db;
  keys: ApiKeyRepository;
  directory: SkillDirectory;
  candidates: RouteCandidates;
  verificationQueue: VerificationQueue;
  healthChecks: HealthChecks;
  stats: SkillStats;
  http: GuardedSkillHttp;
  /** The schema sandbox the verification worker uses (created with the workers). */
  sandbox?: SchemaSandbox;
  /** Starts the verification and health workers (no-op when already started). */
  startWorkers(): { verification: Loop; health: Loop };
  /** The running workers, if started. */
  workers?: { verification: Loop; health: Loop };
  /** Marks the service not ready (`/readyz` 503) ahead of shutdown. */
  markShuttingDown(): void;
  /** Stops the workers and closes outbound connections and the database. */
  close(): Promise<void>;
}

/**
 * Builds the whole service from its configuration exactly as production runs it; `main.ts` and the
 * test harness both use it. Workers are not started here (see {@link Runtime.startWorkers}).
 */
export function createRuntime(
  config: SkillRouterConfig,
  logger: Logger,
  metrics?: SkillRouterMetrics,
): Runtime {
  const db = createDb(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const keys = new ApiKeyRepository(db.prisma);
  const directory = new SkillDirectory(db.prisma);
  const candidates = new RouteCandidates(db.pool);
  const verificationQueue = new VerificationQueue(db.prisma);
  const healthChecks = new HealthChecks(db.prisma);
  const stats = new SkillStats(db.prisma);
  const policy = { allowlist: parseAllowlist(config.SSRF_ALLOWLIST) };
  const http = createSkillHttp({
    policy,
    timeoutMs: config.VERIFY_TIMEOUT_MS,
    maxResponseBytes: config.MAX_RESPONSE_BYTES,
  });
  const healthHttp =
    config.HEALTH_CHECK_TIMEOUT_MS === config.VERIFY_TIMEOUT_MS
      ? http
      : createSkillHttp({
          policy,
          timeoutMs: config.HEALTH_CHECK_TIMEOUT_MS,
          maxResponseBytes: config.MAX_RESPONSE_BYTES,
        });
  let shuttingDown = false;
  const dbReady = () =>
    db.prisma.$queryRawUnsafe('SELECT 1').then(
      () => true,
      () => false,
    );

  const app = createApp({
    logger,
    keys,
    directory,
    candidates,
    stats,
    keyCreationLimit: createRateLimit(db.pool, {
      keyPrefix: 'auth_key_ip',
      points: config.KEY_CREATION_LIMIT_PER_MINUTE,
      durationSeconds: 60,
    }),
    reportLimit: createRateLimit(db.pool, {
      keyPrefix: 'report_key_skill',
      points: config.REPORT_LIMIT_PER_KEY_SKILL,
      durationSeconds: config.REPORT_LIMIT_WINDOW_SECONDS,
    }),
    registrationLimit: createRateLimit(db.pool, {
      keyPrefix: 'register_key',
      points: config.REGISTRATIONS_PER_KEY_PER_DAY,
      durationSeconds: 86_400,
    }),
    routeLimit: createRateLimit(db.pool, {
      keyPrefix: 'route_key',
      points: config.ROUTES_PER_KEY_PER_MINUTE,
      durationSeconds: 60,
    }),
    endpointRefusal: (url) => http.refusal(url),
    dbReady,
    isReady: async () => !shuttingDown && (await dbReady()),
    routeCandidateLimit: config.ROUTE_CANDIDATE_LIMIT,
    routeDefaultMatches: config.ROUTE_DEFAULT_MATCHES,
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT,
    corsOrigins: config.CORS_ORIGINS?.split(',')
      .map((o) => o.trim())
      .filter(Boolean),
    metrics,
  });

  const startedLoops: Loop[] = [];
  const startedSandboxes: SchemaSandbox[] = [];
  const runtime: Runtime = {
    app,
    db,
    keys,
    directory,
    candidates,
    verificationQueue,
    healthChecks,
    stats,
    http,
    startWorkers() {
      if (runtime.workers) return runtime.workers;
      const sandbox = new SchemaSandbox({
        threads: config.SANDBOX_THREADS,
        memoryMb: config.SANDBOX_MEMORY_MB,
        taskTimeoutMs: config.SANDBOX_TASK_TIMEOUT_MS,
        logger,
        onTask: metrics?.onSandboxTask,
      });
      runtime.sandbox = sandbox;
      startedSandboxes.push(sandbox);
      runtime.workers = {
        verification: startVerificationWorker(
          { queue: verificationQueue, stats, http, schemas: sandbox, logger },
          {
            intervalMs: config.VERIFY_INTERVAL_MS,
            batchSize: config.VERIFY_BATCH_SIZE,
            leaseMs: config.VERIFY_LEASE_MS,
            healthIntervalMs: config.HEALTH_CHECK_INTERVAL_MS,
            maxAttempts: config.VERIFY_MAX_ATTEMPTS,
            onVerified: metrics?.onVerified,
          },
        ),
        health: startHealthWorker(
          { healthChecks, stats, http: healthHttp, logger },
          {
            pollIntervalMs: config.HEALTH_POLL_INTERVAL_MS,
            checkIntervalMs: config.HEALTH_CHECK_INTERVAL_MS,
            batchSize: config.HEALTH_BATCH_SIZE,
            failuresToSuspend: config.HEALTH_FAILURES_TO_SUSPEND,
            successesToResume: config.HEALTH_SUCCESSES_TO_RESUME,
            onChecked: metrics?.onHealthChecked,
          },
        ),
      };
      startedLoops.push(runtime.workers.verification, runtime.workers.health);
      return runtime.workers;
    },
    markShuttingDown() {
      shuttingDown = true;
    },
    async close() {
      shuttingDown = true;
      // Every loop and sandbox ever started, also those a caller replaced by starting new workers.
      await Promise.all(startedLoops.map((loop) => loop.stop()));
      await Promise.all(startedSandboxes.map((sandbox) => sandbox.close()));
      await http.close();
      if (healthHttp !== http) await healthHttp.close();
      await db.close();
    },
  };
  return runtime;
}
