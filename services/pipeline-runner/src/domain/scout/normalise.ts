import { createHash } from 'node:crypto';
import { convert } from 'html-to-text';
// The heavy profile (larger n-gram tables) tells short English headlines apart far more reliably.
import { detect } from 'tinyld/heavy';
import type { DroppedItems, ScoutItem } from '@repo/compute';
import type { RawItem } from './parse';
import type { ScoutFetchSettings } from './settings';

/** Query parameters that only track where a click came from: dropped from canonical URLs. */
const TRACKING_PARAM = /^(utm_.*|fbclid|gclid|ref)$/i;

/**
 * The canonical form of a link, so one story has one URL whatever feed or campaign it came through:
 * http(s) only; scheme and host lowercase, default port, credentials and fragment dropped; `utm_*`,
 * `fbclid`, `gclid` and `ref` parameters dropped, the others sorted by name then value; trailing
 * slashes of the path dropped (the root stays `/`). Idempotent.
 * @param url an absolute URL
 * @returns the canonical URL, or `null` when `url` is not an absolute http(s) URL
 */
export function canonicalUrl(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  parsed.hash = '';
  parsed.username = '';
  parsed.password = '';
  const params = [...parsed.searchParams.entries()]
    .filter(([name]) => !TRACKING_PARAM.test(name))
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  parsed.search = params.length ? new URLSearchParams(params).toString() : '';
  parsed.pathname = parsed.pathname.replace(/\/+$/, '') || '/';
  return parsed.toString();
}

/**
 * The item hash: SHA-256 (lowercase hex) of the canonical URL.
 * @param canonical a URL as returned by {@link canonicalUrl}
 */
export function itemHash(canonical: string): string {
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * Plain text of an HTML fragment (tags dropped, entities decoded, links without their targets,
 * images dropped, whitespace collapsed), by `html-to-text`.
 * @param html the fragment (plain text passes through)
 */
export function plainText(html: string): string {
  return convert(html, {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'h1', options: { uppercase: false } },
      { selector: 'h2', options: { uppercase: false } },
      { selector: 'h3', options: { uppercase: false } },
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  })
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Cuts text to at most `max` characters, at a word boundary when one is near, with an ellipsis.
 * @param text the text @param max the maximum length in characters
 */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** Text shorter than this (in characters) is too short to tell its language: `und`, kept. */
export const MIN_LANGUAGE_TEXT = 30;

/**
 * The ISO 639-1 code of the language of `text` (tinyld, heavy profile), or `und` when it is too short
 * ({@link MIN_LANGUAGE_TEXT}) or not recognised.
 * @param text title and summary of an item
 */
export function detectLanguage(text: string): string {
  const sample = text.slice(0, 500);
  if (sample.trim().length < MIN_LANGUAGE_TEXT) return 'und';
  const lang = detect(sample);
  return /^[a-z]{2,3}$/.test(lang) ? lang : 'und';
}

/**
 * The key two titles share when they name the same story: lowercase, accents and punctuation
 * dropped, whitespace collapsed.
 * @param title an item title
 */
export function titleKey(title: string): string {
  return title
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** Entries of one source, in the source's order. */
export interface SourceEntries {
  source: { id: string; name: string };
  entries: RawItem[];
}

/** What {@link normaliseItems} kept and dropped. */
export interface Normalised {
  items: ScoutItem[];
  /** Items kept per source id. */
  kept: Record<string, number>;
  dropped: DroppedItems;
}

/**
 * Normalises the entries of every source of a scan (README, "Scout pipeline"), in source order then
 * entry order, each source capped at `maxItemsPerSource` entries (the first ones). An entry is dropped
 * for `length` when it has no usable http(s) URL, no title or a title shorter than `minTitleChars`;
 * for `language` when its detected language is known and not in `languages`; for `duplicate` when an
 * earlier entry of the scan has the same hash (canonical URL) or the same {@link titleKey}. Titles and
 * summaries become plain text (titles cut to 500 characters, summaries to `maxSummaryChars`); a
 * missing, invalid or future date (more than a day ahead) becomes `fetchedAt`.
 * @param sources each source's parsed entries
 * @param settings the filters
 * @param fetchedAt the scan's time
 */
export function normaliseItems(
  sources: readonly SourceEntries[],
  settings: ScoutFetchSettings,
  fetchedAt: Date,
): Normalised {
  const items: ScoutItem[] = [];
  const kept: Record<string, number> = {};
  const dropped = { duplicate: 0, language: 0, length: 0 };
  const hashes = new Set<string>();
  const titles = new Set<string>();
  const allowed = new Set(settings.languages.map((l) => l.toLowerCase()));
  const latest = fetchedAt.getTime() + 86_400_000;
  for (const { source, entries } of sources) {
    kept[source.id] = 0;
    for (const entry of entries.slice(0, settings.maxItemsPerSource)) {
      const canonical = entry.url ? canonicalUrl(entry.url) : null;
      const title = truncate(plainText(entry.title ?? ''), 500);
      if (!canonical || canonical.length > 2048 || title.length < Math.max(1, settings.minTitleChars)) {
        dropped.length += 1;
        continue;
      }
      const summary = truncate(plainText(entry.summary ?? ''), Math.min(2000, settings.maxSummaryChars));
      const lang = detectLanguage(`${title}. ${summary}`);
      if (lang !== 'und' && !allowed.has(lang)) {
        dropped.language += 1;
        continue;
      }
      const hash = itemHash(canonical);
      const key = titleKey(title);
      if (hashes.has(hash) || titles.has(key)) {
        dropped.duplicate += 1;
        continue;
      }
      hashes.add(hash);
      titles.add(key);
      const date = entry.publishedAt && entry.publishedAt.getTime() <= latest ? entry.publishedAt : fetchedAt;
      items.push({
        hash,
        kind: entry.kind,
        url: canonical,
        title,
        summary,
        source: source.id,
        sourceName: source.name,
        publishedAt: date.toISOString(),
        lang,
        ...(entry.points === undefined ? {} : { points: entry.points }),
        ...(entry.comments === undefined ? {} : { comments: entry.comments }),
      });
      kept[source.id] = (kept[source.id] ?? 0) + 1;
    }
  }
  return { items, kept, dropped };
}
