import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { migrationChecksum } from './checksum';
import { DbMigrateError } from './errors';

/** One migration folder of a Prisma migrations directory. */
export interface LocalMigration {
  /** The folder name, `<timestamp>_<name>`; this is `_prisma_migrations.migration_name`. */
  name: string;
  /** Absolute path of the folder's `migration.sql`. */
  scriptPath: string;
  /** The `migration.sql` text (UTF-8), sent to PostgreSQL as is. */
  script: string;
  /** Prisma's checksum of the file: hex SHA-256 of its bytes (see {@link migrationChecksum}). */
  checksum: string;
}

/**
 * Reads the provider from `migration_lock.toml` the way Prisma does (first line starting with
 * `provider`, `provider = ` and the quotes stripped).
 *
 * @param migrationsDir - the migrations directory
 * @returns the provider, or `undefined` when there is no lock file
 */
export async function readLockProvider(migrationsDir: string): Promise<string | undefined> {
  let content: string;
  try {
    content = await readFile(path.join(migrationsDir, 'migration_lock.toml'), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const line = content.split(/\r?\n/).find((l) => l.startsWith('provider'));
  if (line === undefined) return '<PROVIDER NOT FOUND>';
  return line.replace(/^provider = /, '').replace(/^"+|"+$/g, '');
}

/**
 * Lists the migration folders of a Prisma migrations directory in lexical (byte) order, which for
 * Prisma's `<UTC timestamp>_<name>` folders is the order they were created and must be applied.
 * Plain files (such as `migration_lock.toml`) are ignored. The lock file's provider, when present,
 * must be `postgresql`.
 *
 * @param migrationsDir - e.g. `prisma/migrations`, absolute or relative to the working directory
 * @returns the migrations with their scripts and checksums
 * @throws DbMigrateError `invalid-migrations-dir` when the directory does not exist or a folder has no
 *   `migration.sql`; `provider-mismatch` when the lock file names another provider
 */
export async function listLocalMigrations(migrationsDir: string): Promise<LocalMigration[]> {
  const dir = path.resolve(migrationsDir);
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw new DbMigrateError('invalid-migrations-dir', `Cannot read the migrations directory ${dir}.`, {
      cause: err,
    });
  }
  const provider = await readLockProvider(dir);
  if (provider !== undefined && provider !== 'postgresql') {
    throw new DbMigrateError(
      'provider-mismatch',
      `${path.join(dir, 'migration_lock.toml')} names the provider "${provider}"; this tool only applies postgresql migrations.`,
    );
  }
  const names: string[] = [];
  for (const entry of entries) {
    if (entry.isDirectory()) names.push(entry.name);
    else if (entry.isSymbolicLink() && (await stat(path.join(dir, entry.name))).isDirectory())
      names.push(entry.name);
  }
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const migrations: LocalMigration[] = [];
  for (const name of names) {
    const scriptPath = path.join(dir, name, 'migration.sql');
    let bytes: Buffer;
    try {
      bytes = await readFile(scriptPath);
    } catch (err) {
      throw new DbMigrateError(
        'invalid-migrations-dir',
        `The migration folder ${name} has no readable migration.sql.`,
        {
          migrationName: name,
          cause: err,
        },
      );
    }
    migrations.push({ name, scriptPath, script: bytes.toString('utf8'), checksum: migrationChecksum(bytes) });
  }
  return migrations;
}
