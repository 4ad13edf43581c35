import { createHash } from 'node:crypto';
import type { GapItem, KeywordItem, PainCluster, ReportTrendItem, ScanReport } from '@repo/schemas';
import { Prisma } from '../generated/prisma/client';
import type { Db } from './prisma';

type Client = Db | Prisma.TransactionClient;

/** The PostgreSQL channel a stored report is announced on (`pg_notify`), heard by every replica. */
export const REPORTS_CHANNEL = 'market_intel_reports';

/** Reports are parsed from JSON, so every value in them is a JSON value. */
function asJson(value: unknown): Prisma.InputJsonValue {
  return value as Prisma.InputJsonValue;
}

/** The result columns a Data API request reads from a sector report. */
export type ReportColumn = 'gaps' | 'painClusters' | 'trends' | 'keywords';

/** Item types per {@link ReportColumn}. */
export interface ReportColumnItems {
  gaps: GapItem;
  painClusters: PainCluster;
  trends: ReportTrendItem;
  keywords: KeywordItem;
}

/** One sector's latest results, as a forge job receives them (`generatedFrom`: ISO date-time of the report). */
export interface SectorSnapshot {
  sector: string;
  generatedFrom: string;
  gaps: GapItem[];
  painClusters: PainCluster[];
  trends: ReportTrendItem[];
  keywords: KeywordItem[];
}

/** One sector's items of one column, from that sector's latest report. */
export interface LatestSectorItems<C extends ReportColumn> {
  sector: string;
  generatedAt: Date;
  items: ReportColumnItems[C][];
}

const COLUMN_SQL: Record<ReportColumn, string> = {
  gaps: 'gaps',
  painClusters: 'pain_clusters',
  trends: 'trends',
  keywords: 'keywords',
};

/** Outcome of {@link ReportRepository.importReport}. */
export interface ImportResult {
  /** Id of the stored scan report (the existing one when `created` is false). */
  id: string;
  /** `false` when the same report was imported before (matched by content hash). */
  created: boolean;
  sectors: string[];
}

/** A sector's entry in the sector list; times are Dates. */
export interface SectorStats {
  sector: string;
  reportCount: number;
  latestReport: Date;
  gapsCount: number;
}

/** The latest report that carries a daily brief. */
export interface LatestBrief {
  brief: unknown;
  generatedAt: Date;
  sectors: string[];
}

/**
 * Stored scan reports (PostgreSQL tables `scan_reports`, `sector_reports`). Returns plain objects.
 */
export class ReportRepository {
  private caching = false;
  // Reads of the latest reports by column and sector, kept while caching is on; a pending read is
  // shared by the requests that ask at the same time.
  private readonly latest = new Map<string, Promise<LatestSectorItems<ReportColumn>[]>>();

  constructor(private readonly db: Db) {}

  /**
   * Turns the in-process cache of {@link latestItems} on or off (off clears it). Turn it on only while
   * report changes are heard ({@link invalidate} is called for every stored report, in this process
   * and in others: `listenForReportChanges`), since a cached read is never checked against the
   * database.
   */
  setCaching(on: boolean): void {
    this.caching = on;
    if (!on) this.latest.clear();
  }

  /**
   * A fingerprint of the stored reports (their number and the newest and oldest `generated_at`): it
   * changes when a report is added or deleted, also by hand, which the change notifications miss.
   */
  async watermark(): Promise<string> {
    const rows = await this.db.$queryRawUnsafe<{ mark: string }[]>(
      `SELECT count(*)::text || '|' || coalesce(max(generated_at)::text, '') || '|' ||
              coalesce(min(generated_at)::text, '') AS mark FROM scan_reports`,
    );
    return rows[0]?.mark ?? '';
  }

  /** Whether {@link latestItems} answers from the in-process cache (see {@link setCaching}). */
  get cachingOn(): boolean {
    return this.caching;
  }

  /** Forgets every cached read: a report was stored (here or by another process). */
  invalidate(): void {
    this.latest.clear();
  }

  /**
   * Stores a validated report in one transaction (all sectors or nothing). Importing identical content
   * again stores nothing and returns the existing id.
   * @param report a report already validated with the `ScanReport` schema
   * @param origin `"import"` or `"scan"`
   * @param client a transaction to store it in (a finished scan stores its report with the job's completion)
   */
  async importReport(
    report: ScanReport,
    origin: 'import' | 'scan',
    client: Client = this.db,
  ): Promise<ImportResult> {
    const contentHash = createHash('sha256').update(JSON.stringify(report)).digest('hex');
    const sectors = report.sectors.map((s) => s.sector);
    const generatedAt = new Date(report.generatedAt);
    const existing = await client.scanReport.findUnique({ where: { contentHash }, select: { id: true } });
    if (existing) return { id: existing.id, created: false, sectors };
    try {
      const created = await client.scanReport.create({
        data: {
          generatedAt,
          origin,
          contentHash,
          brief: report.brief ? asJson(report.brief) : Prisma.DbNull,
          sectors: {
            create: report.sectors.map((s) => ({
              sector: s.sector,
              generatedAt,
              gaps: asJson(s.gaps),
              painClusters: asJson(s.painClusters),
              trends: asJson(s.trends),
              keywords: asJson(s.keywords),
              gapsCount: s.gaps.length,
            })),
          },
        },
        select: { id: true },
      });
      // Every replica's cache hears it once this commits (with the scan's transaction when there is one).
      await client.$executeRawUnsafe(`SELECT pg_notify('${REPORTS_CHANNEL}', $1)`, String(created.id));
      if (client === this.db) this.invalidate();
      return { id: created.id, created: true, sectors };
    } catch (err) {
      // A concurrent import of the same content won the unique content hash.
      const again = await client.scanReport.findUnique({ where: { contentHash }, select: { id: true } });
      if (again) return { id: again.id, created: false, sectors };
      throw err;
    }
  }

  /**
   * One column of the latest report of each sector, or of one sector; from the in-process cache while
   * caching is on (see {@link setCaching}).
   * @param column which result list to read
   * @param sector a sector tag, or `undefined` for every sector
   * @returns one entry per sector that has a report (empty when none)
   */
  async latestItems<C extends ReportColumn>(column: C, sector?: string): Promise<LatestSectorItems<C>[]> {
    if (!this.caching) return this.readLatestItems(column, sector);
    const key = `${column}\n${sector ?? ''}`;
    let read = this.latest.get(key);
    if (!read) {
      read = this.readLatestItems(column, sector);
      this.latest.set(key, read);
      read.catch(() => {
        if (this.latest.get(key) === read) this.latest.delete(key);
      });
    }
    return read as Promise<LatestSectorItems<C>[]>;
  }

  private async readLatestItems<C extends ReportColumn>(
    column: C,
    sector?: string,
  ): Promise<LatestSectorItems<C>[]> {
    const col = COLUMN_SQL[column];
    const rows = sector
      ? await this.db.$queryRawUnsafe<{ sector: string; generated_at: Date; items: unknown }[]>(
          `SELECT sector, generated_at, ${col} AS items FROM sector_reports WHERE sector = $1
           ORDER BY generated_at DESC, id LIMIT 1`,
          sector,
        )
      : await this.db.$queryRawUnsafe<{ sector: string; generated_at: Date; items: unknown }[]>(
          `SELECT DISTINCT ON (sector) sector, generated_at, ${col} AS items FROM sector_reports
           ORDER BY sector, generated_at DESC, id`,
        );
    return rows.map((r) => ({
      sector: r.sector,
      generatedAt: r.generated_at,
      items: (Array.isArray(r.items) ? r.items : []) as ReportColumnItems[C][],
    }));
  }

  /**
   * The latest report of each requested sector with every result list, for a forge job's input
   * ("the latest scout data for them"); lists are cut to `maxItems` entries each.
   * @param sectors sector tags; empty for every sector that has a report
   * @returns one snapshot per sector that has a report, in sector order
   */
  async latestSnapshots(sectors: readonly string[], maxItems: number): Promise<SectorSnapshot[]> {
    const rows = await this.db.$queryRawUnsafe<
      {
        sector: string;
        generated_at: Date;
        gaps: unknown;
        pain_clusters: unknown;
        trends: unknown;
        keywords: unknown;
      }[]
    >(
      `SELECT DISTINCT ON (sector) sector, generated_at, gaps, pain_clusters, trends, keywords FROM sector_reports
       WHERE cardinality($1::text[]) = 0 OR sector = ANY($1::text[])
       ORDER BY sector, generated_at DESC, id`,
      [...sectors],
    );
    const cut = (v: unknown): unknown[] => (Array.isArray(v) ? v.slice(0, maxItems) : []);
    return rows.map((r) => ({
      sector: r.sector,
      generatedFrom: r.generated_at.toISOString(),
      gaps: cut(r.gaps) as GapItem[],
      painClusters: cut(r.pain_clusters) as PainCluster[],
      trends: cut(r.trends) as ReportTrendItem[],
      keywords: cut(r.keywords) as KeywordItem[],
    }));
  }

  /** Per sector: number of reports, latest report time and the gap count of that latest report. */
  async sectorStats(): Promise<SectorStats[]> {
    const rows = await this.db.$queryRawUnsafe<
      { sector: string; report_count: bigint; latest_report: Date; gaps_count: number }[]
    >(
      `SELECT s.sector, s.report_count, l.generated_at AS latest_report, l.gaps_count
         FROM (SELECT sector, count(*) AS report_count FROM sector_reports GROUP BY sector) s
         JOIN LATERAL (SELECT generated_at, gaps_count FROM sector_reports r WHERE r.sector = s.sector
                       ORDER BY generated_at DESC, id LIMIT 1) l ON true
        ORDER BY s.sector`,
    );
    return rows.map((r) => ({
      sector: r.sector,
      reportCount: Number(r.report_count),
      latestReport: r.latest_report,
      gapsCount: r.gaps_count,
    }));
  }

  /** Whether any report is stored. */
  async hasAnyReport(): Promise<boolean> {
    return (await this.db.scanReport.count({ take: 1 })) > 0;
  }

  /** Whether any stored report carries a daily brief. */
  async hasBrief(): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<unknown[]>(
      'SELECT 1 FROM scan_reports WHERE brief IS NOT NULL LIMIT 1',
    );
    return rows.length > 0;
  }

  /** The most recent report with a daily brief, or `null` when none exists. */
  async latestBrief(): Promise<LatestBrief | null> {
    const report = await this.db.scanReport.findFirst({
      where: { brief: { not: Prisma.DbNull } },
      orderBy: [{ generatedAt: 'desc' }, { id: 'asc' }],
      select: {
        brief: true,
        generatedAt: true,
        sectors: { select: { sector: true }, orderBy: { sector: 'asc' } },
      },
    });
    if (!report) return null;
    return {
      brief: report.brief,
      generatedAt: report.generatedAt,
      sectors: report.sectors.map((s) => s.sector),
    };
  }
}
