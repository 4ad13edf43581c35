import { randomUUID } from 'node:crypto';
import type { Client } from 'pg';
import { scriptMatchesChecksum } from './checksum';
import { DbMigrateError } from './errors';
import { listLocalMigrations, type LocalMigration } from './migrations-dir';
import {
  PRISMA_MIGRATE_LOCK_KEY,
  PRISMA_MIGRATIONS_TABLE_DDL,
  connect,
  failedRecords,
  loadMigrationRecords,
  tableCounts,
  tablesInCurrentSchema,
  type MigrationRecord,
} from './prisma-table';

/** Where progress and warnings go. Both methods receive one line of text. */
export interface MigrateLogger {
  /** Progress: a migration is being applied, or was applied. */
  info(message: string): void;
  /** Something worth a look that does not stop the run, e.g. an applied migration edited afterwards. */
  warn(message: string): void;
}

/** Input of {@link applyMigrations}. */
export interface ApplyMigrationsOptions {
  /** PostgreSQL URL of the target database (it must exist; see {@link ensureDatabase}). Prisma's `?schema=` is honoured. */
  databaseUrl: string;
  /** The Prisma migrations directory, e.g. `prisma/migrations` (absolute or relative to the working directory). */
  migrationsDir: string;
  /** Receives progress and warnings; by default progress is dropped and warnings go to `console.warn`. */
  log?: MigrateLogger;
  /**
   * How long to wait for the migration advisory lock while another applier (or `prisma migrate deploy`)
   * holds it, in milliseconds. Default 300 000 (5 minutes).
   */
  lockTimeoutMs?: number;
}

/** Outcome of {@link applyMigrations}: migration folder names, each list in application order. */
export interface ApplyMigrationsResult {
  /** Migrations applied by this call. */
  applied: string[];
  /** Migrations found already applied (finished) in `_prisma_migrations`. */
  alreadyApplied: string[];
}

const DEFAULT_LOCK_TIMEOUT_MS = 300_000;

const defaultLogger: MigrateLogger = {
  info: () => undefined,
  warn: (message) => console.warn(message),
};

/**
 * Applies the pending migrations of a Prisma migrations directory to a PostgreSQL database, keeping
 * `_prisma_migrations` exactly as `prisma migrate deploy` does, so either tool can take over from the
 * other.
 *
 * Steps, mirroring prisma-engines' `apply_migrations` command:
 * 1. reads the migration folders (lexical order) and checks `migration_lock.toml`'s provider;
 * 2. takes the session advisory lock `pg_advisory_lock(72707369)` (Prisma's key) for the whole run, so
 *    concurrent replicas/Jobs apply each migration once;
 * 3. creates `_prisma_migrations` with Prisma's DDL if missing, refusing (P3005) when the schema
 *    already holds other tables;
 * 4. refuses (P3009) while any row is failed (`finished_at` and `rolled_back_at` both null);
 * 5. for each folder with no row (rows marked rolled back are ignored): inserts the row (uuid,
 *    checksum, started_at, `applied_steps_count` 0), runs the script as one multi-statement simple
 *    query (PostgreSQL runs it in one implicit transaction unless the script has its own
 *    BEGIN/COMMIT), then sets `applied_steps_count` = 1 and `finished_at`. On failure the row keeps
 *    `finished_at` null and gets Prisma's P3018 report in `logs`.
 *
 * An already-applied migration whose file no longer matches its recorded checksum (Prisma's
 * line-ending-tolerant comparison) is reported through `log.warn` and not re-applied.
 *
 * @param options - see {@link ApplyMigrationsOptions}
 * @returns the names applied now and the names that were already applied
 * @throws DbMigrateError `invalid-migrations-dir`, `provider-mismatch`, `lock-timeout`,
 *   `schema-not-empty` (P3005), `failed-migrations` (P3009), or `migration-failed` (P3018, with
 *   `migrationName` and the PostgreSQL error as `cause`); connection errors from `pg` as thrown
 */
export async function applyMigrations(options: ApplyMigrationsOptions): Promise<ApplyMigrationsResult> {
  const log = options.log ?? defaultLogger;
  const local = await listLocalMigrations(options.migrationsDir);
  const client = await connect(options.databaseUrl);
  try {
    await acquireLock(client, options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS);
    try {
      return await applyLocked(client, local, log);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function acquireLock(client: Client, timeoutMs: number): Promise<void> {
  // lock_timeout bounds the wait for the advisory lock; it is reset before any migration runs.
  await client.query(`SET lock_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
  } catch (err) {
    if ((err as { code?: string }).code === '55P03') {
      throw new DbMigrateError(
        'lock-timeout',
        `Timed out after ${timeoutMs} ms waiting for the migration advisory lock (${PRISMA_MIGRATE_LOCK_KEY}); ` +
          'another db-migrate or prisma migrate deploy is running against this database.',
        { cause: err },
      );
    }
    throw err;
  } finally {
    await client.query('RESET lock_timeout');
  }
}

async function ensureMigrationsTable(client: Client): Promise<void> {
  const tables = await tablesInCurrentSchema(client);
  if (tables.includes('_prisma_migrations')) return;
  const others = tables.filter(tableCounts);
  if (others.length > 0) {
    throw new DbMigrateError(
      'schema-not-empty',
      `The database schema is not empty (tables: ${others.join(', ')}) and has no _prisma_migrations table. ` +
        'Baseline it first: https://pris.ly/d/migrate-baseline',
    );
  }
  await client.query(PRISMA_MIGRATIONS_TABLE_DDL);
}

function describeFailed(failed: readonly MigrationRecord[]): string {
  return failed
    .map((r) => {
      const logs = r.logs?.trim() ? ` with the following logs:\n${r.logs.trim()}` : '';
      return `The \`${r.migrationName}\` migration started at ${r.startedAt.toISOString()} failed${logs}`;
    })
    .join('\n');
}

async function applyLocked(
  client: Client,
  local: LocalMigration[],
  log: MigrateLogger,
): Promise<ApplyMigrationsResult> {
  await ensureMigrationsTable(client);
  const records = await loadMigrationRecords(client);
  const failed = failedRecords(records);
  if (failed.length > 0) {
    throw new DbMigrateError(
      'failed-migrations',
      'Found failed migrations in the target database, new migrations will not be applied. ' +
        'Fix the database, then mark the migration with `prisma migrate resolve --rolled-back <name>` (to re-run it) ' +
        'or `--applied <name>`: https://pris.ly/d/migrate-resolve\n' +
        describeFailed(failed),
      { migrationName: failed[0]?.migrationName },
    );
  }
  const live = records.filter((r) => r.rolledBackAt === null);
  const applied: string[] = [];
  const alreadyApplied: string[] = [];
  for (const migration of local) {
    const existing = live.find((r) => r.migrationName === migration.name);
    if (existing !== undefined) {
      alreadyApplied.push(migration.name);
      if (!scriptMatchesChecksum(migration.script, existing.checksum)) {
        log.warn(
          `The migration \`${migration.name}\` was modified after it was applied ` +
            `(recorded checksum ${existing.checksum}, file ${migration.checksum}); it is not re-applied.`,
        );
      }
      continue;
    }
    log.info(`Applying migration \`${migration.name}\``);
    await applyOne(client, migration);
    applied.push(migration.name);
  }
  return { applied, alreadyApplied };
}

async function applyOne(client: Client, migration: LocalMigration): Promise<void> {
  const id = randomUUID();
  await client.query(
    'INSERT INTO _prisma_migrations (id, checksum, started_at, migration_name) VALUES ($1, $2, $3, $4)',
    [id, migration.checksum, new Date(), migration.name],
  );
  try {
    // No parameters: pg uses the simple query protocol, which accepts several statements.
    await client.query(migration.script);
  } catch (err) {
    // If the script opened its own transaction, leave it so the bookkeeping below can run.
    await client.query('ROLLBACK').catch(() => undefined);
    const pgErr = err as { code?: string; message?: string };
    const code = pgErr.code ?? 'none';
    const logs =
      'A migration failed to apply. New migrations cannot be applied before the error is recovered from. ' +
      'Read more about how to resolve migration issues in a production database: https://pris.ly/d/migrate-resolve\n\n' +
      `Migration name: ${migration.name}\n\nDatabase error code: ${code}\n\nDatabase error:\n${pgErr.message ?? String(err)}\n`;
    await client.query('UPDATE _prisma_migrations SET logs = $2 WHERE id = $1', [id, logs]);
    throw new DbMigrateError(
      'migration-failed',
      `Migration \`${migration.name}\` failed to apply (database error ${code}): ${pgErr.message ?? String(err)}`,
      { migrationName: migration.name, cause: err },
    );
  }
  await client.query(
    'UPDATE _prisma_migrations SET applied_steps_count = applied_steps_count + 1, finished_at = $2 WHERE id = $1',
    [id, new Date()],
  );
}
