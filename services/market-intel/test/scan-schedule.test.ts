import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '@repo/service-kit';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
import type { ScoutSectorSources } from '@repo/compute';
import { loadSourcesFile, SourcesFileError } from '../src/domain/scout-sources';
import { createScanScheduler, type ScanScheduler } from '../src/entry-points/workers/scan-scheduler';
import { loadConfig } from '../src/config';
import { compose } from '../src/composition';
import { startHarness, type Harness } from './support/harness';

// Scheduling of scout scans without a runner: claims, intervals, stale scans, the sources file.
jest.setTimeout(60_000);

let h: Harness;
const logger = createLogger({ name: 'scan-schedule-test', level: 'silent' });
const SECTORS: ScoutSectorSources[] = [
  {
    sector: 'fintech',
    sources: [{ type: 'feed', id: 'news', name: 'News', url: 'http://127.0.0.1:9/feed.xml' }],
  },
  {
    sector: 'climate',
    sources: [{ type: 'feed', id: 'grid', name: 'Grid', url: 'http://127.0.0.1:9/grid.xml' }],
  },
];

function scheduler(intervalMs: number, staleMs = 3_600_000): ScanScheduler {
  return createScanScheduler(
    h.service.scans,
    h.service.lifecycle,
    h.service.outbox,
    SECTORS,
    { intervalMs, tickMs: 60_000, windowDays: 7, staleMs },
    logger,
  );
}

async function scanJobs(): Promise<{ id: string; status: string; endpoint: string; input: unknown }[]> {
  return h.db.agentJob.findMany({
    where: { kind: 'scout' },
    select: { id: true, status: true, endpoint: true, input: true },
    orderBy: { createdAt: 'asc' },
  });
}

/** Ready messages in compute.starts, as the queue itself counts them (rabbitmqctl's figure of a quorum queue lags). */
async function readyCommands(): Promise<number> {
  const { messageCount } = await h.service.broker.withChannel((channel) =>
    channel.checkQueue(COMPUTE_TOPOLOGY.queues.starts),
  );
  return messageCount;
}

beforeAll(async () => {
  h = await startHarness('market_intel_scan_schedule_test');
});

afterAll(async () => {
  await h?.close();
});

beforeEach(async () => {
  // Let the previous test's step commands reach the broker first, so none lands during the next test.
  await waitFor('the outbox drained', async () => (await h.service.outbox.pending()) === 0);
  await h.db.$executeRawUnsafe('TRUNCATE scout_schedules, scout_source_states, scout_items');
  await h.db.$executeRawUnsafe("DELETE FROM agent_jobs WHERE kind = 'scout'");
  await h.db.$executeRawUnsafe('DELETE FROM outbox_messages');
});

describe('Scan scheduling', () => {
  it('When two replicas tick at the same moment, then each sector gets exactly one scan and its first step is published', async () => {
    const [a, b] = [scheduler(86_400_000), scheduler(86_400_000)];
    // Earlier tests' commands stay in the queue (nothing consumes it): start from an empty one.
    await h.service.broker.withChannel((channel) => channel.purgeQueue(COMPUTE_TOPOLOGY.queues.starts));
    const started = (await Promise.all([a.tick(), b.tick(), a.tick()])).flat();

    expect(started).toHaveLength(2);
    const jobs = await scanJobs();
    expect(jobs.map((j) => j.endpoint).sort()).toEqual(['scan climate', 'scan fintech']);
    expect(jobs.every((j) => j.status === 'pending')).toBe(true);
    expect(jobs[0]?.input).toMatchObject({ windowDays: 7, validators: {}, peers: [] });
    const schedules = await h.service.scans.schedules();
    expect(schedules.map((s) => [s.sector, s.activeJobId !== null])).toEqual([
      ['climate', true],
      ['fintech', true],
    ]);
    // Nothing runs the steps here: the two step-0 commands wait in compute.starts.
    await waitFor('both step commands published', async () =>
      (await readyCommands()) === 2 ? true : undefined,
    );
    expect(await h.service.outbox.pending()).toBe(0);
  });

  it('When a scan is running, then the admin start follows it instead of starting another', async () => {
    const first = await h.service.scans.start(
      { sector: 'fintech', sources: SECTORS[0]?.sources ?? [], windowDays: 3 },
      { intervalMs: 0, force: true },
    );
    const second = await h.service.scans.start(
      { sector: 'fintech', sources: SECTORS[0]?.sources ?? [], windowDays: 3 },
      { intervalMs: 0, force: true },
    );
    expect(first.started).toBe(true);
    expect(second).toEqual({ started: false, jobId: first.jobId });
    expect(await scanJobs()).toHaveLength(1);
  });

  it('When a sector was scanned within the interval, then the scheduler waits, and a finished scan frees the sector', async () => {
    expect(await scheduler(86_400_000).tick()).toHaveLength(2);
    const [job] = await scanJobs();
    if (!job) throw new Error('no scan');
    await h.service.lifecycle.fail(job.id, { code: 'stalled', detail: 'test: runner gone' });
    // Released, but within the interval: nothing new.
    expect(await scheduler(86_400_000).tick()).toHaveLength(0);
    // With an interval of 0 ms the released sector is due again; the other one is still running.
    const again = await scheduler(0).tick();
    expect(again).toHaveLength(1);
    const rows = await h.service.scans.schedules();
    const released = rows.find((r) => r.lastJobId === again[0]);
    expect(released?.activeJobId).toBe(again[0]);
    const failed = await h.db.agentJob.findUnique({ where: { id: job.id }, select: { status: true } });
    expect(failed?.status).toBe('failed');
  });

  it('When a scan made no progress for the stale time, then the scheduler fails it and starts the sector again', async () => {
    expect(await scheduler(0, 3_600_000).tick()).toHaveLength(2);
    await h.db.$executeRawUnsafe(
      "UPDATE agent_jobs SET updated_at = now() - interval '2 hours' WHERE kind = 'scout'",
    );
    const restarted = await scheduler(0, 3_600_000).tick();
    expect(restarted).toHaveLength(2);
    const jobs = await scanJobs();
    expect(jobs.map((j) => j.status).sort()).toEqual(['failed', 'failed', 'pending', 'pending']);
    const failed = await h.db.agentJob.findMany({
      where: { kind: 'scout', status: 'failed' },
      select: { error: true, lastError: true },
    });
    expect(failed.every((f) => f.error === 'stalled: the job made no progress in time')).toBe(true);
    expect(failed.every((f) => f.lastError?.includes('no progress for 60 minutes'))).toBe(true);
  });

  it('When a scan job is read through the public jobs endpoint, then it is not found (scans are not paid jobs)', async () => {
    const [jobId] = await scheduler(0).tick();
    const res = await fetch(`${h.baseUrl}/api/v1/jobs/${jobId}`);
    expect(res.status).toBe(404);
  });
});

describe('The sources file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'scout-sources-'));
  const write = (name: string, text: string): string => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it('When the shipped sources file is loaded, then it is valid', () => {
    const config = loadSourcesFile(path.join(__dirname, '../config/scout-sources.json'));
    expect(config.sectors.map((s) => s.sector)).toEqual(['fintech', 'dev-tools', 'climate']);
  });

  it('When the file is not JSON or breaks the schema, then every problem is named', () => {
    expect(() => loadSourcesFile(write('bad.json', '{ "sectors": ['))).toThrow(SourcesFileError);
    const file = write(
      'invalid.json',
      JSON.stringify({
        sectors: [
          { sector: 'Fin Tech', sources: [{ type: 'feed', id: 'a', name: 'A', url: 'not a url' }] },
          { sector: 'climate', sources: [] },
        ],
      }),
    );
    let message = '';
    try {
      loadSourcesFile(file);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('sectors.0.sector');
    expect(message).toContain('sectors.0.sources.0.url');
    expect(message).toContain('sectors.1.sources');
    expect(() => loadSourcesFile(path.join(dir, 'missing.json'))).toThrow(/missing\.json/);
  });

  it('When market-intel starts with an invalid sources file, then it refuses to start and names the file', async () => {
    const config = loadConfig({ ...h.env, SCOUT_SOURCES_FILE: write('broken.json', '{}') });
    await expect(compose(config, logger)).rejects.toThrow(/broken\.json/);
  });
});

describe('A scan job', () => {
  it('When a scan starts, then its job input carries the sector, its sources and the stored validators', async () => {
    await h.db.scoutSourceState.create({
      data: {
        sector: 'fintech',
        sourceId: 'news',
        url: 'http://127.0.0.1:9/feed.xml',
        etag: '"v1"',
        lastModified: 'Sun, 22 Nov 2026 06:00:00 GMT',
        lastStatus: 'ok',
        lastFetchedAt: new Date(),
      },
    });
    const start = await h.service.scans.start(
      { sector: 'fintech', sources: SECTORS[0]?.sources ?? [], windowDays: 7 },
      { intervalMs: 0, force: true },
    );
    if (!start.started) throw new Error('not started');
    const job = await h.db.agentJob.findUnique({ where: { id: start.jobId } });
    expect(job).toMatchObject({ kind: 'scout', stepIndex: 0, state: null, txSignature: null });
    expect(job?.input).toEqual({
      sector: 'fintech',
      sources: SECTORS[0]?.sources,
      validators: { news: { etag: '"v1"', lastModified: 'Sun, 22 Nov 2026 06:00:00 GMT' } },
      windowDays: 7,
      peers: [],
    });
  });
});
