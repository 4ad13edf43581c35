import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Client } from 'pg';
import { runScoped } from '@repo/service-kit/testing';
import {
  ensureDatabase,
  isDbMigrateError,
  migrationChecksum,
  resetDatabase,
  runCli,
  scriptMatchesChecksum,
} from '../src/index';
import { FIRST, FIRST_SQL, SERVER, dbUrl, sha256Hex, withClient, writeMigrations } from './helpers';

async function dropDatabase(name: string): Promise<void> {
  await withClient(`${SERVER}/postgres`, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

async function databaseExists(name: string): Promise<boolean> {
  return withClient(
    `${SERVER}/postgres`,
    async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1,
  );
}

describe('ensureDatabase', () => {
  it('When called twice concurrently for a missing database, then it is created once and exactly one call reports creating it', async () => {
    const name = runScoped('db_migrate_ensure_test');
    await dropDatabase(name);

    const results = await Promise.all([ensureDatabase(dbUrl(name)), ensureDatabase(dbUrl(name))]);

    expect(results.sort()).toEqual([false, true]);
    expect(await databaseExists(name)).toBe(true);
    expect(await ensureDatabase(dbUrl(name))).toBe(false);
  });

  it('When the database name needs quoting, then it is still created', async () => {
    const name = runScoped('db-migrate "quoted" test');
    await dropDatabase(name.replace(/"/g, '""'));

    expect(await ensureDatabase(dbUrl(encodeURIComponent(name)))).toBe(true);
    expect(await databaseExists(name)).toBe(true);
    await dropDatabase(name.replace(/"/g, '""'));
  });
});

describe('resetDatabase', () => {
  it('When the database name does not contain "test", then it refuses and drops nothing', async () => {
    await expect(resetDatabase(dbUrl('postgres'))).rejects.toMatchObject({ code: 'unsafe-reset' });
    const err = await resetDatabase(dbUrl('orders')).catch((e: unknown) => e);
    expect(isDbMigrateError(err) && err.code).toBe('unsafe-reset');
    expect(await databaseExists('postgres')).toBe(true);
  });

  it('When a test database has tables and open connections, then it is dropped and recreated empty', async () => {
    const url = dbUrl(runScoped('db_migrate_reset_test'));
    await ensureDatabase(url);
    const open = new Client({ connectionString: url });
    const terminated = new Promise<Error>((resolve) => open.on('error', resolve));
    await open.connect();
    await open.query('CREATE TABLE IF NOT EXISTS leftover (id INTEGER)');

    await resetDatabase(url);

    expect((await terminated).message).toMatch(/terminat/);
    const tables = await withClient(
      url,
      async (c) => (await c.query(`SELECT to_regclass('leftover') AS t`)).rows[0].t,
    );
    expect(tables).toBeNull();
  });
});

describe('checksum', () => {
  it('When computed, then it is the zero-padded hex SHA-256 of the file\'s bytes (Prisma\'s own test vector for "hello")', () => {
    expect(migrationChecksum('hello')).toBe(
      '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
    );
    expect(migrationChecksum(Buffer.from(FIRST_SQL))).toBe(sha256Hex(FIRST_SQL));
  });

  it("When compared, then line-ending variants match and other edits do not (Prisma's rules)", () => {
    expect(scriptMatchesChecksum('ab\r\ncd\r\n', migrationChecksum('ab\ncd\n'))).toBe(true);
    expect(scriptMatchesChecksum('ab\ncd\n', migrationChecksum('ab\r\ncd\r\n'))).toBe(true);
    expect(scriptMatchesChecksum('abc\n', migrationChecksum('abc'))).toBe(false);
  });
});

describe('CLI', () => {
  function io(env: Record<string, string | undefined> = {}) {
    const out: string[] = [];
    const err: string[] = [];
    return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l), env } };
  }

  it('When deploy --create-db runs against a missing database, then it creates it, applies, and status then exits 0', async () => {
    const name = runScoped('db_migrate_cli_test');
    await dropDatabase(name);
    const dir = await writeMigrations({ [FIRST]: FIRST_SQL });
    try {
      const deploy = io({ DATABASE_URL: dbUrl(name) });
      expect(await runCli(['deploy', '--migrations', dir, '--create-db'], deploy.io)).toBe(0);
      expect(deploy.out.join('\n')).toContain(`Created database "${name}"`);
      expect(deploy.out.join('\n')).toContain(FIRST);

      const status = io();
      expect(await runCli(['status', `--migrations=${dir}`, '--url', dbUrl(name)], status.io)).toBe(0);
      expect(status.out.join('\n')).toContain('up to date');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('When deploy targets a missing database without --create-db, or gets no URL, then it fails with a clear message', async () => {
    const name = runScoped('db_migrate_cli_missing_test');
    await dropDatabase(name);
    const dir = await writeMigrations({ [FIRST]: FIRST_SQL });
    try {
      const missing = io();
      expect(await runCli(['deploy', '--migrations', dir, '--url', dbUrl(name)], missing.io)).toBe(1);
      expect(missing.err.join('\n')).toMatch(/does not exist.*--create-db/);

      const noUrl = io();
      expect(await runCli(['deploy'], noUrl.io)).toBe(2);
      expect(noUrl.err.join('\n')).toContain('DATABASE_URL');

      const bad = io();
      expect(await runCli(['migrate'], bad.io)).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('When the bin shim is run with node in development (no dist), then it runs the TypeScript CLI and sets the exit code', async () => {
    const bin = path.join(__dirname, '..', 'bin', 'db-migrate.js');
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [bin, ...args],
          { env: { ...process.env, DATABASE_URL: '' } },
          (error, stdout, stderr) => {
            resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
          },
        );
      });

    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('db-migrate deploy');
    const noUrl = await run(['status']);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('DATABASE_URL');
  });
});
