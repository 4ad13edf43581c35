import type { Pool } from 'pg';
import { createLlmClient } from '@repo/llm';
import type { Logger } from '@repo/service-kit';
import { cookieSecure, llmSettings, type SignalFeedbackConfig } from './config';
import { AccountRepository } from './data/accounts';
import { AnalysisRepository } from './data/analysis';
import { createDbWithPool, type Db } from './data/prisma';
import { ProductRepository } from './data/products';
import { ProposalRepository } from './data/proposals';
import { AuthRateLimiter } from './data/rate-limits';
import { KeyOwnerCache } from './data/key-cache';
import { SignalRepository } from './data/signals';
import { AnalysisService } from './domain/analysis';
import { PasswordHasher } from './domain/passwords';
import { LlmProposalWriter } from './domain/proposal-writer';
import type { AppDeps } from './app';

/** The service's long-lived resources, built from the configuration. */
export interface Wiring {
  db: Db;
  /** The `pg` pool under Prisma, the ingestion queries and the rate limiter. */
  pool: Pool;
  analysis: AnalysisService;
  deps: AppDeps;
  /** Closes the pools (after the HTTP server and the schedule stopped). */
  close(): Promise<void>;
}

/**
 * Builds the repositories, the analysis (with the LLM writer when configured) and the app's
 * dependencies, as `main.ts`, the CLI and the tests use them.
 */
export function buildWiring(
  config: SignalFeedbackConfig,
  logger: Logger,
  extra: Partial<AppDeps> = {},
): Wiring {
  const { db, pool } = createDbWithPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const llm = llmSettings(config);
  const proposals = new ProposalRepository(db);
  const signals = new SignalRepository(pool);
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
    now: extra.now,
    onProposal: (source) => extra.events?.proposalCreated(source),
  });
  const deps: AppDeps = {
    logger,
    accounts: new AccountRepository(db),
    products: new ProductRepository(db),
    signals,
    keys: new KeyOwnerCache(signals, config.API_KEY_CACHE_TTL_MS),
    proposals,
    analysis,
    passwords: new PasswordHasher({ memoryKib: config.ARGON2_MEMORY_KIB, timeCost: config.ARGON2_TIME_COST }),
    limiter: new AuthRateLimiter(pool, {
      loginFreeFailures: config.LOGIN_FREE_FAILURES,
      maxDelaySeconds: config.LOGIN_MAX_DELAY_SECONDS,
      loginPerIp: config.LOGIN_MAX_ATTEMPTS_PER_IP,
      windowSeconds: config.LOGIN_WINDOW_SECONDS,
      signupPerIpPerHour: config.SIGNUP_MAX_PER_IP_PER_HOUR,
    }),
    maxBatch: config.MAX_BATCH_SIZE,
    sessionTtlMs: config.SESSION_TTL_HOURS * 3_600_000,
    secureCookies: cookieSecure(config),
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT,
    corsOrigins: config.CORS_ORIGINS?.split(',')
      .map((o) => o.trim())
      .filter(Boolean),
    ...extra,
  };
  return {
    db,
    pool,
    analysis,
    deps,
    async close() {
      await db.$disconnect();
      if (!pool.ended) await pool.end();
    },
  };
}
