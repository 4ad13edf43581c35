import path from 'node:path';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { startService } from '@repo/service-kit';
import { testDatabaseUrl } from '@repo/service-kit/testing';
import { compose, type SkillRouterService } from '../../src/composition';
import { loadConfig, type SkillRouterConfig } from '../../src/config';
import type { RegisterSkillRequest } from '../../src/schemas';

/** A running skill-router on a fresh database. */
export interface Harness {
  baseUrl: string;
  /** The metrics listener (`/metrics`). */
  metricsUrl: string;
  databaseUrl: string;
  config: SkillRouterConfig;
  /** The composed service (repositories, workers) behind `baseUrl`. */
  service: SkillRouterService;
  /** POST /api/auth/key; returns the new key. */
  createKey(name?: string, headers?: Record<string, string>): Promise<string>;
  /** JSON request helper: returns status, headers and parsed body. */
  call(
    method: 'GET' | 'POST',
    pathAndQuery: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any -- test bodies are checked field by field
  /** POST /api/discover/register with a key. */
  register(apiKey: string, skill: RegisterSkillRequest): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any -- as above
  /** Runs raw SQL on the suite's database. */
  sql<T = Record<string, unknown>>(query: string, ...args: unknown[]): Promise<T[]>;
  /**
   * Loads the routing index again: after {@link Harness.sql} wrote skills or their metrics by hand,
   * which no notification announces (the service's own writes reach the index by themselves).
   */
  reloadRouting(): Promise<void>;
  close(): Promise<void>;
}

/** Test defaults: any free ports, loopback endpoints allowed, fast workers, quiet logs. */
const TEST_ENV: Record<string, string> = {
  HOST: '127.0.0.1',
  PORT: '0',
  METRICS_PORT: '0',
  SHUTDOWN_DRAIN_DELAY_MS: '0',
  LOG_LEVEL: 'silent',
  KEY_CREATION_LIMIT_PER_MINUTE: '1000',
  SSRF_ALLOWLIST: '127.0.0.1,localhost',
  WORKERS_ENABLED: 'false',
  VERIFY_INTERVAL_MS: '50',
  VERIFY_TIMEOUT_MS: '1500',
  HEALTH_POLL_INTERVAL_MS: '50',
  HEALTH_CHECK_INTERVAL_MS: '100',
  HEALTH_CHECK_TIMEOUT_MS: '1500',
};

/**
 * Starts the whole service as production runs it (`startService` with the composition root: config
 * parsed from an environment, Prisma, the rate limiters, the SSRF-guarded HTTP client, the app, the
 * HTTP and metrics listeners) against a dropped and migrated database named `dbName` for this run
 * (`runScoped`). Workers start only when `env.WORKERS_ENABLED` is `true`; `close()` runs the
 * production shutdown steps.
 */
export async function startHarness(
  dbName: string,
  env: Record<string, string> = {},
  options: { resetDb?: boolean } = {},
): Promise<Harness> {
  const databaseUrl = testDatabaseUrl(dbName);
  if (options.resetDb !== false) {
    await resetDatabase(databaseUrl);
    await applyMigrations({
      databaseUrl,
      migrationsDir: path.join(__dirname, '../../prisma/migrations'),
      log: { info: () => undefined, warn: () => undefined },
    });
  }
  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: databaseUrl, ...env });
  let composed: SkillRouterService | undefined;
  const running = await startService({
    name: 'skill-router',
    loadConfig: () => config,
    compose: async (context) => (composed = await compose(context)),
    bufferedLogs: false,
  });
  if (!composed) throw new Error('startService did not compose the service');
  const service = composed;
  if (service.workers) await startServiceWorkers(service);
  if (config.ROUTING_INDEX)
    await waitFor('the routing index to load', async () => service.routing.current, 30_000);
  const baseUrl = `http://127.0.0.1:${running.port}`;

  const call: Harness['call'] = async (method, pathAndQuery, body, headers = {}) => {
    const res = await fetch(baseUrl + pathAndQuery, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, headers: res.headers, body: parsed as never };
  };

  return {
    baseUrl,
    metricsUrl: `http://127.0.0.1:${running.metricsPort ?? 0}`,
    databaseUrl,
    config,
    service,
    call,
    async createKey(name = 'test-agent', headers = {}) {
      const res = await call('POST', '/api/auth/key', { name }, headers);
      if (res.status !== 201)
        throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
      return (res.body as { api_key: string }).api_key;
    },
    register: (apiKey, skill) => call('POST', '/api/discover/register', skill, { 'x-api-key': apiKey }),
    sql: (query, ...args) => service.db.prisma.$queryRawUnsafe(query, ...args),
    reloadRouting: () => service.routing.reloadNow(),
    async close() {
      for (const step of running.shutdownSteps) await step.run();
    },
  };
}

/**
 * Starts the service's workers (no-op for those already running) and waits until their schema
 * sandbox runs a task, so that a test's first check does not also wait for a thread to start.
 */
async function startServiceWorkers(service: SkillRouterService): Promise<void> {
  const { sandbox } = service.startWorkers();
  await waitFor(
    'the schema sandbox to run a task',
    async () => (await sandbox.checkSchema({ type: 'object' })).ok,
    60_000,
  );
}

/** Starts `h`'s workers (new ones after {@link stopWorkers}) and waits until they can verify. */
export async function startWorkers(h: Harness): Promise<void> {
  await startServiceWorkers(h.service);
}

/** Stops `h`'s verification, health and conformance loops and closes their sandbox, so that none of them runs on. */
export async function stopWorkers(h: Harness): Promise<void> {
  const workers = h.service.workers;
  if (!workers) return;
  await Promise.all([workers.verification.stop(), workers.health.stop(), workers.conformance.stop()]);
  await workers.sandbox.close();
  h.service.workers = undefined;
}

/**
 * Runs `body` with `h`'s workers stopped, then leaves them as it found them: running workers are
 * started again (fresh and warm) also when `body` throws.
 */
export async function withWorkersStopped<T>(h: Harness, body: () => Promise<T>): Promise<T> {
  const wereRunning = h.service.workers !== undefined;
  await stopWorkers(h);
  try {
    return await body();
  } finally {
    if (wereRunning) await startWorkers(h);
  }
}

/**
 * Polls `check` until it returns a truthy value or `timeoutMs` passes (no fixed sleeps).
 * @returns the truthy value
 * @throws Error naming `what` at the deadline
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
