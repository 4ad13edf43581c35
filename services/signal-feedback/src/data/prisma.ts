import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from '../generated/prisma/client';

// A connection attempt to an unreachable PostgreSQL fails after 5 s instead of hanging requests and shutdown.
const CONNECT_TIMEOUT_MS = 5000;

/** The generated Prisma client of signal-feedback's database. */
export type Db = PrismaClient;

/**
 * Creates the Prisma client over the `pg` driver adapter (no native query engine).
 * @param databaseUrl a PostgreSQL URL, e.g. `postgresql://postgres@127.0.0.1:5432/signal_feedback`
 * @param poolSize maximum connections in the pool
 */
export function createDb(databaseUrl: string, poolSize = 10): Db {
  return new PrismaClient({
    adapter: new PrismaPg({
      connectionString: databaseUrl,
      max: poolSize,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    }),
  });
}

/**
 * The service's `pg` pool and a Prisma client over it, so raw hot-path queries, the rate limiter and
 * Prisma share one set of connections.
 * @param poolSize maximum connections in the pool
 */
export function createDbWithPool(databaseUrl: string, poolSize = 10): { db: Db; pool: Pool } {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  return { db: new PrismaClient({ adapter: new PrismaPg(pool) }), pool };
}
