import { scriptMatchesChecksum } from './checksum';
import { listLocalMigrations } from './migrations-dir';
import { connect, loadMigrationRecords, tablesInCurrentSchema, type MigrationRecord } from './prisma-table';

/**
 * State of one local migration folder against `_prisma_migrations`:
 * `applied` (finished), `pending` (no live row), `failed` (row with neither `finished_at` nor `rolled_back_at`).
 */
export type LocalMigrationState = 'applied' | 'pending' | 'failed';

/** One line of {@link MigrationStatus.migrations}. */
export interface LocalMigrationStatus {
  /** The migration folder name. */
  name: string;
  /** See {@link LocalMigrationState}. */
  state: LocalMigrationState;
  /** For an applied migration: true when the file no longer matches the recorded checksum. */
  modified: boolean;
}

/** Outcome of {@link migrationStatus}. */
export interface MigrationStatus {
  /** Whether `_prisma_migrations` exists (false for a database never migrated). */
  hasMigrationsTable: boolean;
  /** Every local migration folder, in lexical order. */
  migrations: LocalMigrationStatus[];
  /** Live (not rolled back) rows whose folder is missing locally. */
  appliedNotInDirectory: string[];
  /** True when nothing is pending or failed (Prisma's "Database schema is up to date!"). */
  upToDate: boolean;
}

/**
 * Compares a migrations directory with a database's `_prisma_migrations`, read-only (no lock, no
 * table creation), like `prisma migrate status`.
 *
 * @param options - `databaseUrl` (PostgreSQL URL; the database must exist) and `migrationsDir`
 * @returns the state of every local migration; see {@link MigrationStatus}
 * @throws DbMigrateError `invalid-migrations-dir` or `provider-mismatch`; connection errors from `pg` as thrown
 */
export async function migrationStatus(options: {
  databaseUrl: string;
  migrationsDir: string;
}): Promise<MigrationStatus> {
  const local = await listLocalMigrations(options.migrationsDir);
  const client = await connect(options.databaseUrl);
  let records: MigrationRecord[] = [];
  let hasMigrationsTable: boolean;
  try {
    hasMigrationsTable = (await tablesInCurrentSchema(client)).includes('_prisma_migrations');
    if (hasMigrationsTable) records = await loadMigrationRecords(client);
  } finally {
    await client.end().catch(() => undefined);
  }
  const live = records.filter((r) => r.rolledBackAt === null);
  const migrations = local.map((m): LocalMigrationStatus => {
    const rows = live.filter((r) => r.migrationName === m.name);
    const finished = rows.find((r) => r.finishedAt !== null);
    if (finished !== undefined) {
      return {
        name: m.name,
        state: 'applied',
        modified: !scriptMatchesChecksum(m.script, finished.checksum),
      };
    }
    return { name: m.name, state: rows.length > 0 ? 'failed' : 'pending', modified: false };
  });
  const localNames = new Set(local.map((m) => m.name));
  const appliedNotInDirectory = [...new Set(live.map((r) => r.migrationName))].filter(
    (n) => !localNames.has(n),
  );
  const upToDate = migrations.every((m) => m.state === 'applied') && live.every((r) => r.finishedAt !== null);
  return { hasMigrationsTable, migrations, appliedNotInDirectory, upToDate };
}
