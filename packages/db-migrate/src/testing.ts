import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { applyMigrations } from './apply';
import { resetDatabase } from './database';

/**
 * The migration folder names of a Prisma migrations directory, in the order they are applied (for
 * tests of the schema readiness check: packages/db-migrate/README.md, "Readiness").
 */
export function shippedMigrations(migrationsDir: string): string[] {
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/**
 * Copies a migrations directory into a new temporary directory without its last migration: applied,
 * it leaves a database one migration behind the build. The caller removes the directory.
 *
 * @returns the copy's path and the name of the migration left out
 */
export function migrationsWithoutLast(migrationsDir: string): { dir: string; last: string } {
  const last = shippedMigrations(migrationsDir).at(-1) ?? '';
  const dir = mkdtempSync(path.join(tmpdir(), 'migrations-without-last-'));
  cpSync(migrationsDir, dir, { recursive: true, filter: (source) => path.basename(source) !== last });
  return { dir, last };
}

/** The schema check's log lines (`check: 'schema'`) among a process's pino JSON output. */
export function schemaLogLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.check === 'schema');
}

/**
 * Drops and creates the database at `databaseUrl`, then applies the migrations of `migrationsDir`
 * without logging: a fresh schema for a test suite.
 * @throws Error when PostgreSQL refuses the reset or a migration fails
 */
export async function resetAndMigrate(databaseUrl: string, migrationsDir: string): Promise<void> {
  await resetDatabase(databaseUrl);
  await applyMigrations({
    databaseUrl,
    migrationsDir,
    log: { info: () => undefined, warn: () => undefined },
  });
}
