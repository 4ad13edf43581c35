import { rmSync } from 'node:fs';
import path from 'node:path';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { migrationsWithoutLast, schemaLogLines, shippedMigrations } from '@repo/db-migrate/testing';
import { readyStatus, spawnService, testDatabaseUrl, waitFor } from '@repo/service-kit/testing';

// A real signal-feedback process (src/main.ts) on a database one migration behind. That the compiled
// dist/ finds prisma/ the same way is shown by skill-router's test of the same name (the same call).
jest.setTimeout(90_000);

const PACKAGE_DIR = path.join(__dirname, '..');
const MIGRATIONS = path.join(PACKAGE_DIR, 'prisma', 'migrations');
const SHIPPED = shippedMigrations(MIGRATIONS);
const LAST = SHIPPED[SHIPPED.length - 1] ?? '';
const quiet = { info: () => undefined, warn: () => undefined };

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A database of this run with every migration of the service applied but {@link LAST}. */
async function databaseOneBehind(name: string): Promise<string> {
  const databaseUrl = testDatabaseUrl(name);
  await resetDatabase(databaseUrl);
  const { dir: migrationsDir } = migrationsWithoutLast(MIGRATIONS);
  cleanups.push(() => rmSync(migrationsDir, { recursive: true, force: true }));
  await applyMigrations({ databaseUrl, migrationsDir, log: quiet });
  return databaseUrl;
}

describe('/readyz waits for the database schema', () => {
  it('When the database lacks the last migration this build ships, then /readyz answers 503 and the log names it; once it is applied, 200 and one info line', async () => {
    const databaseUrl = await databaseOneBehind('signal_feedback_schema_behind_test');
    const svc = await spawnService({
      cwd: PACKAGE_DIR,
      env: {
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'info',
        ARGON2_MEMORY_KIB: '4096',
        ANALYSIS_INTERVAL_MS: '0',
      },
    });
    cleanups.push(() => svc.stop());

    expect(await readyStatus(svc.baseUrl)).toBe(503);
    expect(await readyStatus(svc.baseUrl)).toBe(503);
    const warn = await waitFor('the warn line', () => schemaLogLines(svc.output())[0]);
    expect(warn).toMatchObject({ level: 40, pending: [LAST], failed: [], migrationsDir: MIGRATIONS });
    expect(warn?.msg).toContain(LAST);
    expect(warn?.msg).toContain(
      "apply this release's migrations: the migrate Job, or `prisma migrate deploy`",
    );

    await applyMigrations({ databaseUrl, migrationsDir: MIGRATIONS, log: quiet });
    await waitFor('/readyz to answer 200', async () => (await readyStatus(svc.baseUrl)) === 200, 15_000);
    expect(await readyStatus(svc.baseUrl)).toBe(200);
    await waitFor('the info line', () => schemaLogLines(svc.output())[1]);
    expect(schemaLogLines(svc.output()).slice(1)).toEqual([
      expect.objectContaining({
        level: 30,
        migrations: SHIPPED.length,
        ahead: [],
        msg: `database schema up to date: all ${SHIPPED.length} of this image's migrations are applied`,
      }),
    ]);
  });
});
