import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Pool, QueryConfig } from 'pg';
import { DbMigrateError } from './errors';
import { listLocalMigrations } from './migrations-dir';

/**
 * Where {@link createSchemaCheck} reports: fields first, then the message, as pino takes them (a
 * service passes its pino logger as is).
 */
export interface SchemaCheckLogger {
  /** The schema became up to date (once per process). */
  info(fields: Record<string, unknown>, message: string): void;
  /** The schema is behind, `_prisma_migrations` cannot be read, or a newer release's migration never finished. */
  warn(fields: Record<string, unknown>, message: string): void;
  /**
   * Called after each line when present. A buffered logger (pino with `minLength`) would otherwise
   * keep the explanation of a not-ready pod in memory: such a pod serves no traffic that would fill
   * the buffer.
   */
  flush?(): void;
}

/** Options of {@link createSchemaCheck}. */
export interface SchemaCheckOptions {
  /**
   * The service's own `pg` pool (`Database.pool` of `@repo/service-kit`): one short query per check
   * while the schema is behind, none once it is up to date. `_prisma_migrations` is found through the
   * pool's `search_path`, like the service's own tables; the pool's `connectionTimeoutMillis` bounds
   * the wait for a connection (5 s in `createDatabase`).
   */
  pool: Pick<Pool, 'query'>;
  /** The migrations this build ships, e.g. `packageMigrationsDir(__dirname)`. */
  migrationsDir: string;
  /** The service's logger; see {@link SchemaCheckLogger}. */
  logger: SchemaCheckLogger;
  /**
   * While the schema is behind, how long an answer is reused before the database is asked again, in
   * milliseconds (default 3000; probes come every 5 s per replica).
   */
  recheckIntervalMs?: number;
  /** How long one query may take before it counts as failed, in milliseconds (default 5000). */
  queryTimeoutMs?: number;
  /** The clock of {@link SchemaCheckOptions.recheckIntervalMs}, in milliseconds (default `Date.now`). */
  now?: () => number;
}

/** A readiness check on the database schema; see {@link createSchemaCheck}. */
export interface SchemaCheck {
  /**
   * The readiness check (`createReadiness({ schema: check.isUpToDate })`): `true` once every migration
   * this build ships is applied (finished, not rolled back) in the database. Never throws: a query
   * that fails or times out answers `false`.
   */
  isUpToDate(): Promise<boolean>;
  /** The migration folder names this build ships, in the order they are applied. */
  readonly shipped: readonly string[];
}

const DEFAULT_RECHECK_INTERVAL_MS = 3000;
const DEFAULT_QUERY_TIMEOUT_MS = 5000;

const WHAT_TO_DO = "apply this release's migrations: the migrate Job, or `prisma migrate deploy`";

/** One live row of `_prisma_migrations`, reduced to what readiness needs. */
interface LiveRow {
  migration_name: string;
  finished: boolean;
}

/** What one look at `_prisma_migrations` found. */
type SchemaState =
  | {
      kind: 'behind';
      /** Shipped migrations with no live row. */
      pending: string[];
      /** Shipped migrations whose live rows are all unfinished (failed, or being applied now). */
      failed: string[];
    }
  | {
      kind: 'up-to-date';
      /** Finished migrations this build does not ship (normally a newer release's). */
      ahead: string[];
      /** Unfinished migrations this build does not ship (a newer release's, failed or in progress). */
      aheadUnfinished: string[];
    }
  | { kind: 'unreadable'; error: string };

const list = (names: readonly string[]): string => names.join(', ');
const migrations = (n: number): string => `${n} migration${n === 1 ? '' : 's'}`;

/**
 * Sorts the live rows against the shipped names, with the rules of `migrationStatus`: a migration
 * with a finished live row is applied; one whose live rows are all unfinished is failed.
 */
function classify(shipped: readonly string[], rows: readonly LiveRow[]): SchemaState {
  const finished = new Set(rows.filter((r) => r.finished).map((r) => r.migration_name));
  const started = new Set(rows.map((r) => r.migration_name));
  const pending = shipped.filter((name) => !started.has(name));
  const failed = shipped.filter((name) => started.has(name) && !finished.has(name));
  if (pending.length > 0 || failed.length > 0) return { kind: 'behind', pending, failed };
  const known = new Set(shipped);
  const extra = [...started].filter((name) => !known.has(name)).sort();
  return {
    kind: 'up-to-date',
    ahead: extra.filter((name) => finished.has(name)),
    aheadUnfinished: extra.filter((name) => !finished.has(name)),
  };
}

/**
 * Builds the readiness check "schema" of a database-backed service (packages/db-migrate/README.md,
 * "Readiness"): not ready until every migration folder the build ships
 * is applied to the service's database, so that during a rolling update a new pod takes no traffic
 * before this release's migrate Job has run. A database that is ahead (rows for migrations this build
 * does not ship: an older image during a rolling update) is ready.
 *
 * Reads the migrations directory and looks at the database once before returning (so the boot log
 * says where the schema stands). Afterwards:
 * - once up to date it never queries again (a schema does not go back within a process's life);
 * - while behind, it asks the database at most once per `recheckIntervalMs` and never twice at the
 *   same time: checks in between get the last answer, or share the query in flight;
 * - it logs once per change of what it found, not per probe: at warn the pending and failed migration
 *   names (or the query error) and what to do; at info, once, that the schema is up to date, naming
 *   the migrations the database has beyond this build; at warn, also once, those of them that never
 *   finished.
 *
 * @param options - see {@link SchemaCheckOptions}
 * @returns the check and the shipped migration names
 * @throws DbMigrateError `invalid-migrations-dir` when the directory is missing or unreadable, a
 *   folder has no `migration.sql`, or it holds no migration at all (a build that ships no migrations
 *   must not pass for one whose database is up to date); `provider-mismatch` when its lock file names
 *   another provider than postgresql
 */
export async function createSchemaCheck(options: SchemaCheckOptions): Promise<SchemaCheck> {
  const dir = path.resolve(options.migrationsDir);
  const shipped = (await listLocalMigrations(dir)).map((m) => m.name);
  if (shipped.length === 0) {
    throw new DbMigrateError(
      'invalid-migrations-dir',
      `The migrations directory ${dir} holds no migration folder: the schema readiness check needs the migrations this build ships.`,
    );
  }
  const { pool, logger } = options;
  const recheckIntervalMs = options.recheckIntervalMs ?? DEFAULT_RECHECK_INTERVAL_MS;
  const now = options.now ?? Date.now;
  // pg reads `query_timeout` from a query's config (lib/client.js) and the pool then discards the
  // connection; @types/pg does not declare the field, hence the intersection.
  const query: QueryConfig & { query_timeout: number } = {
    text: 'SELECT migration_name, finished_at IS NOT NULL AS finished FROM _prisma_migrations WHERE rolled_back_at IS NULL',
    query_timeout: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
  };

  let upToDate = false;
  let inFlight: Promise<boolean> | undefined;
  let lastAskedAt: number | undefined;
  let lastReported: string | undefined;

  const say = (level: 'info' | 'warn', fields: Record<string, unknown>, message: string): void => {
    logger[level]({ check: 'schema', ...fields }, message);
    logger.flush?.();
  };

  const report = (state: SchemaState): void => {
    const key = JSON.stringify(state);
    if (key === lastReported) return;
    lastReported = key;
    if (state.kind === 'unreadable') {
      say(
        'warn',
        { error: state.error },
        `cannot read the applied migrations from _prisma_migrations (${state.error}); /readyz answers 503 until they can be read`,
      );
    } else if (state.kind === 'behind') {
      const parts = [
        ...(state.pending.length > 0
          ? [`${migrations(state.pending.length)} pending (${list(state.pending)})`]
          : []),
        ...(state.failed.length > 0
          ? [
              `${migrations(state.failed.length)} started but not finished: failed, or being applied right now (${list(state.failed)})`,
            ]
          : []),
      ];
      const resolve =
        state.failed.length > 0
          ? '; a failed migration must first be resolved (`prisma migrate resolve`)'
          : '';
      say(
        'warn',
        { pending: state.pending, failed: state.failed, migrationsDir: dir },
        `database schema is behind this image: ${parts.join(', ')}; /readyz answers 503 until they are applied: ${WHAT_TO_DO}${resolve}`,
      );
    } else {
      const ahead =
        state.ahead.length > 0
          ? `; the database also has ${migrations(state.ahead.length)} this image does not ship, normally a newer release's (${list(state.ahead)})`
          : '';
      say(
        'info',
        { migrations: shipped.length, ahead: state.ahead, migrationsDir: dir },
        `database schema up to date: all ${shipped.length} of this image's migrations are applied${ahead}`,
      );
      if (state.aheadUnfinished.length > 0) {
        say(
          'warn',
          { aheadUnfinished: state.aheadUnfinished },
          `the database has ${migrations(state.aheadUnfinished.length)} this image does not ship that started but did not finish, normally a newer release's: failed, or being applied right now (${list(state.aheadUnfinished)}); this image's own migrations are all applied, so it is ready`,
        );
      }
    }
  };

  const look = async (): Promise<boolean> => {
    let state: SchemaState;
    try {
      const { rows } = await pool.query<LiveRow>(query);
      state = classify(shipped, rows);
    } catch (err) {
      // 42P01: no _prisma_migrations yet, so nothing is applied.
      if ((err as { code?: unknown }).code === '42P01') state = classify(shipped, []);
      else state = { kind: 'unreadable', error: err instanceof Error ? err.message : String(err) };
    }
    report(state);
    if (state.kind === 'up-to-date') upToDate = true;
    return upToDate;
  };

  const isUpToDate = (): Promise<boolean> => {
    if (upToDate) return Promise.resolve(true);
    if (inFlight) return inFlight;
    if (lastAskedAt !== undefined && now() - lastAskedAt < recheckIntervalMs) return Promise.resolve(false);
    inFlight = look().finally(() => {
      lastAskedAt = now();
      inFlight = undefined;
    });
    return inFlight;
  };

  await isUpToDate();
  return { isUpToDate, shipped };
}

/**
 * The `prisma/migrations` folder of the package that holds `fromDir`: the nearest directory at or
 * above `fromDir` with a `package.json`, plus `prisma/migrations`. A service passes its module's
 * `__dirname`, which finds the same folder from `src/` (tsx in development, jest) and from `dist/`
 * (the compiled image, where the package is `/app/services/<name>` with its `package.json`,
 * `dist/` and `prisma/`).
 *
 * @param fromDir - an absolute directory inside the package, usually `__dirname`
 * @returns the absolute path `<package dir>/prisma/migrations` (whether it exists is checked by
 *   {@link createSchemaCheck})
 * @throws DbMigrateError `invalid-migrations-dir` when no directory above `fromDir` has a `package.json`
 */
export function packageMigrationsDir(fromDir: string): string {
  const start = path.resolve(fromDir);
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'prisma', 'migrations');
    if (path.dirname(dir) === dir) {
      throw new DbMigrateError(
        'invalid-migrations-dir',
        `No package.json in ${start} or above it: cannot locate the package's prisma/migrations.`,
      );
    }
  }
}
