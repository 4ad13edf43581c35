import { parseFeed } from '@rowanmanning/feed-parser';
import { z } from 'zod';

/** An entry as parsed from a source, before normalisation (`summary` may hold HTML). */
export interface RawItem {
  kind: 'article' | 'discussion';
  url: string | null;
  title: string | null;
  summary: string | null;
  /** The entry's date, or `null` when missing or invalid. */
  publishedAt: Date | null;
  points?: number;
  comments?: number;
}

/** A body that is not the feed or JSON it should be. */
export class MalformedSourceError extends Error {
  /** @param message what is wrong, for `SourceReport.error` */
  constructor(message: string) {
    super(message);
    this.name = 'MalformedSourceError';
  }
}

function validDate(date: Date | null | undefined): Date | null {
  return date && Number.isFinite(date.getTime()) ? date : null;
}

/**
 * Parses an RSS 2.0 or Atom document (told apart by its content) with `@rowanmanning/feed-parser`.
 * An entry's summary is its description, else its content; its date the published, else updated date.
 * @param xml the response body
 * @throws {MalformedSourceError} not XML, or XML that is neither RSS nor Atom
 */
export function parseFeedItems(xml: string): RawItem[] {
  let feed: ReturnType<typeof parseFeed>;
  try {
    feed = parseFeed(xml);
  } catch (error) {
    throw new MalformedSourceError(
      `malformed feed: ${error instanceof Error ? error.message.slice(0, 200) : 'not RSS or Atom'}`,
    );
  }
  return feed.items.map((item) => ({
    kind: 'article' as const,
    url: item.url,
    title: item.title,
    summary: item.description ?? item.content,
    publishedAt: validDate(item.published) ?? validDate(item.updated),
  }));
}

const HnHit = z.object({
  objectID: z.string().min(1),
  title: z.string().nullish(),
  url: z.string().nullish(),
  story_text: z.string().nullish(),
  points: z.number().int().nullish(),
  num_comments: z.number().int().nullish(),
  created_at: z.string().nullish(),
});
/** The part of Algolia's Hacker News search answer the scout reads. */
const HnAnswer = z.object({ hits: z.array(HnHit) });

/**
 * Parses a Hacker News search answer (`/search_by_date`): each hit becomes a discussion whose URL is
 * the story's link, else its Hacker News page.
 * @param json the response body
 * @throws {MalformedSourceError} not JSON, or JSON without a valid `hits` array
 */
export function parseHnItems(json: string): RawItem[] {
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch {
    throw new MalformedSourceError('malformed JSON from the search API');
  }
  const parsed = HnAnswer.safeParse(data);
  if (!parsed.success)
    throw new MalformedSourceError(
      `unexpected search API answer: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`.trim(),
    );
  return parsed.data.hits.map((hit) => ({
    kind: 'discussion' as const,
    url: hit.url || `https://news.ycombinator.com/item?id=${encodeURIComponent(hit.objectID)}`,
    title: hit.title ?? null,
    summary: hit.story_text ?? null,
    publishedAt: hit.created_at ? validDate(new Date(hit.created_at)) : null,
    ...(typeof hit.points === 'number' ? { points: hit.points } : {}),
    ...(typeof hit.num_comments === 'number' ? { comments: hit.num_comments } : {}),
  }));
}

/**
 * The search URL of a Hacker News source: stories matching `query`, newest first.
 * @param baseUrl the API base URL (`https://hn.algolia.com/api/v1` or a test server)
 * @param query the search words
 * @param hitsPerPage stories asked for
 */
export function hnSearchUrl(baseUrl: string, query: string, hitsPerPage: number): string {
  const params = new URLSearchParams({ query, tags: 'story', hitsPerPage: String(hitsPerPage) });
  return `${baseUrl.replace(/\/+$/, '')}/search_by_date?${params.toString()}`;
}
