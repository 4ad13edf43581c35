import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig } from 'pg';
import type { SqlClient } from './types';

/** Most distinct statement texts a process prepares by name; texts past it run unnamed. */
const MAX_NAMED_STATEMENTS = 256;
const names = new Map<string, string>();

/** The prepared statement name of `sql` (derived from its text, so one per text on every connection). */
function statementName(sql: string): string | undefined {
  let name = names.get(sql);
  if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
    name = `x402_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
    names.set(sql, name);
  }
  return name;
}

/**
 * A {@link SqlClient} over a `pg` pool (or one checked-out connection) the caller owns: each statement
 * is one `query` with `$1…` parameters. The ledgers' statements cast what they read (`::text`,
 * `::int`), so rows read the same through it as through a Prisma client; the paid path uses it
 * because Prisma's raw-query layer cost about a sixth of a paid request's CPU (docs/benchmarks.md).
 * Statements are prepared by name on each connection (named after their text), so PostgreSQL parses
 * and plans each once per connection instead of on every payment. Errors are `pg`'s
 * `DatabaseError`s, unchanged.
 */
export class PoolSqlClient implements SqlClient {
  /** @param pool the pool (or connection) statements run on; never ended here */
  constructor(readonly pool: Pool | PoolClient) {}

  /** Runs one statement and returns its rows. */
  async $queryRawUnsafe<T = unknown>(sql: string, ...values: unknown[]): Promise<T> {
    const result = await this.pool.query(config(sql, values));
    return result.rows as T;
  }

  /** Runs one statement and returns the number of rows it touched (0 when the server gives none). */
  async $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number> {
    const result = await this.pool.query(config(sql, values));
    return result.rowCount ?? 0;
  }
}

function config(text: string, values: unknown[]): QueryConfig {
  const name = statementName(text);
  return name === undefined ? { text, values } : { name, text, values };
}
