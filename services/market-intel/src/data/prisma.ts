import { createDatabase, type Database } from '@repo/service-kit';
import { PrismaClient } from '../generated/prisma/client';

/** The generated Prisma client of market-intel's database. */
export type Db = PrismaClient;

/**
 * The service's database: one `pg` pool shared by Prisma (through the driver adapter) and the raw
 * queries and rate limits.
 * @param databaseUrl a PostgreSQL URL, e.g. `postgresql://postgres@127.0.0.1:5432/market_intel`
 * @param poolSize maximum connections in the pool
 */
export function openDatabase(databaseUrl: string, poolSize = 10): Database<Db> {
  return createDatabase((adapter) => new PrismaClient({ adapter }), { url: databaseUrl, poolSize });
}
