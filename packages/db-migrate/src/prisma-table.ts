import { Client } from 'pg';
import { parseDatabaseUrl, quoteIdent } from './url';

/**
 * The advisory lock key `prisma migrate deploy` takes on PostgreSQL (`SELECT pg_advisory_lock(72707369)`
 * in prisma-engines' postgres flavour), so this applier and Prisma exclude each other.
 */
export const PRISMA_MIGRATE_LOCK_KEY = 72707369;

/**
 * Prisma's DDL for the bookkeeping table on PostgreSQL, verbatim from prisma-engines
 * (`sql-schema-connector/src/flavour/postgres.rs`, `create_migrations_table`).
 */
export const PRISMA_MIGRATIONS_TABLE_DDL = `CREATE TABLE _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
);
`;

/** Tables Prisma ignores when deciding whether a schema is empty (PostGIS). */
const IGNORED_TABLES = [/^spatial_ref_sys$/i, /^geometry_columns$/i];

/** One row of `_prisma_migrations`. */
export interface MigrationRecord {
  /** Random UUID (text). */
  id: string;
  /** Hex SHA-256 of the script when it was applied. */
  checksum: string;
  /** When the migration completed successfully; `null` while running or after a failure. */
  finishedAt: Date | null;
  /** The migration folder name. */
  migrationName: string;
  /** Error report of a failed attempt, else `null` (or `''` for `prisma migrate resolve --applied`). */
  logs: string | null;
  /** Set by `prisma migrate resolve --rolled-back`: the row is then ignored. */
  rolledBackAt: Date | null;
  /** When applying started. */
  startedAt: Date;
  /** 1 once the script ran successfully, else 0. */
  appliedStepsCount: number;
}

interface MigrationRow {
  id: string;
  checksum: string;
  finished_at: Date | null;
  migration_name: string;
  logs: string | null;
  rolled_back_at: Date | null;
  started_at: Date;
  applied_steps_count: number;
}

/**
 * Opens a `pg` client on the database of `databaseUrl`, with `search_path` set to Prisma's `?schema=`
 * (created if missing, as Prisma's schema engine does) when the URL has one.
 *
 * @param databaseUrl - the PostgreSQL URL
 * @returns a connected client; the caller ends it
 */
export async function connect(databaseUrl: string): Promise<Client> {
  const { connectionString, schema } = parseDatabaseUrl(databaseUrl);
  const client = new Client({ connectionString });
  // A dropped connection must surface as a rejected query, not as an unhandled 'error' event.
  client.on('error', () => undefined);
  await client.connect();
  try {
    if (schema !== undefined) {
      const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      await client.query(`SET search_path TO ${quoteIdent(schema)}`);
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/**
 * Lists the ordinary tables of the current schema, as Prisma does before creating its table.
 *
 * @param client - a connected client
 * @returns the table names
 */
export async function tablesInCurrentSchema(client: Client): Promise<string[]> {
  const res = await client.query<{ table_name: string }>(
    `SELECT c.relname AS table_name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = current_schema()`,
  );
  return res.rows.map((r) => r.table_name);
}

/**
 * Whether a table counts for Prisma's "schema is not empty" check.
 *
 * @param name - a table name
 * @returns false for PostGIS system tables, which Prisma ignores
 */
export function tableCounts(name: string): boolean {
  return !IGNORED_TABLES.some((re) => re.test(name));
}

/**
 * Reads `_prisma_migrations`, ordered by `started_at` like Prisma's `list_migrations`.
 *
 * @param client - a connected client whose search_path finds the table
 * @returns all rows
 */
export async function loadMigrationRecords(client: Client): Promise<MigrationRecord[]> {
  const res = await client.query<MigrationRow>(
    `SELECT id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count
       FROM _prisma_migrations ORDER BY started_at ASC`,
  );
  return res.rows.map((r) => ({
    id: r.id,
    checksum: r.checksum,
    finishedAt: r.finished_at,
    migrationName: r.migration_name,
    logs: r.logs,
    rolledBackAt: r.rolled_back_at,
    startedAt: r.started_at,
    appliedStepsCount: r.applied_steps_count,
  }));
}

/**
 * The rows Prisma treats as failed: not finished and not rolled back.
 *
 * @param records - all rows of `_prisma_migrations`
 * @returns the failed rows
 */
export function failedRecords(records: readonly MigrationRecord[]): MigrationRecord[] {
  return records.filter((r) => r.finishedAt === null && r.rolledBackAt === null);
}
