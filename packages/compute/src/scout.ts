import { z } from 'zod';
import { addDuplicateIssues, DailyBrief, ScanReport, SectorTag } from '@repo/schemas';

/**
 * Scout scans (README, "Scout jobs"): the contract between market-intel, which schedules
 * a scan of one sector and stores what it produced, and the pipeline-runner, which fetches the
 * sector's sources and runs the analysis steps. A scan is a job of kind `scout` on the compute step
 * chain; these are its input, the items and source reports of its fetch step, and its result.
 *
 * Hand-over after step 0 (fetch): the runner's state then holds `items` (this scan's normalised
 * {@link ScoutItem}s) and `sources` ({@link SourceReport}s). Before sending step 1, market-intel stores
 * the items (an item whose hash the sector already has is not stored again) and the sources'
 * validators, replaces `items` with the sector's stored window (published within `windowDays`, newest
 * first, at most {@link SCOUT_WINDOW_MAX_ITEMS}) and adds `newItems` (how many of this scan's items
 * were new); every other key of the state is passed on untouched.
 */

/** Most stored items one scan analyses (newest first within the window): bounds the LLM prompts. */
export const SCOUT_WINDOW_MAX_ITEMS = 150;

/** Default base URL of the Hacker News search API (Algolia). */
export const HN_SEARCH_BASE_URL = 'https://hn.algolia.com/api/v1';

/** A count of things (sources, items, trends ...): a whole number, 0 or more. */
const Count = z.number().int().nonnegative();

/** A strict object of figures that are all {@link Count}s, with these keys in this order. */
function counts<const K extends string>(...keys: K[]): z.ZodObject<Record<K, typeof Count>, z.core.$strict> {
  return z.strictObject(Object.fromEntries(keys.map((key) => [key, Count])) as Record<K, typeof Count>);
}

/** A source id: lowercase letters, digits and dashes, unique within its sector. */
const SourceId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be lowercase letters, digits and dashes');
const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** A news feed (RSS 2.0 or Atom, told apart by its content): trend material. */
export const FeedSource = z.strictObject({
  type: z.literal('feed'),
  id: SourceId,
  name: z.string().min(1).max(200),
  url: HttpUrl,
});
export type FeedSource = z.infer<typeof FeedSource>;

/**
 * A Hacker News search (Algolia's JSON API, stories by date matching `query`): pain material from
 * public discussion. `baseUrl` points tests at a local server.
 */
export const HnSource = z.strictObject({
  type: z.literal('hn'),
  id: SourceId,
  name: z.string().min(1).max(200),
  query: z.string().trim().min(1).max(200),
  baseUrl: HttpUrl.default(HN_SEARCH_BASE_URL),
});
export type HnSource = z.infer<typeof HnSource>;

/** One configured source of a sector. */
export const ScoutSource = z.discriminatedUnion('type', [FeedSource, HnSource]);
export type ScoutSource = z.infer<typeof ScoutSource>;

/** A sector and its sources (source ids unique within the sector). */
export const ScoutSectorSources = z
  .strictObject({ sector: SectorTag, sources: z.array(ScoutSource).min(1).max(50) })
  .superRefine((s, ctx) => addDuplicateIssues(s.sources, 'id', 'source id', 'sources', ctx));
export type ScoutSectorSources = z.infer<typeof ScoutSectorSources>;

/** The sources file (`SCOUT_SOURCES_FILE`): every scanned sector, each at most once. */
export const ScoutSourcesFile = z
  .strictObject({ sectors: z.array(ScoutSectorSources).min(1) })
  .superRefine((file, ctx) => addDuplicateIssues(file.sectors, 'sector', 'sector', 'sectors', ctx));
export type ScoutSourcesFile = z.infer<typeof ScoutSourcesFile>;

/** HTTP validators of a source's last successful fetch, sent back as `If-None-Match` / `If-Modified-Since`. */
export const SourceValidators = z.strictObject({
  etag: z.string().max(500).optional(),
  lastModified: z.string().max(100).optional(),
});
export type SourceValidators = z.infer<typeof SourceValidators>;

/** A sector's latest figures: its gaps and pain mentions (counts) and its top keywords. */
const SectorFigures = z.strictObject({
  gaps_count: Count,
  pain_mentions: Count,
  top_keywords: z.array(z.string()),
});

/** Another sector's latest figures, for the brief's sector heatmap and cross signals. */
export const PeerSector = z.strictObject({ sector: z.string(), ...SectorFigures.shape });
export type PeerSector = z.infer<typeof PeerSector>;

/** Input of a `scout` job: what market-intel sends with every step command of the scan. */
export const ScoutJobInput = z.strictObject({
  sector: SectorTag,
  sources: z.array(ScoutSource).min(1),
  /** Validators by source id (absent: fetch unconditionally). */
  validators: z.record(z.string(), SourceValidators),
  /** Days of items the analysis covers, by publication date. */
  windowDays: z.number().int().min(1).max(90),
  peers: z.array(PeerSector),
});
export type ScoutJobInput = z.infer<typeof ScoutJobInput>;

/**
 * A normalised item: a news article (from a feed) or a discussion (from a search). `hash` is the
 * SHA-256 (hex) of the canonical URL and identifies the item across sources and scans; `source` is the
 * id of the source it came from (provenance), `sourceName` its display name; `summary` is plain text.
 */
export const ScoutItem = z.strictObject({
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  kind: z.enum(['article', 'discussion']),
  url: z.string().max(2048),
  title: z.string().min(1).max(500),
  summary: z.string().max(2000),
  source: z.string(),
  sourceName: z.string(),
  publishedAt: z.iso.datetime({ offset: true }),
  /** ISO 639-1 code of the detected language (`und` when unknown). */
  lang: z.string().min(2).max(3),
  /** Discussion score (Hacker News points). */
  points: z.number().int().optional(),
  /** Number of comments of a discussion. */
  comments: z.number().int().optional(),
});
export type ScoutItem = z.infer<typeof ScoutItem>;

/**
 * How one source's fetch went: `ok` (fetched and parsed), `not_modified` (HTTP 304 on a conditional
 * request: nothing new) or `failed` (`error` says why: timeout, HTTP status, too large, malformed).
 * `items` counts the entries parsed, `kept` those left after normalisation (language and length
 * filters, duplicates within the scan); `durationMs` in milliseconds. `validators` are the ones to send
 * next time (the previous ones when the fetch failed or was not modified).
 */
export const SourceReport = z.strictObject({
  id: z.string(),
  type: z.enum(['feed', 'hn']),
  name: z.string(),
  url: z.string(),
  status: z.enum(['ok', 'not_modified', 'failed']),
  httpStatus: z.number().int().nullable(),
  error: z.string().nullable(),
  items: Count,
  kept: Count,
  durationMs: Count,
  validators: SourceValidators,
});
export type SourceReport = z.infer<typeof SourceReport>;

/** `DailyBrief.stats` of a scan: counts of what the scan saw and produced. */
export const BriefStats = counts(
  'sources',
  'sources_failed',
  'items_analysed',
  'new_items',
  'articles',
  'discussions',
  'trends',
  'pain_clusters',
  'gaps',
);
export type BriefStats = z.infer<typeof BriefStats>;

/** `DailyBrief.top_articles[]`: an analysed article, with the score of the trend it supports. */
export const BriefArticle = z.strictObject({
  title: z.string(),
  url: z.string(),
  source: z.string(),
  published_at: z.iso.datetime({ offset: true }),
  score: z.number(),
});
export type BriefArticle = z.infer<typeof BriefArticle>;

/**
 * `DailyBrief.sector_heatmap[sector]`: a sector's latest figures; `heat` (0–1) is its pain mentions
 * relative to the hottest sector of the map.
 */
export const SectorHeat = SectorFigures.extend({ heat: z.number().min(0).max(1) });
export type SectorHeat = z.infer<typeof SectorHeat>;

/** `DailyBrief.narratives[]`: a story line running through several trends (titles of those trends). */
export const Narrative = z.strictObject({
  title: z.string(),
  summary: z.string(),
  trends: z.array(z.string()),
});
export type Narrative = z.infer<typeof Narrative>;

/** `DailyBrief.cross_signals[]`: a keyword of this scan that is also a top keyword of other sectors. */
export const CrossSignal = z.strictObject({
  keyword: z.string(),
  count: Count,
  sectors: z.array(z.string()).min(1),
});
export type CrossSignal = z.infer<typeof CrossSignal>;

/** The daily brief a scan produces: the Data API's `DailyBrief` with its open item shapes fixed. */
export const ScanBrief = z.strictObject({
  ...DailyBrief.shape,
  stats: BriefStats,
  top_articles: z.array(BriefArticle),
  sector_heatmap: z.record(z.string(), SectorHeat),
  narratives: z.array(Narrative),
  cross_signals: z.array(CrossSignal),
});
export type ScanBrief = z.infer<typeof ScanBrief>;

/**
 * Entries of a scan's fetch that normalisation dropped, by reason: `duplicate` (an earlier entry of the
 * scan has the same canonical URL or title), `language` (detected and not one of the accepted
 * languages) and `length` (no usable URL, or no or too short a title).
 */
export const DroppedItems = counts('duplicate', 'language', 'length');
export type DroppedItems = z.infer<typeof DroppedItems>;

/** Figures of one scan (the admin command prints them). */
export const ScoutStats = z.strictObject({
  sources: Count,
  sourcesFailed: Count,
  /** Items kept from this scan's fetches (after normalisation). */
  itemsFetched: Count,
  /** Of those, items no earlier scan of the sector had stored. */
  newItems: Count,
  /** Items of the window the analysis ran on. */
  analysed: Count,
  dropped: DroppedItems,
  trends: Count,
  pains: Count,
  painClusters: Count,
  gaps: Count,
  keywords: Count,
});
export type ScoutStats = z.infer<typeof ScoutStats>;

/**
 * Result of a `scout` job: the scan report of its one sector (`generatedAt` = when the scan fetched
 * its sources; `brief` a {@link ScanBrief}), its figures and every source's report.
 */
export const ScoutResult = z.strictObject({
  report: ScanReport,
  stats: ScoutStats,
  sources: z.array(SourceReport),
});
export type ScoutResult = z.infer<typeof ScoutResult>;
