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
  /** The one `pg` pool: Prisma's driver adapter, hot-path SQL and the rate limiters all use it. */
  pool: Pool;
  /** `SELECT 1` through the pool; `false` on any error (for readiness). */
  ping(): Promise<boolean>;
  /** Disconnects Prisma and ends the pool; safe to call twice. */
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
 * The one database factory (docs/architecture.md, "Runtime"): one `pg` pool and the service's
 * generated Prisma client over it through the driver adapter (no native query engine). An idle
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
  const prisma = createClient(new PrismaPg(pool));
  let closing: Promise<void> | undefined;
  return {
    prisma,
    pool,
    ping: () =>
      pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
    close() {
      closing ??= (async () => {
        await prisma.$disconnect();
        if (!pool.ended) await pool.end();
      })();
      return closing;
    },
  };
}
