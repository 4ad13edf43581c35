import type { Pool, PoolClient } from 'pg';
import type { SqlClient } from './ledger';

/**
 * A {@link SqlClient} over a `pg` pool (or one checked-out connection) the caller owns: each statement
 * is one `query` with `$1…` parameters. The ledgers' statements cast what they read (`::text`,
 * `::int`), so rows read the same through it as through a Prisma client; the paid path uses it
 * because Prisma's raw-query layer cost about a sixth of a paid request's CPU (docs/benchmarks.md).
 * Errors are `pg`'s `DatabaseError`s, unchanged.
 */
export class PoolSqlClient implements SqlClient {
  /** @param pool the pool (or connection) statements run on; never ended here */
  constructor(readonly pool: Pool | PoolClient) {}

  /** Runs one statement and returns its rows. */
  async $queryRawUnsafe<T = unknown>(sql: string, ...values: unknown[]): Promise<T> {
    const result = await this.pool.query(sql, values);
    return result.rows as T;
  }

  /** Runs one statement and returns the number of rows it touched (0 when the server gives none). */
  async $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number> {
    const result = await this.pool.query(sql, values);
    return result.rowCount ?? 0;
  }
}
