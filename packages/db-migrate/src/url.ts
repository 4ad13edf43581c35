import { DbMigrateError } from './errors';

/** A PostgreSQL connection URL taken apart for this package's needs. */
export interface ParsedDatabaseUrl {
  /** The URL to hand to `pg`, without Prisma's `schema` parameter. */
  connectionString: string;
  /** The database named in the URL's path (percent-decoded). */
  database: string;
  /** The schema from Prisma's `?schema=` parameter, or `undefined` (the server's search_path applies, normally `public`). */
  schema: string | undefined;
  /** The same server and credentials, connected to the `postgres` maintenance database. */
  maintenanceConnectionString: string;
}

/**
 * Parses a `postgres://` / `postgresql://` URL as Prisma does: the database is the path, and the
 * optional `schema` query parameter selects the schema that holds `_prisma_migrations`.
 *
 * @param databaseUrl - e.g. `postgresql://postgres@127.0.0.1:5432/orders?schema=public`
 * @returns the parts; see {@link ParsedDatabaseUrl}
 * @throws DbMigrateError `invalid-url` when the URL cannot be parsed, has another scheme or names no database
 */
export function parseDatabaseUrl(databaseUrl: string): ParsedDatabaseUrl {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch (err) {
    throw new DbMigrateError('invalid-url', 'The database URL is not a valid URL.', { cause: err });
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new DbMigrateError(
      'invalid-url',
      `The database URL must start with postgresql:// (got ${url.protocol}//).`,
    );
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '' || database.includes('/')) {
    throw new DbMigrateError(
      'invalid-url',
      'The database URL must name one database in its path (…/<database>).',
    );
  }
  const schema = url.searchParams.get('schema') ?? undefined;
  url.searchParams.delete('schema');
  const connectionString = url.toString();
  const maintenance = new URL(connectionString);
  maintenance.pathname = '/postgres';
  return { connectionString, database, schema, maintenanceConnectionString: maintenance.toString() };
}

/**
 * Quotes a PostgreSQL identifier (database or schema name) for interpolation into DDL.
 *
 * @param name - the raw identifier
 * @returns the identifier in double quotes, inner double quotes doubled
 */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
