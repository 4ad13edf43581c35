import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  BriefResponse,
  GapsResponse,
  KeywordsResponse,
  PainClustersResponse,
  SectorList,
  TrendsResponse,
} from '@repo/schemas';
import { ScanBrief, ScoutResult } from '@repo/compute';
import { startScriptedLlm, type ScriptedLlm } from '@repo/llm/testing';
import {
  FIXTURE_PEER,
  FIXTURE_SCAN,
  scriptedPipelineResponder,
  startFixtureFeeds,
  type FixtureFeeds,
} from '@repo/compute/testing';
import { waitFor } from '@repo/queue/testing';
import { metricValue, scrape } from '@repo/service-kit/testing';
import type { ScanProgress } from '../src/data/scans';
import { startHarness, type Harness } from './support/harness';
import { LlmCallHold, spawnRunner, waitForHealthyRunner, type RunnerProcess } from './support/runner';

// Scout scans end to end: the admin command (a child process) -> market-intel (this process) ->
// RabbitMQ -> the real pipeline-runner (a child process) fetching fixture feeds from a local HTTP
// server and asking the scripted LLM -> the stored report -> the paid Data API.
jest.setTimeout(180_000);

let h: Harness;
let llm: ScriptedLlm;
let feeds: FixtureFeeds;
let runner: RunnerProcess;
let sourcesFile: string;
const SECTOR = FIXTURE_SCAN.sector;
/** Holds a chosen LLM call (to kill the runner while a scan step is in flight). */
const hold = new LlmCallHold();
const respond = scriptedPipelineResponder();

/** RUNNER_ID of the runner started last (recorded with each step it applies). */
let runnerId = '';

function startRunner(): RunnerProcess {
  runnerId = `scan-e2e-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  return spawnRunner({
    AMQP_URL: h.amqpUrl,
    LLM_BASE_URL: llm.baseUrl,
    LLM_MODEL: 'scripted-model',
    LLM_API_KEY: 'test-key',
    RUNNER_ID: runnerId,
    ...FIXTURE_SCAN.runnerEnv,
  });
}

/** Runs `pnpm scan` as an operator would, with market-intel's environment. */
function runScanCommand(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=@repo/source', 'src/entry-points/cli/scan.ts', ...args],
      {
        cwd: path.join(__dirname, '..'),
        env: { PATH: process.env.PATH ?? '', ...h.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/** Starts a scan of `sector` through the repository (as the scheduler does) and publishes its first step. */
async function startScan(sector: string): Promise<string> {
  const start = await h.service.scans.start(
    { sector, sources: feeds.sources(), windowDays: FIXTURE_SCAN.windowDays },
    { intervalMs: 0, force: true },
  );
  if (!start.started) throw new Error(`scan not started: ${start.jobId} running`);
  await h.service.outbox.publishNow([start.outboxId]);
  return start.jobId;
}

/** Waits until scan `jobId` is completed or failed (with the runner's output on timeout). */
async function scanEnd(jobId: string): Promise<ScanProgress> {
  return waitFor(
    `scan ${jobId} to finish`,
    async () => {
      const p = await h.service.scans.progress(jobId);
      return p && (p.status === 'completed' || p.status === 'failed') ? p : undefined;
    },
    120_000,
    50,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\nrunner output:\n${runner.output().slice(-4000)}`);
  });
}

/** Runs a scan of `sector` to its end and returns its result. */
async function scanNow(sector: string): Promise<{ jobId: string; result: ScoutResult }> {
  const jobId = await startScan(sector);
  const progress = await scanEnd(jobId);
  if (progress.status !== 'completed' || !progress.result) {
    throw new Error(`scan ${jobId} ${progress.status}: ${progress.error ?? 'no result'}`);
  }
  return { jobId, result: progress.result };
}

/** The scan command's run over {@link SECTOR}: the sector's first scan, run once for whichever test needs it first. */
let firstScan: Promise<{ code: number | null; output: string }> | undefined;

function firstScanCommand(): Promise<{ code: number | null; output: string }> {
  firstScan ??= runScanCommand([
    SECTOR,
    '--sources-file',
    sourcesFile,
    '--window-days',
    String(FIXTURE_SCAN.windowDays),
  ]);
  return firstScan;
}

/** The job and the stored result of {@link firstScanCommand}'s scan. */
async function firstScanResult(): Promise<{ jobId: string; result: ScoutResult }> {
  const { output } = await firstScanCommand();
  const jobId = /started: (\S+)/.exec(output)?.[1] ?? '';
  const progress = await h.service.scans.progress(jobId);
  if (!progress?.result) throw new Error(`the scan command stored no result:\n${output}`);
  return { jobId, result: progress.result };
}

/**
 * Deletes the reports of `sector` once its scans ended. Every scan's brief weighs the other sectors'
 * latest reports, and the brief served is the latest one: a sector scanned by one test must not
 * outlive it.
 */
async function forgetSector(sector: string): Promise<void> {
  await waitFor(
    `scans of ${sector} to end`,
    async () => !(await h.service.scans.schedules()).some((s) => s.sector === sector && s.activeJobId),
    120_000,
  ).catch(() => undefined); // the test has failed already; delete what is there
  await h.db.$executeRawUnsafe(
    'DELETE FROM scan_reports WHERE id IN (SELECT scan_report_id FROM sector_reports WHERE sector = $1)',
    sector,
  );
  // Reports are only ever added by the service: a deletion behind its back is announced to its cache.
  h.reports.invalidate();
}

/** Leaves a live runner for the next test: starts one if the last one has exited, and waits for its heartbeat. */
async function ensureRunner(): Promise<void> {
  if (runner.child.exitCode !== null || runner.child.signalCode !== null) runner = startRunner();
  await waitForHealthyRunner(h.baseUrl, runner);
}

async function paid<T>(pathAndQuery: string, schema: { parse(v: unknown): T }): Promise<T> {
  const { response, body, payment } = await h.pay(pathAndQuery);
  expect(response.status).toBe(200);
  expect(payment?.signature).toBeDefined();
  return schema.parse(body);
}

beforeAll(async () => {
  feeds = await startFixtureFeeds();
  const dir = mkdtempSync(path.join(tmpdir(), 'scan-e2e-'));
  sourcesFile = path.join(dir, 'sources.json');
  writeFileSync(sourcesFile, JSON.stringify({ sectors: [{ sector: SECTOR, sources: feeds.sources() }] }));
  h = await startHarness('market_intel_scan_e2e_test', {
    env: { SCOUT_SOURCES_FILE: sourcesFile, SCOUT_SCAN_INTERVAL_MINUTES: '0', RUNNER_STALE_AFTER_MS: '3000' },
  });
  // Another sector's latest report: the scan's brief sets the fixture sector against it.
  await h.reports.importReport(
    {
      generatedAt: new Date(Date.now() - 3_600_000).toISOString(),
      sectors: [
        {
          sector: FIXTURE_PEER.sector,
          gaps: [
            {
              title: 'Peer gap',
              trend_signal: {
                article: 'Peer article',
                source: 'Peer news',
                score: 1,
                insight: 'Peer insight',
              },
              pain_signals: [
                {
                  theme: 'Peer pain',
                  severity: 'high',
                  signal_count: FIXTURE_PEER.pain_mentions,
                  description: 'Peer',
                },
              ],
            },
          ],
          painClusters: [
            {
              theme: 'Peer pain',
              description: 'Peer',
              mentions: FIXTURE_PEER.pain_mentions,
              intensity: 'high',
            },
          ],
          trends: [],
          keywords: FIXTURE_PEER.top_keywords.map((keyword, i) => ({ keyword, count: 10 - i })),
        },
      ],
    },
    'import',
  );
  llm = await startScriptedLlm({ respond: hold.wrap(respond) });
  runner = startRunner();
  await waitForHealthyRunner(h.baseUrl, runner);
}, 180_000);

afterAll(async () => {
  hold.release();
  await runner?.stop();
  await h?.close();
  await llm?.close();
  await feeds?.close();
});

describe('Scout scans end to end', () => {
  it('When an operator runs the scan command over the fixture feeds, then it follows the scan to the end and every Data API resource serves the report through paid requests', async () => {
    const { code, output } = await firstScanCommand();
    expect({ code, output }).toMatchObject({ code: 0 });
    expect(output).toMatch(new RegExp(`Scan of ${SECTOR} started: (\\S+)`));
    expect(output).toMatch(/\[\s*\d+%\] running/);
    expect(output).toMatch(/completed/);
    const { jobId: firstJobId, result } = await firstScanResult();
    const { stats, report } = result;

    // What was fetched and kept matches the fixtures; every item is stored once with its source.
    expect(stats.itemsFetched).toBe(FIXTURE_SCAN.kept);
    expect(stats.newItems).toBe(FIXTURE_SCAN.kept);
    expect(stats.dropped).toEqual(FIXTURE_SCAN.dropped);
    expect(stats.analysed).toBe(FIXTURE_SCAN.inWindow);
    const items = await h.db.scoutItem.findMany({ where: { sector: SECTOR } });
    expect(items).toHaveLength(FIXTURE_SCAN.kept);
    for (const [source, kept] of Object.entries(FIXTURE_SCAN.keptBySource)) {
      expect([source, items.filter((i) => i.source === source).length]).toEqual([source, kept]);
    }
    const sourceIds = new Set(feeds.sources().map((s) => s.id));
    expect(items.every((i) => sourceIds.has(i.source) && i.firstJobId === firstJobId)).toBe(true);
    expect(items.filter((i) => i.kind === 'discussion')).toHaveLength(FIXTURE_SCAN.discussions);

    // The report the Data API serves is the scan's: generatedFrom = when the scan fetched.
    const generatedAt = report.generatedAt;
    const sector = report.sectors[0];
    if (!sector) throw new Error('no sector in the report');
    const sectors = SectorList.parse(await (await fetch(`${h.baseUrl}/api/v1/sectors`)).json());
    expect(sectors.sectors.find((s) => s.sector === SECTOR)).toEqual({
      sector: SECTOR,
      report_count: 1,
      latest_report: new Date(generatedAt).toISOString(),
      gaps_count: FIXTURE_SCAN.gaps,
    });

    const gaps = await paid(`/api/v1/scout/gaps?sector=${SECTOR}&limit=100`, GapsResponse);
    expect(gaps).toMatchObject({ count: FIXTURE_SCAN.gaps, sector: SECTOR });
    expect(gaps.gaps.map((g) => [g.title, g.pain_signals.map((p) => p.theme)])).toEqual(
      FIXTURE_SCAN.gapDetails.map((g) => [g.title, g.clusters]),
    );
    expect(new Date(gaps.generatedFrom ?? 0).getTime()).toBe(new Date(generatedAt).getTime());
    expect(gaps.gaps).toEqual(sector.gaps);

    const clusters = await paid(
      `/api/v1/scout/pain-clusters?sector=${SECTOR}&limit=100`,
      PainClustersResponse,
    );
    expect(clusters.painClusters).toEqual(
      FIXTURE_SCAN.painClusters.map(([theme, mentions], i) =>
        expect.objectContaining({ theme, mentions, intensity: FIXTURE_SCAN.clusterIntensities[i] }),
      ),
    );
    // A gap's pain signal counts the items behind its cluster.
    for (const gap of gaps.gaps) {
      for (const signal of gap.pain_signals) {
        expect(signal.signal_count).toBe(
          clusters.painClusters.find((c) => c.theme === signal.theme)?.mentions,
        );
      }
    }

    const keywords = await paid(`/api/v1/scout/keywords?sector=${SECTOR}&limit=200`, KeywordsResponse);
    for (const [keyword, count] of Object.entries(FIXTURE_SCAN.keywords)) {
      expect(keywords.keywords.find((k) => k.keyword === keyword)?.count).toBe(count);
    }

    // `days` filters trends by their items' dates.
    const recent = await paid(`/api/v1/scout/trends?sector=${SECTOR}&days=1&limit=100`, TrendsResponse);
    const week = await paid(`/api/v1/scout/trends?sector=${SECTOR}&days=30&limit=100`, TrendsResponse);
    // Served newest first (the Data API's order), so compared as sets.
    const byTitle = (a: string[], b: string[]) => (a[0] ?? '').localeCompare(b[0] ?? '');
    expect(week.trends.map((t) => [t.title, t.velocity, t.source]).sort(byTitle)).toEqual(
      FIXTURE_SCAN.trendDetails.map((t) => [t.title, t.velocity, t.source]).sort(byTitle),
    );
    const dayAgo = Date.now() - 86_400_000;
    const expectedRecent = sector.trends.filter((t) => Date.parse(t.date) >= dayAgo).map((t) => t.title);
    expect(recent.trends.map((t) => t.title)).toEqual(expectedRecent);
    expect(recent.count).toBe(FIXTURE_SCAN.trendsWithinOneDay);
    expect(recent.count).toBeLessThan(week.count);

    const brief = await paid('/api/v1/scout/brief', BriefResponse);
    const scanBrief = ScanBrief.parse(brief.brief);
    expect(scanBrief.stats).toEqual({
      sources: FIXTURE_SCAN.sources,
      sources_failed: FIXTURE_SCAN.failedSources.length,
      items_analysed: FIXTURE_SCAN.inWindow,
      new_items: FIXTURE_SCAN.kept,
      articles: FIXTURE_SCAN.articles,
      discussions: FIXTURE_SCAN.discussions,
      trends: FIXTURE_SCAN.trends,
      pain_clusters: FIXTURE_SCAN.painClusters.length,
      gaps: FIXTURE_SCAN.gaps,
    });
    // The peer sector imported before the scan reaches the heatmap and the cross signals.
    expect(scanBrief.cross_signals).toEqual(FIXTURE_SCAN.crossSignals);
    expect(scanBrief.sector_heatmap[SECTOR]?.heat).toBeCloseTo(FIXTURE_SCAN.heat);
    expect(scanBrief.sector_heatmap[FIXTURE_PEER.sector]?.heat).toBe(1);
    expect(brief.sectors).toContain(SECTOR);

    // The scheduler and the command share the repository: its observer fed /metrics (this process
    // applied the events; the command's own start was counted in the command's process).
    const metrics = await scrape(h.metricsUrl);
    expect(
      metricValue(metrics, 'scout_scans_finished_total', {
        sector: SECTOR,
        status: 'completed',
        reported: 'true',
      }),
    ).toBe(1);
    expect(metricValue(metrics, 'scout_items_stored_total', { sector: SECTOR })).toBe(FIXTURE_SCAN.kept);
    expect(metricValue(metrics, 'scout_source_fetches_total', { sector: SECTOR, status: 'failed' })).toBe(
      FIXTURE_SCAN.failedSources.length,
    );
  });

  it('When sources are dead, malformed or oversized, then the scan reports each with its reason and still completes', async () => {
    const { result: firstResult } = await firstScanResult();
    const failed = firstResult.sources.filter((s) => s.status === 'failed');
    expect(Object.fromEntries(failed.map((s) => [s.id, s.error]))).toEqual(
      Object.fromEntries(
        Object.entries(FIXTURE_SCAN.errors).map(([id, text]) => [id, expect.stringContaining(text)]),
      ),
    );
    const states = await h.db.scoutSourceState.findMany({ where: { sector: SECTOR, lastStatus: 'failed' } });
    expect(states.map((st) => st.sourceId).sort()).toEqual(Object.keys(FIXTURE_SCAN.errors).sort());
    expect(states.every((st) => (st.lastError ?? '').length > 0)).toBe(true);
    const ok = firstResult.sources.filter((s) => s.status === 'ok');
    expect(ok).toHaveLength(FIXTURE_SCAN.sources - FIXTURE_SCAN.failedSources.length);
  });

  it('When the sector is scanned again over the same items, then nothing is stored twice, the feeds answer 304 to conditional requests, and a new report is served', async () => {
    // A sector of its own, scanned once first: the fixture sector's first scan is the command test's.
    const sector = `${SECTOR}-again`;
    try {
      await scanNow(sector);
      const before = await h.service.scans.itemCount(sector);
      expect(before).toBe(FIXTURE_SCAN.kept);
      const conditionalBefore = feeds.requests.filter((r) => r.conditional).length;
      const { result } = await scanNow(sector);

      expect(await h.service.scans.itemCount(sector)).toBe(before);
      expect(result.stats.newItems).toBe(0);
      const states = await h.db.scoutSourceState.findMany({ where: { sector } });
      const withValidators = states
        .filter((s) => s.etag !== null || s.lastModified !== null)
        .map((s) => s.sourceId);
      expect(withValidators.length).toBeGreaterThan(0);
      for (const id of withValidators) {
        expect(result.sources.find((s) => s.id === id)?.status).toBe('not_modified');
      }
      const conditional = feeds.requests.filter((r) => r.conditional).slice(conditionalBefore);
      expect(conditional.length).toBe(withValidators.length);
      expect(conditional.every((r) => r.status === 304)).toBe(true);
      // The analysis ran on the stored window again: a second report for the sector.
      const sectors = SectorList.parse(await (await fetch(`${h.baseUrl}/api/v1/sectors`)).json());
      expect(sectors.sectors.find((s) => s.sector === sector)?.report_count).toBe(2);
      expect(result.stats.analysed).toBe(FIXTURE_SCAN.inWindow);
      // Both scans were started in this process (the repository's observer feeds /metrics).
      const metrics = await scrape(h.metricsUrl);
      expect(metricValue(metrics, 'scout_scans_started_total', { sector })).toBe(2);
      expect(metricValue(metrics, 'scout_source_fetches_total', { sector, status: 'not_modified' })).toBe(
        withValidators.length,
      );
    } finally {
      await forgetSector(sector);
    }
  });

  it('When the runner is killed (SIGKILL) in the middle of a scan, then after a restart the scan completes and every step was applied exactly once', async () => {
    // A sector of its own: the fixture sector's first scan is the command test's.
    const sector = `${SECTOR}-killed`;
    let seen = 0;
    hold.hold((req) => req.task.startsWith('scout') && ++seen === 2); // the second LLM step hangs
    try {
      const jobId = await startScan(sector);
      await hold.held(60_000);
      expect((await h.service.scans.progress(jobId))?.status).toBe('running');
      const heldStep = (await h.db.agentJob.findUniqueOrThrow({ where: { id: jobId } })).stepIndex;
      const killedRunner = runnerId;
      const callsBefore = llm.calls.length;
      expect(await runner.stop('SIGKILL')).toBe('SIGKILL');
      hold.release();
      runner = startRunner();

      const done = await scanEnd(jobId);
      expect(done.status).toBe('completed');
      const steps = await h.service.jobs.appliedSteps(jobId);
      expect(steps.map((s) => s.stepIndex)).toEqual(steps.map((_, i) => i));
      // The held question was asked again by the new runner, which applied the interrupted step once.
      expect(hold.askedAgain(llm.calls.slice(callsBefore))).toBeGreaterThanOrEqual(1);
      const applied = await h.db.jobStep.findMany({ where: { jobId, stepIndex: heldStep } });
      expect(applied.map((s) => s.runnerId)).toEqual([runnerId]);
      expect(runnerId).not.toBe(killedRunner);
      // The sector is free again.
      const schedule = (await h.service.scans.schedules()).find((s) => s.sector === sector);
      expect(schedule).toMatchObject({ activeJobId: null, lastJobId: jobId, lastStatus: 'completed' });
    } finally {
      hold.release();
      await ensureRunner();
      await forgetSector(sector);
    }
  });
});
