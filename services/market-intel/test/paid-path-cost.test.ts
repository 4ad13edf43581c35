import { randomInt } from 'node:crypto';
import { waitFor } from '@repo/queue/testing';
import { countQueries, metricValue, scrape } from '@repo/service-kit/testing';
import { buildReport, startHarness, type Harness } from './support/harness';

// What one fresh payment costs the service in PostgreSQL round trips and Solana RPC calls: the
// paid path's budget, measured on the real service (the pg client's queries are counted, not
// replaced). The count is the ceiling this test holds.
let h: Harness;

beforeAll(async () => {
  h = await startHarness('market_intel_paid_path_cost_test');
  await h.reports.importReport(buildReport(), 'import');
  // The background loops share the pool: stopped, so that every query counted is the request's.
  await Promise.all(h.service.loops.map((loop) => loop.stop()));
  await waitFor('the report cache', async () => h.service.reports.cachingOn, 10_000);
});
afterAll(() => h.close());

/**
 * PostgreSQL round trips a fresh push payment on the Data API costs: the claim, which counts the
 * verification guard's attempt in the same statement; the stored answer, which records the
 * verification and gives the attempt back in the same statement (the report comes from the
 * in-process cache once read). `@repo/x402-express`'s README, "The paid path's statements".
 */
const ROUND_TRIPS = 2;

const rpcCalls = async (): Promise<number> =>
  metricValue(await scrape(h.metricsUrl), 'x402_rpc_calls_total', {
    network: 'solana',
    method: 'getTransaction',
    outcome: 'found',
  }) ?? 0;

/** This client's verification attempts counted in the current window (the guard's `x402_verification_attempts` row). */
async function verificationAttempts(): Promise<number> {
  const rows = await h.db.$queryRawUnsafe<{ points: number }[]>(
    "SELECT points FROM x402_verification_attempts WHERE key LIKE 'solana:%'",
  );
  expect(rows).toHaveLength(1);
  return rows[0]?.points ?? 0;
}

describe('The cost of a fresh payment', () => {
  it(`When a fresh push payment buys gaps, then it costs at most ${ROUND_TRIPS} PostgreSQL round trips (the guard's count rides on the claim, the verified mark and the give-back on the stored answer), no report read, and one RPC call`, async () => {
    const url = `/api/v1/scout/gaps?limit=${randomInt(1, 100)}`;
    // A first payment reads the report into the cache: the steady state is measured.
    expect((await h.getWithProof(url, await h.transfer({ amountAtomic: 100_000n }))).status).toBe(200);
    const signature = await h.transfer({ amountAtomic: 100_000n });
    const rpcBefore = await rpcCalls();
    const attemptsBefore = await verificationAttempts();
    const { result, queries } = await countQueries(() => h.getWithProof(url, signature));
    expect(result.status).toBe(200);
    expect(await rpcCalls()).toBe(rpcBefore + 1);
    const [claim, stored] = queries;
    expect(claim).toMatch(
      /^WITH claimed AS \(INSERT INTO x402_payments .*INSERT INTO "x402_verification_attempts"/,
    );
    expect(stored).toMatch(
      /^WITH marked AS \(UPDATE x402_payments SET status = 'completed'.* payer = \$3.*INSERT INTO "x402_verification_attempts"/,
    );
    expect(queries.filter((q) => q.includes('sector_reports'))).toEqual([]);
    // The attempt was counted and given back: the client's counter is where it started.
    expect(await verificationAttempts()).toBe(attemptsBefore);
    const rows = await h.db.$queryRawUnsafe<{ status: string; payer: string | null; amount: string }[]>(
      'SELECT status, payer, amount_atomic::text AS amount FROM x402_payments WHERE signature = $1',
      signature,
    );
    expect(rows).toEqual([{ status: 'completed', payer: expect.any(String), amount: '100000' }]);
    if (queries.length > ROUND_TRIPS) {
      const list = queries.map((q) => q.slice(0, 80)).join('\n');
      throw new Error(`${queries.length} round trips, over ${ROUND_TRIPS}:\n${list}`);
    }
  });
});
