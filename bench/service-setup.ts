// What a service benchmark does before it starts the service (bench/signal-feedback.ts,
// bench/signal-feedback-listing.ts): build it as its container runs it, and migrate its database.
import { spawnSync } from 'node:child_process';
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
