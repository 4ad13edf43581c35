import { rmSync } from 'node:fs';
import path from 'node:path';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import { applyMigrations } from '@repo/db-migrate';
import { migrationsWithoutLast, schemaLogLines, shippedMigrations } from '@repo/db-migrate/testing';
import { metricValue, readyStatus, scrape, waitFor } from '@repo/service-kit/testing';
import { spawnProxiedMarketIntel, type ProxiedMarketIntel } from './support/process';

// A real market-intel process (src/main.ts) on a database one migration behind. That the compiled
// dist/ finds prisma/ the same way is shown by skill-router's test of the same name (the same call).
jest.setTimeout(90_000);

const MIGRATIONS = path.join(__dirname, '..', 'prisma', 'migrations');
const SHIPPED = shippedMigrations(MIGRATIONS);
const LAST = SHIPPED[SHIPPED.length - 1] ?? '';

let behind: string;
let mi: ProxiedMarketIntel | undefined;
beforeAll(() => {
  behind = migrationsWithoutLast(MIGRATIONS).dir;
});
afterAll(async () => {
  await mi?.close();
  rmSync(behind, { recursive: true, force: true });
});

describe('/readyz waits for the database schema', () => {
  it('When the database lacks the last migration this build ships, then /readyz answers 503 and the log names it; once it is applied, 200 and one info line', async () => {
    mi = await spawnProxiedMarketIntel(
      'market_intel_schema_behind_test',
      { LOG_LEVEL: 'info' },
      { migrationsDir: behind },
    );
    const { service } = mi;
    // Readiness also waits for RabbitMQ, which connects in the background: queue depths are exposed
    // only while it is connected, so the 503 below is the schema's.
    await waitFor(
      'the broker connection',
      async () =>
        metricValue(await scrape(service.metricsUrl), 'rabbitmq_queue_messages', {
          queue: COMPUTE_TOPOLOGY.queues.starts,
        }) !== undefined,
      30_000,
    );

    expect(await readyStatus(service.baseUrl)).toBe(503);
    await waitFor('the warn line', () => schemaLogLines(service.output())[0]);
    const [warn] = schemaLogLines(service.output());
    expect(warn).toMatchObject({ level: 40, pending: [LAST], failed: [], migrationsDir: MIGRATIONS });
    expect(warn?.msg).toContain(LAST);
    expect(warn?.msg).toContain(
      "apply this release's migrations: the migrate Job, or `prisma migrate deploy`",
    );

    await applyMigrations({
      databaseUrl: mi.databaseUrl,
      migrationsDir: MIGRATIONS,
      log: { info: () => undefined, warn: () => undefined },
    });
    await waitFor('/readyz to answer 200', async () => (await readyStatus(service.baseUrl)) === 200, 30_000);
    expect(await readyStatus(service.baseUrl)).toBe(200);
    await waitFor('the info line', () => schemaLogLines(service.output())[1]);
    expect(schemaLogLines(service.output()).slice(1)).toEqual([
      expect.objectContaining({
        level: 30,
        migrations: SHIPPED.length,
        ahead: [],
        msg: `database schema up to date: all ${SHIPPED.length} of this image's migrations are applied`,
      }),
    ]);
  });
});
