import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runScoped } from '@repo/service-kit/testing';
import {
  applyMigrations,
  isDbMigrateError,
  migrationStatus,
  resetDatabase,
  PRISMA_MIGRATE_LOCK_KEY,
  type DbMigrateError,
} from '../src/index';
import {
  FIRST,
  FIRST_SQL,
  SECOND,
  SECOND_SQL,
  captureLog,
  dbUrl,
  sha256Hex,
  withClient,
  writeMigrations,
} from './helpers';

const dirs: string[] = [];
async function migrationsDir(migrations: Record<string, string>, provider?: string): Promise<string> {
  const dir = await writeMigrations(migrations, provider);
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function freshDb(name: string, query = ''): Promise<string> {
  const url = dbUrl(runScoped(`db_migrate_${name}_test`), query);
  await resetDatabase(url);
  return url;
}

async function rows(url: string, schema = 'public') {
  return withClient(url, async (c) => {
    const res = await c.query(
      `SELECT id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count
         FROM ${schema}._prisma_migrations ORDER BY migration_name, started_at`,
    );
    return res.rows as Array<{
      id: string;
      checksum: string;
      finished_at: Date | null;
      migration_name: string;
      logs: string | null;
      rolled_back_at: Date | null;
      started_at: Date;
      applied_steps_count: number;
    }>;
  });
}

async function tableExists(url: string, table: string, schema = 'public'): Promise<boolean> {
  return withClient(url, async (c) => {
    const res = await c.query('SELECT to_regclass($1) AS t', [`${schema}."${table}"`]);
    return res.rows[0].t !== null;
  });
}

async function caught(p: Promise<unknown>): Promise<DbMigrateError> {
  try {
    await p;
  } catch (err) {
    if (isDbMigrateError(err)) return err;
    throw err;
  }
  throw new Error('expected a DbMigrateError');
}

describe('applyMigrations', () => {
  it('When two migrations are applied to a fresh database, then both are recorded like Prisma records them and their tables exist', async () => {
    const url = await freshDb('fresh');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });

    const result = await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });

    expect(result).toEqual({ applied: [FIRST, SECOND], alreadyApplied: [] });
    const recorded = await rows(url);
    expect(recorded.map((r) => r.migration_name)).toEqual([FIRST, SECOND]);
    expect(recorded.map((r) => r.checksum)).toEqual([sha256Hex(FIRST_SQL), sha256Hex(SECOND_SQL)]);
    for (const r of recorded) {
      expect(r.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(r.finished_at).toBeInstanceOf(Date);
      expect(r.finished_at!.getTime()).toBeGreaterThanOrEqual(r.started_at.getTime());
      expect(r.applied_steps_count).toBe(1);
      expect(r.logs).toBeNull();
      expect(r.rolled_back_at).toBeNull();
    }
    expect(await tableExists(url, 'Widget')).toBe(true);
    expect(await tableExists(url, 'Gadget')).toBe(true);
  });

  it("When the bookkeeping table is created, then its columns, types, nullability, defaults and primary key are Prisma's", async () => {
    const url = await freshDb('ddl');
    await applyMigrations({
      databaseUrl: url,
      migrationsDir: await migrationsDir({}),
      log: captureLog().log,
    });

    const columns = await withClient(url, async (c) => {
      const res = await c.query(
        `SELECT column_name, data_type, character_maximum_length, is_nullable, column_default
           FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
      );
      return res.rows;
    });
    expect(columns).toEqual([
      {
        column_name: 'id',
        data_type: 'character varying',
        character_maximum_length: 36,
        is_nullable: 'NO',
        column_default: null,
      },
      {
        column_name: 'checksum',
        data_type: 'character varying',
        character_maximum_length: 64,
        is_nullable: 'NO',
        column_default: null,
      },
      {
        column_name: 'finished_at',
        data_type: 'timestamp with time zone',
        character_maximum_length: null,
        is_nullable: 'YES',
        column_default: null,
      },
      {
        column_name: 'migration_name',
        data_type: 'character varying',
        character_maximum_length: 255,
        is_nullable: 'NO',
        column_default: null,
      },
      {
        column_name: 'logs',
        data_type: 'text',
        character_maximum_length: null,
        is_nullable: 'YES',
        column_default: null,
      },
      {
        column_name: 'rolled_back_at',
        data_type: 'timestamp with time zone',
        character_maximum_length: null,
        is_nullable: 'YES',
        column_default: null,
      },
      {
        column_name: 'started_at',
        data_type: 'timestamp with time zone',
        character_maximum_length: null,
        is_nullable: 'NO',
        column_default: 'now()',
      },
      {
        column_name: 'applied_steps_count',
        data_type: 'integer',
        character_maximum_length: null,
        is_nullable: 'NO',
        column_default: '0',
      },
    ]);
    const pk = await withClient(
      url,
      async (c) =>
        (
          await c.query(
            `SELECT conname FROM pg_constraint WHERE conrelid = '_prisma_migrations'::regclass AND contype = 'p'`,
          )
        ).rows,
    );
    expect(pk).toEqual([{ conname: '_prisma_migrations_pkey' }]);
  });

  it('When applied again, then nothing is applied and both are reported as already applied', async () => {
    const url = await freshDb('again');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });
    await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });
    const before = await rows(url);

    const capture = captureLog();
    const result = await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: capture.log });

    expect(result).toEqual({ applied: [], alreadyApplied: [FIRST, SECOND] });
    expect(await rows(url)).toEqual(before);
    expect(capture.warn).toEqual([]);
  });

  it('When a new migration folder is added later, then only it is applied', async () => {
    const url = await freshDb('later');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL });
    await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });
    await migrationsDirAdd(dir, SECOND, SECOND_SQL);

    const result = await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });

    expect(result).toEqual({ applied: [SECOND], alreadyApplied: [FIRST] });
  });

  it('When an applied migration file is edited, then a warning names it and it is not re-applied', async () => {
    const url = await freshDb('edited');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });
    await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });
    await writeFile(path.join(dir, FIRST, 'migration.sql'), `${FIRST_SQL}-- edited afterwards\n`);

    const capture = captureLog();
    const result = await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: capture.log });

    expect(result.applied).toEqual([]);
    expect(capture.warn).toHaveLength(1);
    expect(capture.warn[0]).toContain(FIRST);
    expect(capture.warn[0]).toContain('modified after it was applied');
    expect((await rows(url))[0]?.checksum).toBe(sha256Hex(FIRST_SQL));
  });

  it('When an applied migration only has its line endings changed to CRLF, then no warning (Prisma compares line-ending-agnostically)', async () => {
    const url = await freshDb('crlf');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL });
    await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });
    await writeFile(path.join(dir, FIRST, 'migration.sql'), FIRST_SQL.replace(/\n/g, '\r\n'));

    const capture = captureLog();
    await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: capture.log });

    expect(capture.warn).toEqual([]);
  });

  it('When a migration fails, then the error names it, its changes are rolled back, the row is recorded as failed, and the next run refuses (P3009)', async () => {
    const url = await freshDb('broken');
    const broken = '20250103000000_broken';
    const brokenSql = 'CREATE TABLE "Partial" ("id" INTEGER);\nSELECT * FROM "does_not_exist";\n';
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL, [broken]: brokenSql, [SECOND]: SECOND_SQL });
    // Lexical order: FIRST, SECOND, then the broken one.

    const err = await caught(
      applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log }),
    );

    expect(err.code).toBe('migration-failed');
    expect(err.prismaCode).toBe('P3018');
    expect(err.migrationName).toBe(broken);
    expect(err.message).toContain(broken);
    expect(err.message).toContain('does_not_exist');
    expect(await tableExists(url, 'Partial')).toBe(false);
    const failed = (await rows(url)).find((r) => r.migration_name === broken);
    expect(failed).toMatchObject({
      finished_at: null,
      rolled_back_at: null,
      applied_steps_count: 0,
      checksum: sha256Hex(brokenSql),
    });
    expect(failed?.logs).toContain(`Migration name: ${broken}`);
    expect(failed?.logs).toContain('Database error code: 42P01');

    const again = await caught(
      applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log }),
    );
    expect(again.code).toBe('failed-migrations');
    expect(again.prismaCode).toBe('P3009');
    expect(again.message).toContain(broken);
  });

  it('When a failed migration is marked rolled back (prisma migrate resolve --rolled-back) and fixed, then it is applied again', async () => {
    const url = await freshDb('resolved');
    const broken = '20250103000000_fixable';
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL, [broken]: 'SELECT * FROM "missing";\n' });
    await caught(applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log }));
    await withClient(url, (c) =>
      c.query('UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = $1', [broken]),
    );
    const fixedSql = 'CREATE TABLE "Fixed" ("id" INTEGER);\n';
    await writeFile(path.join(dir, broken, 'migration.sql'), fixedSql);

    const result = await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });

    expect(result).toEqual({ applied: [broken], alreadyApplied: [FIRST] });
    const attempts = (await rows(url)).filter((r) => r.migration_name === broken);
    expect(attempts).toHaveLength(2);
    expect(attempts.filter((r) => r.finished_at !== null).map((r) => r.checksum)).toEqual([
      sha256Hex(fixedSql),
    ]);
  });

  it('When five appliers run at once, then each migration is applied exactly once', async () => {
    const url = await freshDb('concurrent');
    // Not idempotent: a second application would fail with "relation already exists".
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL, [SECOND]: SECOND_SQL });

    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log }),
      ),
    );

    expect(results.flatMap((r) => r.applied).sort()).toEqual([FIRST, SECOND]);
    for (const r of results) expect([...r.applied, ...r.alreadyApplied].sort()).toEqual([FIRST, SECOND]);
    const recorded = await rows(url);
    expect(recorded.map((r) => r.migration_name)).toEqual([FIRST, SECOND]);
    expect(recorded.every((r) => r.finished_at !== null)).toBe(true);
  });

  it("When another session holds Prisma's migrate lock longer than the timeout, then the applier gives up with lock-timeout", async () => {
    const url = await freshDb('locked');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL });
    await withClient(url, async (holder) => {
      await holder.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
      const err = await caught(
        applyMigrations({ databaseUrl: url, migrationsDir: dir, lockTimeoutMs: 200, log: captureLog().log }),
      );
      expect(err.code).toBe('lock-timeout');
    });
    expect(await tableExists(url, 'Widget')).toBe(false);
  });

  it('When the schema already has tables but no _prisma_migrations, then it refuses like Prisma (P3005)', async () => {
    const url = await freshDb('notempty');
    await withClient(url, (c) => c.query('CREATE TABLE legacy (id INTEGER)'));
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL });

    const err = await caught(
      applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log }),
    );

    expect(err.code).toBe('schema-not-empty');
    expect(err.prismaCode).toBe('P3005');
    expect(err.message).toContain('legacy');
  });

  it('When the URL has ?schema=, then the bookkeeping and the migrated tables live in that schema', async () => {
    const url = await freshDb('schema', '?schema=billing');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL });

    await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });

    expect(await tableExists(url, 'Widget', 'billing')).toBe(true);
    expect(await tableExists(url, 'Widget', 'public')).toBe(false);
    expect((await rows(url, 'billing')).map((r) => r.migration_name)).toEqual([FIRST]);
  });

  it("When a migration is comment-only (Prisma's empty migration), then it is recorded as applied", async () => {
    const url = await freshDb('empty');
    const dir = await migrationsDir({ '20250101000000_empty': '-- This is an empty migration.' });

    const result = await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });

    expect(result.applied).toEqual(['20250101000000_empty']);
    expect((await rows(url))[0]).toMatchObject({
      applied_steps_count: 1,
      checksum: sha256Hex('-- This is an empty migration.'),
    });
  });

  it('When migration_lock.toml names another provider, then nothing is applied (P3019)', async () => {
    const url = await freshDb('provider');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL }, 'mysql');

    const err = await caught(
      applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log }),
    );

    expect(err.code).toBe('provider-mismatch');
    expect(await tableExists(url, '_prisma_migrations')).toBe(false);
  });

  it('When status is asked, then pending, applied, modified and failed migrations are told apart', async () => {
    const url = await freshDb('status');
    const dir = await migrationsDir({ [FIRST]: FIRST_SQL });
    expect((await migrationStatus({ databaseUrl: url, migrationsDir: dir })).hasMigrationsTable).toBe(false);
    await applyMigrations({ databaseUrl: url, migrationsDir: dir, log: captureLog().log });
    await writeFile(path.join(dir, FIRST, 'migration.sql'), `${FIRST_SQL}-- edited\n`);
    await migrationsDirAdd(dir, SECOND, SECOND_SQL);

    const status = await migrationStatus({ databaseUrl: url, migrationsDir: dir });

    expect(status).toEqual({
      hasMigrationsTable: true,
      migrations: [
        { name: FIRST, state: 'applied', modified: true },
        { name: SECOND, state: 'pending', modified: false },
      ],
      appliedNotInDirectory: [],
      upToDate: false,
    });
  });
});

async function migrationsDirAdd(dir: string, name: string, sql: string): Promise<void> {
  const { mkdir } = await import('node:fs/promises');
  await mkdir(path.join(dir, name));
  await writeFile(path.join(dir, name, 'migration.sql'), sql);
}
