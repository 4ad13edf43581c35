// What a service benchmark does around the service it measures (bench/signal-feedback.ts,
// bench/signal-feedback-listing.ts, bench/skill-router.ts): build it as its container runs it, migrate
// its database, and stop what it started when the run ends.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { applyMigrations, ensureDatabase } from '@repo/db-migrate';

/**
 * Builds `pkg` and the packages it depends on with turbo (`dist/`, what `node dist/main.js` runs).
 * @param root the repository's root
 * @param pkg the workspace package, e.g. `@repo/signal-feedback`
 * @throws Error when the build fails
 */
export function buildService(root: string, pkg: string, log: (line: string) => void): void {
  log(`building ${pkg}`);
  const build = spawnSync(
    'pnpm',
    ['exec', 'turbo', 'run', 'build', `--filter=${pkg}...`, '--output-logs=errors-only'],
    { cwd: root, stdio: ['ignore', 2, 2] },
  );
  if (build.status !== 0) throw new Error('build failed');
}

/**
 * Creates the bench's database when missing and applies the service's migrations to it.
 * @param migrationsDir the service's `prisma/migrations`
 */
export async function migrateDatabase(
  databaseUrl: string,
  migrationsDir: string,
  log: (line: string) => void,
): Promise<void> {
  await ensureDatabase(databaseUrl);
  await applyMigrations({ databaseUrl, migrationsDir, log: { info: () => undefined, warn: log } });
}

/**
 * Runs a bench's `main`: a failure prints its stack and sets exit code 1; either way, the processes
 * in `children` still running (the list as it is when `main` ends) get SIGTERM.
 */
export function runBench(main: () => Promise<void>, children: readonly ChildProcess[]): void {
  main()
    .catch((err: unknown) => {
      console.error(err instanceof Error ? err.stack : err);
      process.exitCode = 1;
    })
    .finally(() => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    });
}
