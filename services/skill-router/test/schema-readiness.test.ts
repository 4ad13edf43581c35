import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { migrationsWithoutLast, schemaLogLines, shippedMigrations } from '@repo/db-migrate/testing';
import {
  readyStatus,
  spawnService,
  testDatabaseUrl,
  waitFor,
  type ServiceProcess,
} from '@repo/service-kit/testing';

// Real skill-router processes: from src/ (as in development) on a database one migration behind, and
// compiled into an image-like layout (as in the container) to show dist/ finds the same folder.
jest.setTimeout(120_000);

const run = promisify(execFile);
const PACKAGE_DIR = path.join(__dirname, '..');
const MIGRATIONS = path.join(PACKAGE_DIR, 'prisma', 'migrations');
const SHIPPED = shippedMigrations(MIGRATIONS);
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

/** A database of this run with the service's migrations applied, all of them or all but {@link LAST}. */
async function migratedDatabase(name: string, upTo: 'all' | 'all but the last'): Promise<string> {
  const databaseUrl = testDatabaseUrl(name);
  await resetDatabase(databaseUrl);
  let migrationsDir = MIGRATIONS;
  if (upTo !== 'all') {
    migrationsDir = migrationsWithoutLast(MIGRATIONS).dir;
    const copy = migrationsDir;
    cleanups.push(() => rmSync(copy, { recursive: true, force: true }));
  }
  await applyMigrations({ databaseUrl, migrationsDir, log: quiet });
  return databaseUrl;
}

async function spawn(cwd: string, databaseUrl: string, entry?: string): Promise<ServiceProcess> {
  const svc = await spawnService({
    cwd,
    ...(entry ? { entry } : {}),
    env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', WORKERS_ENABLED: 'false' },
  });
  cleanups.push(() => svc.stop());
  return svc;
}

describe('/readyz waits for the database schema', () => {
  it('When the database lacks the last migration this build ships, then /readyz answers 503 and the log names it; once it is applied, 200 and one info line', async () => {
    const databaseUrl = await migratedDatabase('skill_router_schema_behind_test', 'all but the last');
    const svc = await spawn(PACKAGE_DIR, databaseUrl);

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

  it('When compiled into the image layout (package.json, dist/, prisma/ under one folder), then it finds the prisma/migrations beside dist/, and refuses to start without it', async () => {
    // The image's /app/services/skill-router: the package.json, the compiled dist/ and prisma/. The
    // JavaScript comes from the service's own build configuration; type checking is the typecheck
    // task's job (and needs the workspace packages built). The workspace packages are loaded from
    // their sources through the service's node_modules.
    const image = path.join(tempDir('skill-router-image-'), 'services', 'skill-router');
    await run(
      process.execPath,
      [
        require.resolve('typescript/bin/tsc'),
        '-p',
        'tsconfig.build.json',
        '--noCheck',
        '--outDir',
        path.join(image, 'dist'),
      ],
      { cwd: PACKAGE_DIR },
    );
    cpSync(path.join(PACKAGE_DIR, 'package.json'), path.join(image, 'package.json'));
    symlinkSync(path.join(PACKAGE_DIR, 'node_modules'), path.join(image, 'node_modules'), 'dir');
    const databaseUrl = await migratedDatabase('skill_router_schema_dist_test', 'all');

    const refused = await spawn(image, databaseUrl, 'dist/main.js').then(
      () => 'started',
      (err: unknown) => String(err),
    );
    expect(refused).toContain(
      `Cannot read the migrations directory ${path.join(image, 'prisma', 'migrations')}.`,
    );

    cpSync(MIGRATIONS, path.join(image, 'prisma', 'migrations'), { recursive: true });
    const svc = await spawn(image, databaseUrl, 'dist/main.js');
    expect(await readyStatus(svc.baseUrl)).toBe(200);
    await waitFor('the info line', () => schemaLogLines(svc.output())[0]);
    expect(schemaLogLines(svc.output())).toEqual([
      expect.objectContaining({
        level: 30,
        migrations: SHIPPED.length,
        migrationsDir: path.join(image, 'prisma', 'migrations'),
      }),
    ]);
  });
});
