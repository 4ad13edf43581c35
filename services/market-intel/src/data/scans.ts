import {
  SCOUT_WINDOW_MAX_ITEMS,
  ScoutItem,
  ScoutResult,
  type ScoutJobInput,
  type ScoutSource,
  type SourceReport,
} from '@repo/compute';
import { z } from 'zod';
import { JOB_STATUS_COLUMNS, newJobId } from './jobs';
import type { HookedJob, JobKindHooks, JobRepository, Tx } from './jobs';
import type { Db } from './prisma';
import type { ReportRepository } from './reports';

/** What the fetch step (step 0) hands over; the rest of the runner's state is kept as it is. */
const FetchedState = z.looseObject({
  items: z.array(ScoutItem),
  sources: z.array(z.looseObject({ id: z.string() })).optional(),
});

/** A scan's sector, sources and analysis window, as the scheduler or the admin command asks for it. */
export interface ScanRequest {
  sector: string;
  sources: ScoutSource[];
  /** Days of stored items the scan analyses (the Data API's trends carry their dates). */
  windowDays: number;
}

/**
 * What a scan's life reports as it goes (metrics). `onFetched` and `onFinished` run inside the
 * transaction that applies the runner's event, so a transaction retried after a failure reports twice.
 */
export interface ScanObserver {
  /** A scan of `sector` was claimed and created. */
  onStarted(sector: string): void;
  /** Step 0's outcome was stored: `newItems` items were new; `sources` each source's fetch. */
  onFetched(sector: string, newItems: number, sources: readonly SourceReport[]): void;
  /** The scan ended; `reported` when its report was stored (an empty window stores none). */
  onFinished(sector: string, status: 'completed' | 'failed', reported: boolean): void;
}

/** Outcome of {@link ScanRepository.start}. */
export type ScanStart =
  | { started: true; jobId: string; outboxId: bigint }
  /** Another scan of the sector is in progress (`jobId`), or the sector is not due yet (`jobId` null). */
  | { started: false; jobId: string | null };

/** One sector's schedule row, for the admin command's listing. */
export interface ScanScheduleRow {
  sector: string;
  activeJobId: string | null;
  lastStartedAt: Date | null;
  lastFinishedAt: Date | null;
  lastJobId: string | null;
  lastStatus: string | null;
}

/** A scan job as the admin command follows it. */
export interface ScanProgress {
  jobId: string;
  status: string;
  progressPct: number;
  stepLabel: string | null;
  lastError: string | null;
  error: string | null;
  result: ScoutResult | null;
}

/**
 * Scout scans on top of the job step chain (README, "Scout scans"; packages/compute/README.md,
 * "Scout jobs"): a scan is an unpaid job of kind `scout`. This repository claims a sector (at most one
 * scan per sector at a time, across replicas: a conditional update of `scout_schedules.active_job_id`),
 * creates the job with its first step in the same transaction, and provides the job hooks that store
 * what the runner produced:
 * - after step 0 (fetch), the fetched items go into `scout_items` (a story already stored for the sector,
 *   by content hash, is not stored again), the sources' HTTP validators into `scout_source_states`, and
 *   the state's `items` become the sector's stored window (published within `windowDays`, newest first,
 *   at most `SCOUT_WINDOW_MAX_ITEMS`), with `newItems` = how many were new;
 * - on completion, the report is stored (origin `scan`) unless it analysed no item, and the claim is
 *   released; on failure the claim is released.
 */
export class ScanRepository {
  /**
   * @param db the database
   * @param jobs the job repository (creates the job and its first step command)
   * @param reports the report store (the finished report, and peer sectors' latest figures)
   * @param observer told of starts, fetches and ends (metrics)
   */
  constructor(
    private readonly db: Db,
    private readonly jobs: JobRepository,
    private readonly reports: ReportRepository,
    private readonly observer?: ScanObserver,
  ) {}

  /**
   * Starts a scan of `request.sector` unless one is in progress, or (without `force`) unless the last
   * one started less than `intervalMs` ago.
   * @param intervalMs minimum time between scheduled scans of a sector, in milliseconds
   * @param force start now whatever the last start (the admin command)
   * @returns the new job and its outbox row to publish, or the scan in progress
   */
  async start(request: ScanRequest, options: { intervalMs: number; force: boolean }): Promise<ScanStart> {
    const jobId = newJobId();
    const result = await this.db.$transaction(async (tx): Promise<ScanStart> => {
      await tx.$executeRawUnsafe(
        'INSERT INTO scout_schedules (sector) VALUES ($1) ON CONFLICT (sector) DO NOTHING',
        request.sector,
      );
      const claimed = await tx.$executeRawUnsafe(
        `UPDATE scout_schedules SET active_job_id = $2, last_started_at = now(), last_job_id = $2
          WHERE sector = $1 AND active_job_id IS NULL
            AND ($3::boolean OR last_started_at IS NULL OR last_started_at <= now() - $4::int * interval '1 millisecond')`,
        request.sector,
        jobId,
        options.force,
        Math.min(options.intervalMs, 2_000_000_000),
      );
      if (claimed === 0) {
        const row = await tx.scoutSchedule.findUnique({
          where: { sector: request.sector },
          select: { activeJobId: true },
        });
        return { started: false as const, jobId: row?.activeJobId ?? null };
      }
      const input: ScoutJobInput = {
        sector: request.sector,
        sources: request.sources,
        validators: await validatorsFor(tx, request.sector, request.sources),
        windowDays: request.windowDays,
        peers: await this.peers(request.sector),
      };
      const outboxId = await this.jobs.createInternalJob(tx, {
        id: jobId,
        kind: 'scout',
        endpoint: `scan ${request.sector}`,
        input,
      });
      return { started: true as const, jobId, outboxId };
    });
    if (result.started) this.observer?.onStarted(request.sector);
    return result;
  }

  /** The hooks the job repository runs for `scout` jobs. */
  hooks(): JobKindHooks {
    return {
      beforeNextStep: (tx, job, stepIndex, state) =>
        stepIndex === 0 ? this.storeFetched(tx, job, state) : Promise.resolve(state),
      onCompleted: async (tx, job, result) => {
        const parsed = ScoutResult.safeParse(result);
        const status = parsed.success ? 'completed' : 'failed';
        const reported = parsed.success && parsed.data.stats.analysed > 0;
        if (parsed.success && reported) {
          await this.reports.importReport(parsed.data.report, 'scan', tx);
        }
        await release(tx, job.id, status);
        this.observer?.onFinished((job.input as ScoutJobInput).sector, status, reported);
      },
      onFailed: async (tx, job) => {
        await release(tx, job.id, 'failed');
        this.observer?.onFinished((job.input as ScoutJobInput).sector, 'failed', false);
      },
    };
  }

  /** Fails scans that made no progress for `staleMs` milliseconds (a scan whose runner never came back). */
  async staleScans(staleMs: number): Promise<string[]> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT j.id FROM scout_schedules s JOIN agent_jobs j ON j.id = s.active_job_id
        WHERE j.status IN ('pending', 'running') AND j.updated_at < now() - $1::int * interval '1 millisecond'`,
      Math.min(staleMs, 2_000_000_000),
    );
    return rows.map((r) => r.id);
  }

  /** Every sector's schedule row, by sector. */
  async schedules(): Promise<ScanScheduleRow[]> {
    return this.db.scoutSchedule.findMany({ orderBy: { sector: 'asc' } });
  }

  /** A scan job's progress, or null when `jobId` is not a scan. */
  async progress(jobId: string): Promise<ScanProgress | null> {
    const row = await this.db.agentJob.findUnique({
      where: { id: jobId },
      select: { ...JOB_STATUS_COLUMNS, kind: true, stepLabel: true, lastError: true },
    });
    if (!row || row.kind !== 'scout') return null;
    const result = ScoutResult.safeParse(row.result);
    return {
      jobId: row.id,
      status: row.status,
      progressPct: row.progressPct,
      stepLabel: row.stepLabel,
      lastError: row.lastError,
      error: row.error,
      result: result.success ? result.data : null,
    };
  }

  /** Number of stored items of a sector (tests and the admin command). */
  async itemCount(sector: string): Promise<number> {
    return this.db.scoutItem.count({ where: { sector } });
  }

  private async storeFetched(tx: Tx, job: HookedJob, state: unknown): Promise<unknown> {
    const input = job.input as ScoutJobInput;
    const fetched = FetchedState.parse(state);
    const fetchedItems = fetched.items;
    // One statement for the whole batch; an item the sector already has (same hash) is skipped.
    const newItems = await tx.$executeRawUnsafe(
      `INSERT INTO scout_items (sector, hash, kind, url, title, summary, source, source_name, published_at, lang, points, comments, first_job_id)
       SELECT $1, t.hash, t.kind, t.url, t.title, t.summary, t.source, t.source_name, t.published_at, t.lang, t.points, t.comments, $2
         FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                     $10::timestamptz[], $11::text[], $12::int[], $13::int[])
           AS t(hash, kind, url, title, summary, source, source_name, published_at, lang, points, comments)
       ON CONFLICT (sector, hash) DO NOTHING`,
      input.sector,
      job.id,
      fetchedItems.map((i) => i.hash),
      fetchedItems.map((i) => i.kind),
      fetchedItems.map((i) => i.url),
      fetchedItems.map((i) => i.title),
      fetchedItems.map((i) => i.summary),
      fetchedItems.map((i) => i.source),
      fetchedItems.map((i) => i.sourceName),
      fetchedItems.map((i) => i.publishedAt),
      fetchedItems.map((i) => i.lang),
      fetchedItems.map((i) => i.points ?? null),
      fetchedItems.map((i) => i.comments ?? null),
    );
    const reports = (fetched.sources ?? []) as SourceReport[];
    for (const report of reports) {
      const source = input.sources.find((s) => s.id === report.id);
      if (source) await saveSourceState(tx, input.sector, sourceUrl(source), report);
    }
    this.observer?.onFetched(input.sector, newItems, reports);
    const window = await tx.scoutItem.findMany({
      where: {
        sector: input.sector,
        publishedAt: { gte: new Date(Date.now() - input.windowDays * 86_400_000) },
      },
      orderBy: [{ publishedAt: 'desc' }, { hash: 'asc' }],
      take: SCOUT_WINDOW_MAX_ITEMS,
    });
    const items: ScoutItem[] = window.map((row) => ({
      hash: row.hash,
      kind: row.kind as ScoutItem['kind'],
      url: row.url,
      title: row.title,
      summary: row.summary,
      source: row.source,
      sourceName: row.sourceName,
      publishedAt: row.publishedAt.toISOString(),
      lang: row.lang,
      ...(row.points === null ? {} : { points: row.points }),
      ...(row.comments === null ? {} : { comments: row.comments }),
    }));
    return { ...fetched, items, newItems };
  }

  /** The other sectors' latest figures, for the brief's sector heatmap. */
  private async peers(sector: string): Promise<ScoutJobInput['peers']> {
    const snapshots = await this.reports.latestSnapshots([], 1000);
    return snapshots
      .filter((s) => s.sector !== sector)
      .map((s) => ({
        sector: s.sector,
        gaps_count: s.gaps.length,
        pain_mentions: s.painClusters.reduce((n, c) => n + c.mentions, 0),
        top_keywords: s.keywords.slice(0, 5).map((k) => k.keyword),
      }));
  }
}

async function validatorsFor(
  tx: Tx,
  sector: string,
  sources: ScoutSource[],
): Promise<ScoutJobInput['validators']> {
  const rows = await tx.scoutSourceState.findMany({ where: { sector } });
  const validators: ScoutJobInput['validators'] = {};
  for (const source of sources) {
    const row = rows.find((r) => r.sourceId === source.id);
    // Validators belong to one URL: a source whose URL changed starts afresh.
    if (!row || row.url !== sourceUrl(source)) continue;
    validators[source.id] = {
      ...(row.etag ? { etag: row.etag } : {}),
      ...(row.lastModified ? { lastModified: row.lastModified } : {}),
    };
  }
  return validators;
}

/** The URL validators are kept for: the feed URL, or the search API's base URL with the query. */
function sourceUrl(source: ScoutSource): string {
  return source.type === 'feed' ? source.url : `${source.baseUrl}#${source.query}`;
}

async function saveSourceState(tx: Tx, sector: string, url: string, report: SourceReport): Promise<void> {
  const data = {
    url,
    etag: report.validators.etag ?? null,
    lastModified: report.validators.lastModified ?? null,
    lastStatus: report.status,
    lastError: report.error,
    lastFetchedAt: new Date(),
  };
  await tx.scoutSourceState.upsert({
    where: { sector_sourceId: { sector, sourceId: report.id } },
    create: { sector, sourceId: report.id, ...data },
    update: data,
  });
}

async function release(tx: Tx, jobId: string, status: 'completed' | 'failed'): Promise<void> {
  await tx.scoutSchedule.updateMany({
    where: { activeJobId: jobId },
    data: { activeJobId: null, lastFinishedAt: new Date(), lastStatus: status },
  });
}
