import { Pool, type PoolConfig } from 'pg';
import type { SqlClient } from '../../src/index';

/** The test database (created by global-setup.ts). */
export const TEST_DATABASE_URL =
  process.env.X402_TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/x402_test';

/** A {@link SqlClient} over a `pg` pool — the same surface a Prisma client offers. */
export class PgSqlClient implements SqlClient {
  readonly pool: Pool;

  constructor(config: PoolConfig = { connectionString: TEST_DATABASE_URL, max: 10 }) {
    this.pool = new Pool(config);
  }

  async $queryRawUnsafe<T = unknown>(sql: string, ...values: unknown[]): Promise<T> {
    const result = await this.pool.query(sql, values);
    return result.rows as T;
  }

  async $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number> {
    const result = await this.pool.query(sql, values);
    return result.rowCount ?? 0;
  }

  /** Runs `work` in one transaction on one connection, like Prisma's interactive `$transaction`. */
  async transaction<T>(work: (tx: SqlClient) => Promise<T>): Promise<T> {
    const connection = await this.pool.connect();
    const tx: SqlClient = {
      $queryRawUnsafe: async <R = unknown>(sql: string, ...values: unknown[]) =>
        (await connection.query(sql, values)).rows as R,
      $executeRawUnsafe: async (sql: string, ...values: unknown[]) =>
        (await connection.query(sql, values)).rowCount ?? 0,
    };
    try {
      await connection.query('BEGIN');
      const result = await work(tx);
      await connection.query('COMMIT');
      return result;
    } catch (error) {
      await connection.query('ROLLBACK');
      throw error;
    } finally {
      connection.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
