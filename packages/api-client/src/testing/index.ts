import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The services whose OpenAPI documents the clients are generated from. */
export type ApiService = 'market-intel' | 'signal-feedback' | 'skill-router';

/** Where the snapshot of `service`'s OpenAPI document lives (`openapi/<service>.json` of this package). */
export function apiSnapshotPath(service: ApiService): string {
  return path.join(__dirname, '..', '..', 'openapi', `${service}.json`);
}

/**
 * Compares the OpenAPI document a service serves with the snapshot its typed client is generated
 * from (README, "Keeping the clients current"). With `UPDATE_API_SNAPSHOTS=1` the snapshot is
 * rewritten instead, and `pnpm --filter @repo/api-client generate` regenerates the types.
 * @returns `undefined` when they are equal (or the snapshot was rewritten), else what to do
 */
export function apiSnapshotProblem(service: ApiService, served: unknown): string | undefined {
  const file = apiSnapshotPath(service);
  const text = `${JSON.stringify(served, null, 2)}\n`;
  if (process.env.UPDATE_API_SNAPSHOTS === '1') {
    writeFileSync(file, text);
    return undefined;
  }
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return undefined;
  return (
    `${file} is not the document ${service} serves: its typed client would be stale. Run this test with ` +
    'UPDATE_API_SNAPSHOTS=1, then `pnpm --filter @repo/api-client generate`, and commit the snapshot.'
  );
}
