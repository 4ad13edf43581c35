import { applyMigrations } from './apply';
import { ensureDatabase } from './database';
import { isDbMigrateError } from './errors';
import { migrationStatus } from './status';
import { parseDatabaseUrl } from './url';

/** Where the CLI writes; `process.stdout`/`process.stderr` by default. */
export interface CliIo {
  /** Normal output, one line per call. */
  out(line: string): void;
  /** Warnings and errors, one line (or block) per call. */
  err(line: string): void;
  /** Environment variables (for `DATABASE_URL`). */
  env: Record<string, string | undefined>;
}

const USAGE = `Usage:
  db-migrate deploy [--migrations <dir>] [--url <postgresql-url>] [--create-db]
  db-migrate status [--migrations <dir>] [--url <postgresql-url>]

Applies Prisma migration folders (<dir>/<timestamp>_<name>/migration.sql) with Prisma's
_prisma_migrations bookkeeping, like \`prisma migrate deploy\`.

  --migrations   migrations directory (default: prisma/migrations)
  --url          database URL (default: $DATABASE_URL)
  --create-db    deploy only: create the database first if it does not exist

Exit status: 0 on success (status: up to date), 1 on failure (status: pending or failed migrations), 2 on usage errors.`;

interface ParsedArgs {
  command: 'deploy' | 'status';
  migrationsDir: string;
  url: string | undefined;
  createDb: boolean;
}

class UsageError extends Error {}

function parseArgs(argv: readonly string[]): ParsedArgs | 'help' {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') return 'help';
  if (command !== 'deploy' && command !== 'status') throw new UsageError(`Unknown command "${command}".`);
  const parsed: ParsedArgs = { command, migrationsDir: 'prisma/migrations', url: undefined, createDb: false };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    const [flag, inline] =
      arg.startsWith('--') && arg.includes('=')
        ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
        : [arg, undefined];
    const value = (): string => {
      const v = inline ?? rest[++i];
      if (v === undefined || v === '') throw new UsageError(`${flag} needs a value.`);
      return v;
    };
    if (flag === '--migrations') parsed.migrationsDir = value();
    else if (flag === '--url') parsed.url = value();
    else if (flag === '--create-db' && command === 'deploy' && inline === undefined) parsed.createDb = true;
    else if (flag === '--help' || flag === '-h') return 'help';
    else throw new UsageError(`Unknown option "${arg}" for ${command}.`);
  }
  return parsed;
}

function describeError(err: unknown): string {
  if (isDbMigrateError(err)) return `Error${err.prismaCode ? ` ${err.prismaCode}` : ''}: ${err.message}`;
  const e = err as { code?: string; message?: string };
  if (e.code === '3D000')
    return `Error: ${e.message ?? 'the database does not exist'} (use deploy --create-db to create it).`;
  if (e.code === 'ECONNREFUSED')
    return `Error: cannot reach the database server (${e.message ?? 'connection refused'}).`;
  return `Error: ${e.message ?? String(err)}`;
}

/**
 * Runs the `db-migrate` command line.
 *
 * @param argv - the arguments after the program name, e.g. `['deploy', '--create-db']`
 * @param io - output sinks and environment; defaults to the process's
 * @returns the exit status: 0 success (for `status`: up to date), 1 failure or not up to date, 2 usage error
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let args: ParsedArgs | 'help';
  try {
    args = parseArgs(argv);
  } catch (err) {
    io.err(`db-migrate: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args === 'help') {
    io.out(USAGE);
    return 0;
  }
  const databaseUrl = args.url ?? io.env.DATABASE_URL;
  if (databaseUrl === undefined || databaseUrl === '') {
    io.err('db-migrate: no database URL; pass --url or set DATABASE_URL.');
    return 2;
  }
  try {
    const { database } = parseDatabaseUrl(databaseUrl);
    if (args.command === 'deploy') {
      if (args.createDb && (await ensureDatabase(databaseUrl))) io.out(`Created database "${database}".`);
      const result = await applyMigrations({
        databaseUrl,
        migrationsDir: args.migrationsDir,
        log: { info: (m) => io.out(m), warn: (m) => io.err(`Warning: ${m}`) },
      });
      const total = result.applied.length + result.alreadyApplied.length;
      io.out(`${total} migration${total === 1 ? '' : 's'} found in ${args.migrationsDir}.`);
      if (result.applied.length === 0) io.out(`No pending migrations to apply to "${database}".`);
      else
        io.out(
          `Applied ${result.applied.length} migration(s) to "${database}": ${result.applied.join(', ')}`,
        );
      return 0;
    }
    const status = await migrationStatus({ databaseUrl, migrationsDir: args.migrationsDir });
    io.out(
      `${status.migrations.length} migration(s) found in ${args.migrationsDir}; database "${database}".`,
    );
    for (const m of status.migrations)
      io.out(`  ${m.state.padEnd(8)} ${m.name}${m.modified ? '  (modified after it was applied)' : ''}`);
    for (const n of status.appliedNotInDirectory)
      io.out(`  applied  ${n}  (not in the migrations directory)`);
    if (status.upToDate) {
      io.out('Database schema is up to date.');
      return 0;
    }
    io.out(
      'Database schema is not up to date: run `db-migrate deploy` (failed migrations need `prisma migrate resolve` first).',
    );
    return 1;
  } catch (err) {
    io.err(`db-migrate ${args.command} failed. ${describeError(err)}`);
    return 1;
  }
}

function processIo(): CliIo {
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    env: process.env,
  };
}
