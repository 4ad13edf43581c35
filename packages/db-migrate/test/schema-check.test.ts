import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Pool } from 'pg';
import { createBaseApp, createLogger, createReadiness } from '@repo/service-kit';
import { countQueries, runScoped, waitFor } from '@repo/service-kit/testing';
import {
  applyMigrations,
  createSchemaCheck,
  isDbMigrateError,
  packageMigrationsDir,
  resetDatabase,
  type SchemaCheckOptions,
} from '../src/index';
import { FIRST, FIRST_SQL, SECOND, SECOND_SQL, dbUrl, withClient, writeMigrations } from './helpers';

const quiet = { info: () => undefined, warn: () => undefined };
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function migrationsDir(migrations: Record<string, string>): Promise<string> {
  const dir = await writeMigrations(migrations);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh database of this run with `applied` applied, and a pool on it (as a service has). */
async function database(
  name: string,
  applied?: Record<string, string>,
): Promise<{ url: string; pool: Pool }> {
  const url = dbUrl(runScoped(`db_migrate_schema_${name}_test`));
  await resetDatabase(url);
  if (applied)
    await applyMigrations({ databaseUrl: url, migrationsDir: await migrationsDir(applied), log: quiet });
  const pool = new Pool({ connectionString: url, max: 2 });
  cleanups.push(() => pool.end());
  return { url, pool };
}

interface Line {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

/** The lines the check logged, and how often it flushed. */
function captureLogger(): { lines: Line[]; flushes: () => number; logger: SchemaCheckOptions['logger'] } {
  const lines: Line[] = [];
  let flushes = 0;
  return {
    lines,
    flushes: () => flushes,
    logger: {
      info: (fields, message) => lines.push({ level: 'info', fields, message }),
      warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
      flush: () => void flushes++,
    },
  };
}

/** `createBaseApp` answering `/readyz` from `createReadiness({ schema })`, as the services wire it. */
async function serveReadiness(isUpToDate: () => Promise<boolean>): Promise<string> {
  const readiness = createReadiness({ schema: isUpToDate });
  const app = createBaseApp({
    logger: createLogger({ name: 'schema-check-test', level: 'silent' }),
    isReady: readiness.isReady,
  });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return `http://127.0.0.1:${address.port}`;
}

const readyz = async (base: string): Promise<number> => (await fetch(`${base}/readyz`)).status;

/** The texts of the check's own queries among `queries`. */
const schemaQueries = (queries: string[]): string[] =>
  queries.filter((q) => q.includes('_prisma_migrations'));

describe('createSchemaCheck', () => {
  it('When the database lacks one migration the build ships, then /readyz answers 503 and one warn line names it and says what to do; once it is applied, 200 and one info line', async () => {
    const { url, pool } = await database('behind', { [FIRST]: FIRST_SQL });
    const shipped = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });
    const log = captureLogger();
    const check = await createSchemaCheck({
      pool,
      migrationsDir: shipped,
      logger: log.logger,
      recheckIntervalMs: 0,
    });
    const base = await serveReadiness(check.isUpToDate);

    for (let i = 0; i < 3; i++) expect(await readyz(base)).toBe(503);
    expect(log.lines).toHaveLength(1);
    const [warn] = log.lines;
    expect(warn).toMatchObject({ level: 'warn', fields: { check: 'schema', pending: [SECOND], failed: [] } });
    expect(warn?.message).toContain(SECOND);
    expect(warn?.message).not.toContain(FIRST);
    expect(warn?.message).toContain(
      "apply this release's migrations: the migrate Job, or `prisma migrate deploy`",
    );

    await applyMigrations({ databaseUrl: url, migrationsDir: shipped, log: quiet });
    expect(await readyz(base)).toBe(200);
    expect(await readyz(base)).toBe(200);
    expect(log.lines.slice(1)).toEqual([
      {
        level: 'info',
        fields: { check: 'schema', migrations: 2, ahead: [], migrationsDir: shipped },
        message: "database schema up to date: all 2 of this image's migrations are applied",
      },
    ]);
    // Each line is flushed at once: a not-ready pod serves nothing that would fill a log buffer.
    expect(log.flushes()).toBe(2);
  });

  it('When the database was never migrated, then it is not ready and every shipped migration is pending', async () => {
    const { pool } = await database('empty');
    const log = captureLogger();
    const check = await createSchemaCheck({
      pool,
      migrationsDir: await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL }),
      logger: log.logger,
    });
    expect(await check.isUpToDate()).toBe(false);
    expect(log.lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        fields: expect.objectContaining({ pending: [FIRST, SECOND] }),
      }),
    ]);
  });

  it('When a shipped migration has a failed row (started, not finished, not rolled back), then it is not ready and the warn line names it as failed; once it is resolved and applied, ready', async () => {
    const { url, pool } = await database('failed', { [FIRST]: FIRST_SQL });
    const broken = await migrationsDir({
      [FIRST]: FIRST_SQL,
      [SECOND]: 'CREATE TABLE "Gadget" (id nonsense_type);',
    });
    await expect(
      applyMigrations({ databaseUrl: url, migrationsDir: broken, log: quiet }),
    ).rejects.toMatchObject({
      code: 'migration-failed',
    });
    const shipped = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });
    const log = captureLogger();
    const check = await createSchemaCheck({
      pool,
      migrationsDir: shipped,
      logger: log.logger,
      recheckIntervalMs: 0,
    });
    const base = await serveReadiness(check.isUpToDate);

    expect(await readyz(base)).toBe(503);
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatchObject({ level: 'warn', fields: { pending: [], failed: [SECOND] } });
    expect(log.lines[0]?.message).toContain(`failed, or being applied right now (${SECOND})`);
    expect(log.lines[0]?.message).toContain('`prisma migrate resolve`');

    // What an operator does: mark the failed attempt rolled back, then apply the fixed migration.
    await withClient(url, (c) =>
      c.query('UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = $1', [SECOND]),
    );
    await applyMigrations({ databaseUrl: url, migrationsDir: shipped, log: quiet });
    expect(await readyz(base)).toBe(200);
    expect(log.lines.map((l) => l.level)).toEqual(['warn', 'info']);
  });

  it('When the database is ahead (rows for migrations the build does not ship: an older image in a rolling update), then it is ready and one info line names them', async () => {
    const { pool } = await database('ahead', { [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });
    const shipped = await migrationsDir({ [FIRST]: FIRST_SQL });
    const log = captureLogger();
    const check = await createSchemaCheck({ pool, migrationsDir: shipped, logger: log.logger });
    const base = await serveReadiness(check.isUpToDate);
    expect(await readyz(base)).toBe(200);
    expect(log.lines).toEqual([
      {
        level: 'info',
        fields: { check: 'schema', migrations: 1, ahead: [SECOND], migrationsDir: shipped },
        message: `database schema up to date: all 1 of this image's migrations are applied; the database also has 1 migration this image does not ship, normally a newer release's (${SECOND})`,
      },
    ]);
  });

  it("When a migration the build does not ship failed (a newer release's migrate Job), then it is still ready, with a warn line naming it", async () => {
    const { url, pool } = await database('ahead_failed', { [FIRST]: FIRST_SQL });
    const newer = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: 'SELECT nonsense FROM nowhere;' });
    await expect(
      applyMigrations({ databaseUrl: url, migrationsDir: newer, log: quiet }),
    ).rejects.toMatchObject({
      code: 'migration-failed',
    });
    const log = captureLogger();
    const check = await createSchemaCheck({
      pool,
      migrationsDir: await migrationsDir({ [FIRST]: FIRST_SQL }),
      logger: log.logger,
    });
    expect(await check.isUpToDate()).toBe(true);
    expect(log.lines.map((l) => [l.level, l.fields.ahead ?? l.fields.aheadUnfinished])).toEqual([
      ['info', []],
      ['warn', [SECOND]],
    ]);
  });

  it('When behind, then the database is asked at most once per recheck interval and once at a time, with the answer shared meanwhile; once up to date, never again', async () => {
    const { url, pool } = await database('cost', { [FIRST]: FIRST_SQL });
    const shipped = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });
    let clock = 1_000_000;
    const log = captureLogger();
    const { result: check, queries: atBoot } = await countQueries(() =>
      createSchemaCheck({
        pool,
        migrationsDir: shipped,
        logger: log.logger,
        recheckIntervalMs: 3000,
        now: () => clock,
      }),
    );
    expect(schemaQueries(atBoot)).toHaveLength(1);

    const probe = async (n: number): Promise<{ answers: boolean[]; asked: number }> => {
      const { result, queries } = await countQueries(() =>
        Promise.all(Array.from({ length: n }, () => check.isUpToDate())),
      );
      return { answers: result, asked: schemaQueries(queries).length };
    };
    clock += 2999;
    expect(await probe(3)).toEqual({ answers: [false, false, false], asked: 0 });
    clock += 1;
    expect(await probe(3)).toEqual({ answers: [false, false, false], asked: 1 });

    await applyMigrations({ databaseUrl: url, migrationsDir: shipped, log: quiet });
    expect(await probe(1)).toEqual({ answers: [false], asked: 0 });
    clock += 3000;
    expect(await probe(2)).toEqual({ answers: [true, true], asked: 1 });
    clock += 60_000;
    expect(await probe(5)).toEqual({ answers: [true, true, true, true, true], asked: 0 });
    expect(log.lines.map((l) => l.level)).toEqual(['warn', 'info']);
  });

  it('When the query hangs (its table is locked), then the check answers false within the query timeout, logs why, and recovers once the lock is gone', async () => {
    const { url, pool } = await database('hung', { [FIRST]: FIRST_SQL });
    const shipped = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });
    const log = captureLogger();
    const locker = new Client({ connectionString: url });
    await locker.connect();
    cleanups.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE _prisma_migrations IN ACCESS EXCLUSIVE MODE');
    const started = Date.now();
    const check = await createSchemaCheck({
      pool,
      migrationsDir: shipped,
      logger: log.logger,
      recheckIntervalMs: 0,
      queryTimeoutMs: 300,
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await check.isUpToDate()).toBe(false);
    expect(log.lines[0]).toMatchObject({ level: 'warn', fields: { error: 'Query read timeout' } });

    await locker.query('ROLLBACK');
    await waitFor('the pending migration to be reported', () =>
      check.isUpToDate().then(() => log.lines.some((l) => l.fields.pending !== undefined)),
    );
    await applyMigrations({ databaseUrl: url, migrationsDir: shipped, log: quiet });
    expect(await check.isUpToDate()).toBe(true);
  });

  it('When the database cannot be reached, then it is not ready and one warn line gives the error', async () => {
    const pool = new Pool({
      connectionString: dbUrl(runScoped('db_migrate_schema_missing_db_test')),
      max: 1,
    });
    cleanups.push(() => pool.end());
    await withClient(dbUrl('postgres'), (c) =>
      c.query(`DROP DATABASE IF EXISTS "${runScoped('db_migrate_schema_missing_db_test')}"`),
    );
    const log = captureLogger();
    const check = await createSchemaCheck({
      pool,
      migrationsDir: await migrationsDir({ [FIRST]: FIRST_SQL }),
      logger: log.logger,
      recheckIntervalMs: 0,
    });
    expect(await check.isUpToDate()).toBe(false);
    expect(await check.isUpToDate()).toBe(false);
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]?.message).toMatch(/^cannot read the applied migrations .*does not exist/);
  });

  it('When the migrations folder is missing, or holds no migration, then it refuses to start with an error naming the folder', async () => {
    const { pool } = await database('no_dir');
    const missing = path.join(tmpdir(), 'db-migrate-schema-no-such-dir');
    const error = await createSchemaCheck({ pool, migrationsDir: missing, logger: quiet }).catch(
      (e: unknown) => e,
    );
    expect(isDbMigrateError(error) && error.code).toBe('invalid-migrations-dir');
    expect((error as Error).message).toContain(missing);

    const empty = await migrationsDir({});
    const none = await createSchemaCheck({ pool, migrationsDir: empty, logger: quiet }).catch(
      (e: unknown) => e,
    );
    expect(isDbMigrateError(none) && none.code).toBe('invalid-migrations-dir');
    expect((none as Error).message).toContain(`${empty} holds no migration folder`);
  });
});

describe('packageMigrationsDir', () => {
  it("When called from a package's src/ or dist/ (at any depth), then it gives the package's prisma/migrations", async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'db-migrate-package-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const pkg = path.join(root, 'app', 'services', 'some-service');
    for (const dir of ['src/entry-points', 'dist/entry-points', 'prisma/migrations'])
      await mkdir(path.join(pkg, dir), { recursive: true });
    await writeFile(path.join(root, 'app', 'package.json'), '{}');
    await writeFile(path.join(pkg, 'package.json'), '{}');
    const expected = path.join(pkg, 'prisma', 'migrations');
    for (const from of ['src', 'dist', 'dist/entry-points', 'src/entry-points', '.'])
      expect(packageMigrationsDir(path.join(pkg, from))).toBe(expected);
  });
});
