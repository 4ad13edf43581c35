import path from 'node:path';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { testDatabaseUrl } from '@repo/service-kit/testing';
import { openDatabase } from '../../src/data/prisma';

/**
 * Opens a fresh database for a suite that needs no running service: `dbName` (scoped to this run by
 * `testDatabaseUrl`) dropped, created and migrated with the package's migrations.
 * @returns the database (`prisma`, `pool`, `close()`); the suite closes it
 */
export async function openMigratedDatabase(dbName: string): Promise<ReturnType<typeof openDatabase>> {
  const databaseUrl = testDatabaseUrl(dbName);
  await resetDatabase(databaseUrl);
  await applyMigrations({
    databaseUrl,
    migrationsDir: path.join(__dirname, '../../prisma/migrations'),
    log: { info: () => undefined, warn: () => undefined },
  });
  return openDatabase(databaseUrl, 4);
}
