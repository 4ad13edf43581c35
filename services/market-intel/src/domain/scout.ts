import { AppError } from '@repo/errors';
import type {
  BriefResponse,
  DailyBrief,
  GapsResponse,
  KeywordItem,
  KeywordsResponse,
  PainClustersResponse,
  TrendsResponse,
} from '@repo/schemas';
import type { LatestSectorItems, ReportColumn, ReportRepository } from '../data/reports';

const DAY_MS = 86_400_000;

function newest(entries: { generatedAt: Date }[]): string | null {
  let latest: Date | null = null;
  for (const e of entries) if (!latest || e.generatedAt > latest) latest = e.generatedAt;
  return latest ? latest.toISOString() : null;
}

function flatten<C extends ReportColumn>(entries: LatestSectorItems<C>[]) {
  return entries.flatMap((e) => e.items);
}

/**
 * The Data API's answers, computed from the latest stored report of each sector
 * (services/market-intel/README.md, "Endpoints"). With a `sector`, that sector's latest report in the
 * scan's order; without one, the latest report of every sector merged (gaps by trend score, clusters
 * by mentions, trends by date, keywords summed). A sector without data gives an empty list and
 * `generatedFrom: null`.
 */
export class ScoutService {
  /**
   * @param reports the stored reports
   * @param now the clock used by the `days` window of trends
   */
  constructor(
    private readonly reports: ReportRepository,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** GET /scout/gaps: at most `limit` gaps. */
  async gaps(sector: string | undefined, limit: number): Promise<GapsResponse> {
    const entries = await this.reports.latestItems('gaps', sector);
    let gaps = flatten(entries);
    if (!sector) gaps = stableSort(gaps, (a, b) => b.trend_signal.score - a.trend_signal.score);
    gaps = gaps.slice(0, limit);
    return { gaps, count: gaps.length, generatedFrom: newest(entries), sector: sector ?? null };
  }

  /** GET /scout/pain-clusters: at most `limit` clusters. */
  async painClusters(sector: string | undefined, limit: number): Promise<PainClustersResponse> {
    const entries = await this.reports.latestItems('painClusters', sector);
    let clusters = flatten(entries);
    if (!sector) clusters = stableSort(clusters, (a, b) => b.mentions - a.mentions);
    clusters = clusters.slice(0, limit);
    return {
      painClusters: clusters,
      count: clusters.length,
      generatedFrom: newest(entries),
      sector: sector ?? null,
    };
  }

  /** GET /scout/trends: trends dated within the last `days` days (24 h each), newest first. */
  async trends(sector: string | undefined, days: number, limit: number): Promise<TrendsResponse> {
    const entries = await this.reports.latestItems('trends', sector);
    const since = this.now().getTime() - days * DAY_MS;
    const dated = flatten(entries)
      .map((t) => ({ t, at: Date.parse(t.date) }))
      .filter((x) => x.at >= since);
    const trends = stableSort(dated, (a, b) => b.at - a.at)
      .slice(0, limit)
      .map(({ t }) => ({
        title: t.title,
        description: t.description,
        velocity: t.velocity,
        source: t.source,
      }));
    return { trends, count: trends.length, days, generatedFrom: newest(entries), sector: sector ?? null };
  }

  /** GET /scout/keywords: at most `limit` keywords by aggregate count (summed across sectors). */
  async keywords(sector: string | undefined, limit: number): Promise<KeywordsResponse> {
    const entries = await this.reports.latestItems('keywords', sector);
    const totals = new Map<string, number>();
    for (const k of flatten(entries)) totals.set(k.keyword, (totals.get(k.keyword) ?? 0) + k.count);
    const keywords: KeywordItem[] = [...totals]
      .map(([keyword, count]) => ({ keyword, count }))
      .sort((a, b) => b.count - a.count || (a.keyword < b.keyword ? -1 : a.keyword > b.keyword ? 1 : 0))
      .slice(0, limit);
    return { keywords, count: keywords.length, generatedFrom: newest(entries), sector: sector ?? null };
  }

  /**
   * Checked before payment is requested, so nobody pays for a brief that does not exist.
   * @throws AppError `not_found` (404) when no report carries a brief
   */
  async assertBriefExists(): Promise<void> {
    if (!(await this.reports.hasBrief())) throw new AppError('not_found', 'No completed brief exists');
  }

  /**
   * GET /scout/brief: the latest daily brief.
   * @throws AppError `not_found` (404) when no report carries a brief
   */
  async brief(): Promise<BriefResponse> {
    const latest = await this.reports.latestBrief();
    if (!latest) throw new AppError('not_found', 'No completed brief exists');
    return {
      brief: latest.brief as DailyBrief,
      generatedFrom: latest.generatedAt.toISOString(),
      sectors: latest.sectors,
    };
  }
}

function stableSort<T>(items: T[], compare: (a: T, b: T) => number): T[] {
  return items
    .map((item, index) => ({ item, index }))
    .sort((a, b) => compare(a.item, b.item) || a.index - b.index)
    .map((x) => x.item);
}
