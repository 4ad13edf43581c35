import { parseArgs } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import { JobRepository } from '../../data/jobs';
import { ReportRepository } from '../../data/reports';
import { ScanRepository, type ScanProgress } from '../../data/scans';
import { loadSourcesFile, SourcesFileError } from '../../domain/scout-sources';
import { runCommand, withDatabase } from './command';

const USAGE = `Usage: scan <sector> [--sources-file FILE] [--window-days N] [--detach]
       scan --list

Starts a scout scan of <sector> now (unless one is already running: then it follows that one) and
follows its progress until it ends. Needs DATABASE_URL and the sources file (--sources-file or
SCOUT_SOURCES_FILE); a running market-intel publishes the scan to RabbitMQ and a pipeline-runner
executes it. Exit status: 0 completed, 1 failed, 2 usage or configuration error.
--window-days  days of stored items the scan analyses (default SCOUT_WINDOW_DAYS or 7)
--detach       print the job id and return without following
--list         every scanned sector: the scan running now and the last one`;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'sources-file': { type: 'string' },
      'window-days': { type: 'string' },
      detach: { type: 'boolean', default: false },
      list: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const sector = positionals[0];
  if (values.help || (!sector && !values.list)) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  return withDatabase('scan', async (db) => {
    try {
      const reports = new ReportRepository(db);
      const scans = new ScanRepository(db, new JobRepository(db), reports);
      if (values.list) {
        for (const row of await scans.schedules()) {
          console.log(
            `${row.sector}: ${row.activeJobId ? `running ${row.activeJobId}` : 'idle'}; last ${row.lastJobId ?? '-'} ` +
              `${row.lastStatus ?? ''} started ${row.lastStartedAt?.toISOString() ?? '-'} finished ${row.lastFinishedAt?.toISOString() ?? '-'}`,
          );
        }
        return 0;
      }
      const file = values['sources-file'] ?? process.env.SCOUT_SOURCES_FILE;
      if (!file) {
        console.error('scan: give --sources-file or set SCOUT_SOURCES_FILE');
        return 2;
      }
      const windowDays = Number(values['window-days'] ?? process.env.SCOUT_WINDOW_DAYS ?? 7);
      if (!Number.isInteger(windowDays) || windowDays < 1 || windowDays > 30) {
        console.error('scan: --window-days must be an integer from 1 to 30');
        return 2;
      }
      const config = loadSourcesFile(file);
      const entry = config.sectors.find((s) => s.sector === sector);
      if (!entry) {
        console.error(
          `scan: ${file} has no sector "${sector}" (it has ${config.sectors.map((s) => s.sector).join(', ')})`,
        );
        return 2;
      }
      const start = await scans.start(
        { sector: entry.sector, sources: entry.sources, windowDays },
        { intervalMs: 0, force: true },
      );
      if (!start.jobId) throw new Error('the sector could not be claimed');
      console.log(
        start.started
          ? `Scan of ${entry.sector} started: ${start.jobId}`
          : `A scan of ${entry.sector} is already running: ${start.jobId}; following it`,
      );
      if (values.detach) return 0;
      return (await follow(scans, start.jobId)).status === 'completed' ? 0 : 1;
    } catch (err) {
      if (err instanceof SourcesFileError) {
        console.error(err.message);
        return 2;
      }
      throw err;
    }
  });
}

/** Prints each step as it is applied, then the sources and the report figures. */
async function follow(scans: ScanRepository, jobId: string): Promise<ScanProgress> {
  const startedAt = Date.now();
  let shown = '';
  let warned = false;
  for (;;) {
    const progress = await scans.progress(jobId);
    if (!progress) throw new Error(`job ${jobId} is not a scan`);
    const line = `[${String(progress.progressPct).padStart(3)}%] ${progress.status}${progress.stepLabel ? `: ${progress.stepLabel}` : ''}${progress.lastError ? ` (retrying: ${progress.lastError})` : ''}`;
    if (line !== shown) console.log(line);
    shown = line;
    if (progress.status === 'completed' || progress.status === 'failed') {
      report(progress);
      return progress;
    }
    if (!warned && progress.status === 'pending' && Date.now() - startedAt > 30_000) {
      warned = true;
      console.log(
        '  still pending after 30 s: is market-intel (it publishes the scan) and a pipeline-runner running?',
      );
    }
    await delay(500);
  }
}

function report(progress: ScanProgress): void {
  if (progress.status === 'failed') {
    console.log(`Scan failed: ${progress.error ?? 'unknown error'}`);
    return;
  }
  const result = progress.result;
  if (!result) return;
  for (const s of result.sources) {
    console.log(
      `  source ${s.id.padEnd(20)} ${s.status.padEnd(12)} ${String(s.kept).padStart(4)} of ${String(s.items).padStart(4)} items kept${s.error ? `  ${s.error}` : ''}`,
    );
  }
  const sector = result.report.sectors[0];
  console.log(
    `Fetched ${result.stats.itemsFetched} items, ${result.stats.newItems} new, ${result.stats.analysed} analysed; ` +
      (sector && result.stats.analysed > 0
        ? `report: ${sector.gaps.length} gaps, ${sector.painClusters.length} pain clusters, ${sector.trends.length} trends, ${sector.keywords.length} keywords`
        : 'no item to analyse: no report stored'),
  );
}

runCommand('scan', main);
