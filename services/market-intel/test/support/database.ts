import path from 'node:path';
import { resetAndMigrate } from '@repo/db-migrate/testing';
import { testDatabaseUrl } from '@repo/service-kit/testing';
import { openDatabase } from '../../src/data/prisma';

/**
 * Opens a fresh database for a suite that needs no running service: `dbName` (scoped to this run by
 * `testDatabaseUrl`) dropped, created and migrated with the package's migrations.
 * @returns the database (`prisma`, `pool`, `close()`); the suite closes it
 */
export async function openMigratedDatabase(dbName: string): Promise<ReturnType<typeof openDatabase>> {
  const databaseUrl = testDatabaseUrl(dbName);
  await resetAndMigrate(databaseUrl, path.join(__dirname, '../../prisma/migrations'));
  return openDatabase(databaseUrl, 4);
}
