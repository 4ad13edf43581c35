import { Pool, type PoolConfig } from 'pg';
import type { SqlClient } from '../types';
import { PoolSqlClient } from '../pool-sql-client';

/**
 * The test database: `X402_TEST_DATABASE_URL` (each package's jest configuration names its own, so
 * suites running side by side never share a table), created by {@link prepareTestDatabase}.
 */
export const TEST_DATABASE_URL =
  process.env.X402_TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/x402_test';

/** A {@link PoolSqlClient} that owns its pool, with Prisma's interactive `$transaction` shape. */
export class PgSqlClient extends PoolSqlClient {
  /** The pool the statements run on (tests may query it directly). */
  declare readonly pool: Pool;

  /** @param config `pg` pool settings; default {@link TEST_DATABASE_URL}, 10 connections */
  constructor(config: PoolConfig = { connectionString: TEST_DATABASE_URL, max: 10 }) {
    const pool = new Pool(config);
    // The pool drops an idle connection the server closed (a test cutting its proxy); without a
    // listener that 'error' event would kill the test process.
    pool.on('error', () => undefined);
    super(pool);
  }

  /** Runs `work` in one transaction on one connection, like Prisma's interactive `$transaction`. */
  async transaction<T>(work: (tx: SqlClient) => Promise<T>): Promise<T> {
    const connection = await this.pool.connect();
    const tx: SqlClient = new PoolSqlClient(connection);
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

  /** Ends the pool. */
  async close(): Promise<void> {
    await this.pool.end();
  }
}
