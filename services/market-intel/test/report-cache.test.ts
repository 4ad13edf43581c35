import { Client } from 'pg';
import { waitFor } from '@repo/queue/testing';
import type { ScanReport } from '@repo/schemas';
import { openDatabase } from '../src/data/prisma';
import { ReportRepository } from '../src/data/reports';
import { buildReport, startHarness, type Harness } from './support/harness';

// The latest reports are read from memory while every stored report is heard (docs/architecture.md,
// "How a paid request flows"): a report stored by another process reaches the cache through
// PostgreSQL's LISTEN/NOTIFY, and while the listening connection is down nothing is served from it.
let h: Harness;
let other: { reports: ReportRepository; close(): Promise<void> };

beforeAll(async () => {
  h = await startHarness('market_intel_report_cache_test');
  await h.reports.importReport(buildReport(), 'import');
  // Another process's view of the same database (the import CLI, another replica).
  const database = openDatabase(h.config.DATABASE_URL, 2);
  other = { reports: new ReportRepository(database.prisma), close: () => database.close() };
  await waitFor('the report listener to start', async () => h.service.reports.cachingOn, 10_000);
});
afterAll(async () => {
  await other?.close();
  await h?.close();
});

/** A report for `sector` whose first gap is titled `title`, newer than any stored before. */
function reportWithGap(sector: string, title: string): ScanReport {
  const report = buildReport({ generatedAt: new Date().toISOString() });
  const first = report.sectors[0];
  if (!first?.gaps[0]) throw new Error('the factory report has no gap');
  first.sector = sector;
  first.gaps[0] = { ...first.gaps[0], title };
  report.sectors = [first];
  return report;
}

const firstGapOf = async (sector: string) =>
  (await h.service.reports.latestItems('gaps', sector))[0]?.items[0]?.title;

let markers = 0;
/**
 * Waits until the service has heard every report stored so far: notifications arrive in commit order,
 * so once a new marker report has emptied the cached (empty) read of its sector, the earlier ones have
 * been heard too, and nothing pending will drop the cache behind the test's back.
 */
async function heardEverything(): Promise<void> {
  const sector = `marker-${++markers}`;
  expect(await firstGapOf(sector)).toBeUndefined();
  await other.reports.importReport(reportWithGap(sector, 'Marker'), 'import');
  await waitFor('the notifications to be heard', async () => (await firstGapOf(sector)) === 'Marker', 10_000);
}

describe('The latest reports from memory', () => {
  it('When the same column and sector are read twice, then the second read is the first one, from memory', async () => {
    await heardEverything();
    const first = await h.service.reports.latestItems('trends', 'fintech');
    expect(first.length).toBe(1);
    // A read from the database would build new objects.
    expect(await h.service.reports.latestItems('trends', 'fintech')).toBe(first);
  });

  it('When another process stores a report, then the service reads it within seconds', async () => {
    await other.reports.importReport(reportWithGap('cache-a', 'First gap of cache-a'), 'import');
    await waitFor(
      'the first report',
      async () => (await firstGapOf('cache-a')) === 'First gap of cache-a',
      10_000,
    );
    await other.reports.importReport(reportWithGap('cache-a', 'Second gap of cache-a'), 'import');
    await waitFor(
      'the newer report to replace the cached one',
      async () => (await firstGapOf('cache-a')) === 'Second gap of cache-a',
      10_000,
    );
  });

  it('When the listening connection is killed, then a report stored meanwhile is read, and the cache comes back', async () => {
    await firstGapOf('cache-b');
    const admin = new Client({ connectionString: h.config.DATABASE_URL });
    await admin.connect();
    try {
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`,
      );
      expect(killed.rowCount).toBeGreaterThanOrEqual(1);
    } finally {
      await admin.end();
    }
    await other.reports.importReport(reportWithGap('cache-b', 'Stored while deaf'), 'import');
    await waitFor(
      'the report stored while deaf',
      async () => (await firstGapOf('cache-b')) === 'Stored while deaf',
      10_000,
    );
    await waitFor('the listener to come back', async () => h.service.reports.cachingOn, 10_000);
    await other.reports.importReport(reportWithGap('cache-b', 'Stored after'), 'import');
    await waitFor(
      'the report stored after',
      async () => (await firstGapOf('cache-b')) === 'Stored after',
      10_000,
    );
  });

  it('When a report is deleted by hand, then the cache serves it until the watermark round, then the older report is read again', async () => {
    await other.reports.importReport(reportWithGap('cache-c', 'Older gap of cache-c'), 'import');
    const newer = await other.reports.importReport(
      reportWithGap('cache-c', 'Newer gap of cache-c'),
      'import',
    );
    // Notifications arrive in commit order: once cache-d's has emptied its cached empty read,
    // cache-c's have been heard too, and the next read of cache-c stays in the cache.
    expect(await firstGapOf('cache-d')).toBeUndefined();
    await other.reports.importReport(reportWithGap('cache-d', 'Marker'), 'import');
    await waitFor(
      'the notifications to be heard',
      async () => (await firstGapOf('cache-d')) === 'Marker',
      10_000,
    );
    const watermark = h.service.loops.find((loop) => loop.name === 'report-watermark');
    if (!watermark) throw new Error('no report-watermark loop');
    // The round notes the fingerprint with these reports (and drops the cache, the mark having moved).
    await watermark.kick();
    expect(await firstGapOf('cache-c')).toBe('Newer gap of cache-c');

    await h.db.scanReport.delete({ where: { id: newer.id } });
    // A deletion is not notified: the cache still answers the deleted report until the round.
    expect(await firstGapOf('cache-c')).toBe('Newer gap of cache-c');
    await watermark.kick();
    expect(await firstGapOf('cache-c')).toBe('Older gap of cache-c');
  });
});
