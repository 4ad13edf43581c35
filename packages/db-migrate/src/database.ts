import { Client } from 'pg';
import { DbMigrateError } from './errors';
import { parseDatabaseUrl, quoteIdent } from './url';

/**
 * Advisory lock class (first key of the two-key form) serialising database creation/drop on the
 * `postgres` maintenance database; the second key is `hashtext(<database name>)`.
 */
const DATABASE_LOCK_CLASS = 72707370;

async function withMaintenanceLock<T>(
  databaseUrl: string,
  fn: (client: Client, database: string) => Promise<T>,
): Promise<T> {
  const { database, maintenanceConnectionString } = parseDatabaseUrl(databaseUrl);
  const client = new Client({ connectionString: maintenanceConnectionString });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [DATABASE_LOCK_CLASS, database]);
    try {
      return await fn(client, database);
    } finally {
      await client
        .query('SELECT pg_advisory_unlock($1, hashtext($2))', [DATABASE_LOCK_CLASS, database])
        .catch(() => undefined);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function databaseExists(client: Client, database: string): Promise<boolean> {
  const res = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * Creates the database named in `databaseUrl` if it does not exist, connecting to the `postgres`
 * maintenance database of the same server with the same credentials. Concurrent calls (threads,
 * processes, replicas) are serialised by an advisory lock on the maintenance database, and a
 * "database already exists" race with other tools is treated as "not created".
 *
 * @param databaseUrl - PostgreSQL URL of the database to ensure; the user needs CREATEDB to create it
 * @returns true when this call created the database, false when it already existed
 * @throws DbMigrateError `invalid-url`; connection or permission errors from `pg` as thrown
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  return withMaintenanceLock(databaseUrl, async (client, database) => {
    if (await databaseExists(client, database)) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(database)}`);
      return true;
    } catch (err) {
      // 42P04 duplicate_database; 23505 when a concurrent CREATE DATABASE won the catalog insert.
      const code = (err as { code?: string }).code;
      if (code === '42P04' || code === '23505') return false;
      throw err;
    }
  });
}

/**
 * Drops the database named in `databaseUrl` (terminating its connections, `WITH (FORCE)`, PostgreSQL
 * 13+) and creates it again, empty. Meant for tests: it refuses any database whose name does not
 * contain `test` (e.g. `orders_test`).
 *
 * @param databaseUrl - PostgreSQL URL of the test database; the user needs CREATEDB and ownership
 * @throws DbMigrateError `unsafe-reset` when the name does not contain `test`; `invalid-url`;
 *   connection or permission errors from `pg` as thrown
 */
export async function resetDatabase(databaseUrl: string): Promise<void> {
  const { database } = parseDatabaseUrl(databaseUrl);
  if (!/test/i.test(database)) {
    throw new DbMigrateError(
      'unsafe-reset',
      `Refusing to reset the database "${database}": only databases whose name contains "test" can be reset.`,
    );
  }
  await withMaintenanceLock(databaseUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${quoteIdent(database)}`);
  });
}
