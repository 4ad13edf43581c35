import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from '../generated/prisma/client';

// A connection attempt to an unreachable PostgreSQL fails after 5 s instead of hanging requests and shutdown.
const CONNECT_TIMEOUT_MS = 5000;

/** The generated Prisma client of skill-router's database. */
export type PrismaDb = PrismaClient;

/** The database handles: Prisma over a `pg` pool, and the same pool for the rate limiter's store. */
export interface Db {
  prisma: PrismaClient;
  pool: Pool;
  /** Disconnects Prisma and ends the pool. */
  close(): Promise<void>;
}

/**
 * Creates one `pg` pool and the Prisma client over it (driver adapter, no native query engine).
 * @param databaseUrl a PostgreSQL URL, e.g. `postgresql://postgres@127.0.0.1:5432/skill_router`
 * @param poolSize maximum connections in the pool
 */
export function createDb(databaseUrl: string, poolSize = 10): Db {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    prisma,
    pool,
    async close() {
      await prisma.$disconnect();
      if (!pool.ended) await pool.end();
    },
  };
}
