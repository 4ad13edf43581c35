import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { readyStatus, spawnService, testDatabaseUrl, waitFor } from '@repo/service-kit/testing';

// A real signal-feedback process (src/main.ts) on a database one migration behind. That the compiled
// dist/ finds prisma/ the same way is shown by skill-router's test of the same name (the same call).
jest.setTimeout(90_000);

const PACKAGE_DIR = path.join(__dirname, '..');
const MIGRATIONS = path.join(PACKAGE_DIR, 'prisma', 'migrations');
const SHIPPED = readdirSync(MIGRATIONS, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();
const LAST = SHIPPED[SHIPPED.length - 1] ?? '';
const quiet = { info: () => undefined, warn: () => undefined };

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A database of this run with every migration of the service applied but {@link LAST}. */
async function databaseOneBehind(name: string): Promise<string> {
  const databaseUrl = testDatabaseUrl(name);
  await resetDatabase(databaseUrl);
  const migrationsDir = tempDir('signal-feedback-migrations-');
  cpSync(MIGRATIONS, migrationsDir, { recursive: true, filter: (source) => path.basename(source) !== LAST });
  await applyMigrations({ databaseUrl, migrationsDir, log: quiet });
  return databaseUrl;
}

/** The schema check's log lines (pino JSON) in `output`. */
function schemaLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.check === 'schema');
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
    const warn = await waitFor('the warn line', () => schemaLines(svc.output())[0]);
    expect(warn).toMatchObject({ level: 40, pending: [LAST], failed: [], migrationsDir: MIGRATIONS });
    expect(warn?.msg).toContain(LAST);
    expect(warn?.msg).toContain(
      "apply this release's migrations: the migrate Job, or `prisma migrate deploy`",
    );

    await applyMigrations({ databaseUrl, migrationsDir: MIGRATIONS, log: quiet });
    await waitFor('/readyz to answer 200', async () => (await readyStatus(svc.baseUrl)) === 200, 15_000);
    expect(await readyStatus(svc.baseUrl)).toBe(200);
    await waitFor('the info line', () => schemaLines(svc.output())[1]);
    expect(schemaLines(svc.output()).slice(1)).toEqual([
      expect.objectContaining({
        level: 30,
        migrations: SHIPPED.length,
        ahead: [],
        msg: `database schema up to date: all ${SHIPPED.length} of this image's migrations are applied`,
      }),
    ]);
  });
});
