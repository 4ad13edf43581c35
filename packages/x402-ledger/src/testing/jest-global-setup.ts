import { prepareTestDatabase } from './database';

/**
 * A jest `globalSetup` (`require.resolve('@repo/x402-ledger/jest-global-setup')` in a jest
 * configuration): prepares `X402_TEST_DATABASE_URL` with {@link prepareTestDatabase} once per run. It is
 * a separate entry pointing at the TypeScript source because jest loads a global setup with Node's own
 * resolution, outside the `@repo/source` condition its test workers use.
 */
export default async function globalSetup(): Promise<void> {
  await prepareTestDatabase();
}
