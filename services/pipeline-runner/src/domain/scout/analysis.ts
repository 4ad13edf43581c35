import type { KeywordItem, Severity } from '@repo/schemas';
import type { CrossSignal, PeerSector, ScoutItem, SectorHeat } from '@repo/compute';

const HOUR = 3_600_000;

/**
 * A trend's velocity from the dates of the items behind it, relative to the scan's time: `new` when
 * every item is at most 24 h old, `rising` when more than half are at most 48 h old, `steady` when
 * at least one is, `cooling` when none is (the story is older than two days).
 * @param dates the cited items' publication dates (ISO) @param now the scan's time
 */
export function velocityOf(dates: readonly string[], now: Date): 'new' | 'rising' | 'steady' | 'cooling' {
  if (dates.length === 0) return 'cooling';
  const ages = dates.map((d) => now.getTime() - new Date(d).getTime());
  if (ages.every((a) => a <= 24 * HOUR)) return 'new';
  const recent = ages.filter((a) => a <= 48 * HOUR).length;
  if (recent * 2 > dates.length) return 'rising';
  return recent > 0 ? 'steady' : 'cooling';
}

/** An item's weight as evidence: 1, plus log10(1 + points) for a discussion. */
export function itemWeight(item: ScoutItem): number {
  return 1 + (item.points && item.points > 0 ? Math.log10(1 + item.points) : 0);
}

/**
 * The strongest of a trend's items: highest {@link itemWeight}, then newest, then first in the window.
 * @param items the cited items, in window order
 */
export function strongestItem(items: readonly ScoutItem[]): ScoutItem | undefined {
  return [...items].sort(
    (a, b) => itemWeight(b) - itemWeight(a) || Date.parse(b.publishedAt) - Date.parse(a.publishedAt),
  )[0];
}

/**
 * A trend's score (GapItem.trend_signal.score, BriefArticle.score): the sum of its items'
 * {@link itemWeight}s, 2 decimals — one point per cited item, more for discussed ones.
 * @param items the cited items
 */
export function trendScore(items: readonly ScoutItem[]): number {
  return Math.round(items.reduce((sum, item) => sum + itemWeight(item), 0) * 100) / 100;
}

/** Weight of each severity in a cluster's intensity. */
export const SEVERITY_WEIGHT: Record<Severity, number> = { critical: 4, high: 3, medium: 2, low: 1 };

/**
 * A cluster's intensity: the mean severity weight ({@link SEVERITY_WEIGHT}) of its pains, each pain
 * weighted by the number of items behind it; >= 3.5 `critical`, >= 2.5 `high`, >= 1.5 `medium`,
 * else `low`.
 * @param pains each pain's severity and item count
 */
export function intensityOf(pains: readonly { severity: Severity; items: number }[]): Severity {
  const total = pains.reduce((n, p) => n + Math.max(1, p.items), 0);
  if (total === 0) return 'low';
  const mean = pains.reduce((n, p) => n + SEVERITY_WEIGHT[p.severity] * Math.max(1, p.items), 0) / total;
  return mean >= 3.5 ? 'critical' : mean >= 2.5 ? 'high' : mean >= 1.5 ? 'medium' : 'low';
}

/**
 * The brief's sector heatmap: this sector's figures and the peers', each with `heat` = its pain
 * mentions relative to the largest of the map (0–1, 2 decimals; 0 when no sector has any).
 * @param own this scan's sector and figures @param peers the other sectors' latest figures
 */
export function sectorHeatmap(
  own: { sector: string; gaps_count: number; pain_mentions: number; top_keywords: string[] },
  peers: readonly PeerSector[],
): Record<string, SectorHeat> {
  const rows = [own, ...peers.filter((p) => p.sector !== own.sector)];
  const hottest = Math.max(0, ...rows.map((r) => r.pain_mentions));
  const map: Record<string, SectorHeat> = {};
  for (const r of rows)
    map[r.sector] = {
      gaps_count: r.gaps_count,
      pain_mentions: r.pain_mentions,
      top_keywords: r.top_keywords,
      heat: hottest > 0 ? Math.round((r.pain_mentions / hottest) * 100) / 100 : 0,
    };
  return map;
}

/**
 * Cross signals: this scan's keywords that are top keywords of other sectors, with the sectors.
 * @param keywords this scan's keywords @param peers the other sectors
 */
export function crossSignals(keywords: readonly KeywordItem[], peers: readonly PeerSector[]): CrossSignal[] {
  const out: CrossSignal[] = [];
  for (const k of keywords) {
    const sectors = peers
      .filter((p) => p.top_keywords.some((t) => t.toLowerCase() === k.keyword))
      .map((p) => p.sector);
    if (sectors.length > 0) out.push({ keyword: k.keyword, count: k.count, sectors });
  }
  return out;
}
