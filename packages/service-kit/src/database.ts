import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';

// A connection attempt to an unreachable PostgreSQL fails after 5 s instead of hanging requests and shutdown.
const CONNECT_TIMEOUT_MS = 5000;

/** What the factory needs of a generated Prisma client. */
export interface PrismaLike {
  $disconnect(): Promise<void>;
}

/** A service's database handles: its Prisma client and the `pg` pool under it, shared with raw queries. */
export interface Database<P extends PrismaLike> {
  prisma: P;
  /** The main `pg` pool: Prisma's driver adapter and hot-path SQL use it. */
  pool: Pool;
  /**
   * A small pool for rate-limit counters (`createRateLimit`), whose connections commit
   * asynchronously (`synchronous_commit = off`): a limiter's upsert on a hot key holds the row lock
   * until its commit, and waiting for the WAL flush there serialises every request of that key
   * (measured: 517 against 6,979 upserts/s on one key at 16 clients). A database crash can lose the
   * last few hundred milliseconds of counts, never consistency; nothing else may use this pool.
   * Connections open on first use.
   */
  rateLimitPool: Pool;
  /** `SELECT 1` through the pool; `false` on any error (for readiness). */
  ping(): Promise<boolean>;
  /** Disconnects Prisma and ends both pools; safe to call twice. */
  close(): Promise<void>;
}

/** Options of {@link createDatabase}. */
export interface DatabaseOptions {
  /** A PostgreSQL URL, e.g. `postgresql://postgres@127.0.0.1:5432/skill_router`. */
  url: string;
  /** Maximum connections in the pool (default 10). */
  poolSize?: number;
  /** Milliseconds before a connection attempt fails (default 5000). */
  connectTimeoutMs?: number;
}

/**
 * The one database factory (docs/architecture.md, "Runtime"): the main `pg` pool and the service's
 * generated Prisma client over it through the driver adapter (no native query engine), plus the
 * rate-limit counters' pool. An idle
 * client losing its connection is ignored instead of crashing the process; the next query reconnects.
 * @param createClient builds the generated client, e.g. `(adapter) => new PrismaClient({ adapter })`
 */
export function createDatabase<P extends PrismaLike>(
  createClient: (adapter: PrismaPg) => P,
  options: DatabaseOptions,
): Database<P> {
  const pool = new Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
  });
  pool.on('error', () => undefined);
  const rateLimitPool = new Pool({
    connectionString: options.url,
    max: 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    options: '-c synchronous_commit=off',
  });
  rateLimitPool.on('error', () => undefined);
  const prisma = createClient(new PrismaPg(pool));
  let closing: Promise<void> | undefined;
  return {
    prisma,
    pool,
    rateLimitPool,
    ping: () =>
      pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
    close() {
      closing ??= (async () => {
        await prisma.$disconnect();
        if (!pool.ended) await pool.end();
        if (!rateLimitPool.ended) await rateLimitPool.end();
      })();
      return closing;
    },
  };
}
