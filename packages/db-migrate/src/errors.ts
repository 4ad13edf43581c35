/**
 * Why a {@link DbMigrateError} was thrown.
 *
 * - `invalid-url`: the database URL could not be parsed or names no database.
 * - `invalid-migrations-dir`: the migrations directory is missing, or a migration folder has no `migration.sql`.
 * - `provider-mismatch`: `migration_lock.toml` names a provider other than `postgresql` (Prisma's P3019).
 * - `schema-not-empty`: `_prisma_migrations` is missing but the schema already holds tables (Prisma's P3005).
 * - `failed-migrations`: a previous attempt left a failed migration behind (Prisma's P3009).
 * - `migration-failed`: a migration's SQL failed while being applied now (Prisma's P3018).
 * - `lock-timeout`: the migration advisory lock was not obtained in time.
 * - `unsafe-reset`: {@link resetDatabase} was asked to drop a database whose name does not contain `test`.
 */
export type DbMigrateErrorCode =
  | 'invalid-url'
  | 'invalid-migrations-dir'
  | 'provider-mismatch'
  | 'schema-not-empty'
  | 'failed-migrations'
  | 'migration-failed'
  | 'lock-timeout'
  | 'unsafe-reset';

/** Prisma's own error code for the same situation, where Prisma has one. */
const PRISMA_CODES: Partial<Record<DbMigrateErrorCode, string>> = {
  'provider-mismatch': 'P3019',
  'schema-not-empty': 'P3005',
  'failed-migrations': 'P3009',
  'migration-failed': 'P3018',
};

/** Options of {@link DbMigrateError}. */
export interface DbMigrateErrorOptions {
  /** The migration folder name concerned, when there is one. */
  migrationName?: string;
  /** The underlying error (for example the PostgreSQL error of a failed migration). */
  cause?: unknown;
}

/**
 * The error thrown by this package for every expected failure; unexpected connection or SQL errors
 * outside a migration script propagate as the `pg` driver throws them.
 */
export class DbMigrateError extends Error {
  /** What went wrong; see {@link DbMigrateErrorCode}. */
  readonly code: DbMigrateErrorCode;
  /** Prisma's error code for the same situation (`P3005`, `P3009`, `P3018`, `P3019`), if any. */
  readonly prismaCode: string | undefined;
  /** The migration folder name concerned, when there is one. */
  readonly migrationName: string | undefined;

  /**
   * @param code - what went wrong
   * @param message - a human-readable explanation, printed as is by the CLI
   * @param options - the migration concerned and the underlying error
   */
  constructor(code: DbMigrateErrorCode, message: string, options: DbMigrateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DbMigrateError';
    this.code = code;
    this.prismaCode = PRISMA_CODES[code];
    this.migrationName = options.migrationName;
  }
}

/**
 * Whether `value` is a {@link DbMigrateError}.
 *
 * @param value - anything caught
 * @returns true when `value` was thrown by this package as an expected failure
 */
export function isDbMigrateError(value: unknown): value is DbMigrateError {
  return value instanceof DbMigrateError;
}
