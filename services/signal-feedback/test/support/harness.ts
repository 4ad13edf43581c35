import path from 'node:path';
import request from 'supertest';
import { resetAndMigrate } from '@repo/db-migrate/testing';
import { startService } from '@repo/service-kit';
import { testDatabaseUrl } from '@repo/service-kit/testing';
import { compose, type ComposeOverrides, type SignalFeedbackService } from '../../src/composition';
import { loadConfig } from '../../src/config';
import type { Db } from '../../src/data/prisma';

/** A running signal-feedback on a fresh database. */
export interface Harness {
  baseUrl: string;
  /** Origin of the metrics listener (`METRICS_PORT`), for `scrape(metricsUrl)`. */
  metricsUrl: string;
  databaseUrl: string;
  db: Db;
  /** The composed service (repositories, analysis, loops) behind `baseUrl`. */
  service: SignalFeedbackService;
  /** A supertest agent keeping cookies (a browser-like client). */
  agent(): ReturnType<typeof request.agent>;
  close(): Promise<void>;
}

/** Resets and migrates this run's database `dbName` (`runScoped`); returns its URL. */
export async function freshDatabase(dbName: string): Promise<string> {
  const databaseUrl = testDatabaseUrl(dbName);
  await resetAndMigrate(databaseUrl, path.join(__dirname, '../../prisma/migrations'));
  return databaseUrl;
}

/**
 * Starts the whole service as production runs it (`startService` with the composition root: config
 * parsed from an environment, Prisma, the rate limiter, the analysis and its schedule, the HTTP and
 * metrics listeners on free ports) against `databaseUrl` (or a fresh database named `dbName`);
 * `close()` runs the production shutdown steps.
 * @param env extra environment variables (e.g. LLM_BASE_URL, MAX_BATCH_SIZE)
 * @param overrides what the test replaces in the composition (its own logger or metrics registry)
 */
export async function startHarness(
  dbName: string,
  options: { env?: Record<string, string>; reuseDatabaseUrl?: string; overrides?: ComposeOverrides } = {},
): Promise<Harness> {
  const databaseUrl = options.reuseDatabaseUrl ?? (await freshDatabase(dbName));
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    METRICS_PORT: '0',
    SHUTDOWN_DRAIN_DELAY_MS: '0',
    LOG_LEVEL: 'silent',
    ARGON2_MEMORY_KIB: '4096',
    ANALYSIS_INTERVAL_MS: '0',
    VERIFICATION_INTERVAL_MS: '0',
    DATABASE_POOL_SIZE: '20',
    SIGNUP_MAX_PER_IP_PER_HOUR: '100000',
    ...options.env,
  });
  let composed: SignalFeedbackService | undefined;
  const running = await startService({
    name: 'signal-feedback',
    loadConfig: () => config,
    compose: async (context) => (composed = await compose(context, options.overrides)),
    bufferedLogs: false,
  });
  if (!composed) throw new Error('startService did not compose the service');
  const service = composed;
  const baseUrl = `http://127.0.0.1:${running.port}`;
  if (running.metricsPort === undefined) throw new Error('startService opened no metrics port');
  return {
    baseUrl,
    metricsUrl: `http://127.0.0.1:${running.metricsPort}`,
    databaseUrl,
    db: service.db,
    service,
    agent: () => request.agent(baseUrl),
    async close() {
      for (const step of running.shutdownSteps) await step.run();
    },
  };
}

/** A signed-in dashboard user: a cookie-keeping agent and the CSRF token. */
export interface SignedIn {
  agent: ReturnType<typeof request.agent>;
  csrf: string;
  userId: string;
  email: string;
}

let counter = 0;

/** Signs up a new user (unique e-mail) and returns the signed-in agent. */
export async function signUp(
  h: Harness,
  overrides: { email?: string; password?: string } = {},
): Promise<SignedIn> {
  const agent = h.agent();
  const email = overrides.email ?? `user${Date.now()}-${++counter}@example.com`;
  const res = await agent
    .post('/api/auth/signup')
    .send({ email, password: overrides.password ?? 'correct horse battery' });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { agent, csrf: res.body.csrf_token as string, userId: res.body.user.id as string, email };
}

/** Creates a product for a signed-in user; returns its id and key. */
export async function createProduct(
  user: SignedIn,
  name = 'Checkout app',
): Promise<{ id: string; apiKey: string }> {
  const res = await user.agent.post('/api/products').set('x-csrf-token', user.csrf).send({ name });
  if (res.status !== 200) throw new Error(`create product failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.id as string, apiKey: res.body.api_key as string };
}

/** Creates a context (defaults: a checkout flow with success/failure types). */
export async function createContext(
  user: SignedIn,
  productId: string,
  overrides: {
    name?: string;
    content?: string;
    positive_signals?: string[];
    negative_signals?: string[];
  } = {},
): Promise<{ id: string }> {
  const res = await user.agent
    .post('/api/context')
    .set('x-csrf-token', user.csrf)
    .send({
      product_id: productId,
      name: overrides.name ?? 'Checkout',
      content: overrides.content ?? 'Cart to payment confirmation',
      positive_signals: overrides.positive_signals ?? ['checkout_completed'],
      negative_signals: overrides.negative_signals ?? ['payment_failed', 'checkout_abandoned'],
    });
  if (res.status !== 201) throw new Error(`create context failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.id as string };
}

/** Polls `check` until it returns true or the deadline passes. */
export async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
