import { Client } from 'pg';
import { deleteTestVhost, listTestVhosts } from './vhosts';

/** Test databases and vhosts of one run end with `_p<run id>`; only names containing "test" qualify. */
const RUN_SCOPED = /^(?=.*test).*_p(\d+)$/;

/**
 * The id of this test run: `TEST_RUN_ID`, which the shared jest configuration sets to the jest
 * process's pid before its workers start (so every worker of one run agrees); this process's pid
 * outside jest.
 */
export function testRunId(): string {
  return process.env.TEST_RUN_ID ?? String(process.pid);
}

/**
 * The name of a test database or RabbitMQ vhost for this run: `<name>_p<run id>`, so two runs of the
 * suite on one machine never share one (docs/development.md "Layout and commands"). Idempotent: a name already
 * scoped to this run is returned as is.
 *
 * @param name - base name; must contain "test" (the reset helpers refuse any other name)
 * @throws Error when `name` does not contain "test"
 */
export function runScoped(name: string): string {
  if (!name.includes('test')) throw new Error(`refusing to scope "${name}": a test name must contain "test"`);
  const suffix = `_p${testRunId()}`;
  return name.endsWith(suffix) ? name : `${name}${suffix}`;
}

/** Whether process `pid` is alive on this machine (EPERM: alive, owned by someone else). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether `name` belongs to this run or to a run whose jest process is gone. */
function disposable(name: string, runId: string): boolean {
  const match = RUN_SCOPED.exec(name);
  if (!match?.[1]) return false;
  return match[1] === runId || !alive(Number(match[1]));
}

/** PostgreSQL server of the tests, without a database (`TEST_DATABASE_BASE_URL`, default postgres on 127.0.0.1:5432). */
export const TEST_DATABASE_BASE_URL =
  process.env.TEST_DATABASE_BASE_URL ?? 'postgresql://postgres@127.0.0.1:5432';

/**
 * URL of this run's test database `name` on {@link TEST_DATABASE_BASE_URL} ({@link runScoped}).
 * @throws Error when `name` does not contain "test"
 */
export function testDatabaseUrl(name: string): string {
  return `${TEST_DATABASE_BASE_URL}/${runScoped(name)}`;
}

/**
 * Drops the test databases and vhosts of this run and of runs that died without cleaning up
 * (`<name>_p<pid>` with no such process), leaving those of runs still going. Called once per jest run
 * by the `@repo/service-kit/jest-global-teardown` entry.
 *
 * @param options.postgresUrl - maintenance URL (default database `postgres` on {@link TEST_DATABASE_BASE_URL})
 * @returns the names dropped
 * @throws errors from `pg`, or from RabbitMQ's management API or `rabbitmqctl`, when a server is unreachable
 */
export async function dropRunScoped(options: { postgresUrl?: string } = {}): Promise<string[]> {
  const runId = testRunId();
  const dropped: string[] = [];
  const client = new Client({
    connectionString: options.postgresUrl ?? `${TEST_DATABASE_BASE_URL}/postgres`,
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database');
    for (const { datname } of rows) {
      if (!disposable(datname, runId)) continue;
      await client.query(`DROP DATABASE IF EXISTS "${datname.replace(/"/g, '""')}" WITH (FORCE)`);
      dropped.push(datname);
    }
  } finally {
    await client.end();
  }
  for (const vhost of await listTestVhosts()) {
    if (!disposable(vhost, runId)) continue;
    await deleteTestVhost(vhost);
    dropped.push(vhost);
  }
  return dropped;
}
