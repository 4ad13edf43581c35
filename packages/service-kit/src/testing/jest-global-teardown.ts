import { dropRunScoped } from './run-scope';

/**
 * A jest `globalTeardown` (`require.resolve('@repo/service-kit/jest-global-teardown')` in a jest
 * configuration): drops the databases and vhosts this run created, and those of runs that died
 * ({@link dropRunScoped}). A separate entry pointing at the TypeScript source because jest loads it
 * with Node's own resolution, outside the `@repo/source` condition its test workers use.
 */
export default async function globalTeardown(): Promise<void> {
  await dropRunScoped();
}
