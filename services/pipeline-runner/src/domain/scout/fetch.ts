import type { DroppedItems, ScoutItem, ScoutJobInput, ScoutSource, SourceReport } from '@repo/compute';
import { createScoutHttp, SourceFetchError, type ScoutHttp, type ScoutHttpOptions } from './http';
import { normaliseItems, type SourceEntries } from './normalise';
import { hnSearchUrl, MalformedSourceError, parseFeedItems, parseHnItems, type RawItem } from './parse';
import type { ScoutFetchSettings } from './settings';

/** What the fetch step produced: normalised items, one report per source (input order) and the drops. */
export interface ScanFetch {
  items: ScoutItem[];
  sources: SourceReport[];
  dropped: DroppedItems;
}

const FEED_ACCEPT =
  'application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5';

/** The URL a source is fetched from. */
export function sourceRequestUrl(source: ScoutSource, settings: ScoutFetchSettings): string {
  return source.type === 'feed'
    ? source.url
    : hnSearchUrl(source.baseUrl, source.query, settings.maxItemsPerSource);
}

async function fetchOne(
  http: ScoutHttp,
  source: ScoutSource,
  input: ScoutJobInput,
  settings: ScoutFetchSettings,
): Promise<{ report: SourceReport; entries: RawItem[] }> {
  const url = sourceRequestUrl(source, settings);
  const previous = input.validators[source.id] ?? {};
  const started = Date.now();
  const report = (patch: Partial<SourceReport>): SourceReport => ({
    id: source.id,
    type: source.type,
    name: source.name,
    url,
    status: 'failed',
    httpStatus: null,
    error: null,
    items: 0,
    kept: 0,
    durationMs: Math.max(0, Math.round(Date.now() - started)),
    validators: previous,
    ...patch,
  });
  try {
    const response = await http.get(url, previous, source.type === 'feed' ? FEED_ACCEPT : 'application/json');
    if (response.status === 304)
      return {
        report: report({ status: 'not_modified', httpStatus: 304, validators: response.validators }),
        entries: [],
      };
    const entries = source.type === 'feed' ? parseFeedItems(response.body) : parseHnItems(response.body);
    return {
      report: report({
        status: 'ok',
        httpStatus: response.status,
        items: entries.length,
        validators: response.validators,
      }),
      entries,
    };
  } catch (error) {
    if (error instanceof SourceFetchError)
      return { report: report({ httpStatus: error.httpStatus, error: error.message }), entries: [] };
    if (error instanceof MalformedSourceError)
      return { report: report({ httpStatus: 200, error: error.message }), entries: [] };
    throw error;
  }
}

/**
 * Fetches every source of a scan and normalises what they hold (README, "Scout pipeline"). Sources on
 * one host name are fetched one after the other, at least `hostDelayMs` apart; different hosts in
 * parallel, at most `hostConcurrency` at a time. A source that fails (network, timeout, HTTP >= 400,
 * too large, malformed, or refused by the SSRF guard: it or a redirect hop is a non-public address
 * not on `ssrfAllowlist`) is reported `failed` with the reason and its previous validators; a 304 is
 * `not_modified` with no items. Never throws for a source's failure.
 * @param input the job input (sources, validators by source id)
 * @param settings the fetch settings
 * @param fetchedAt the scan's time (the date of undated items)
 * @param options resolver override (tests)
 * @throws TypeError when `settings.ssrfAllowlist` holds an invalid entry
 */
export async function fetchSources(
  input: ScoutJobInput,
  settings: ScoutFetchSettings,
  fetchedAt: Date,
  options: ScoutHttpOptions = {},
): Promise<ScanFetch> {
  const http = createScoutHttp(settings, options);
  const results = new Map<string, { report: SourceReport; entries: RawItem[] }>();
  const byHost = new Map<string, ScoutSource[]>();
  for (const source of input.sources) {
    const host = new URL(sourceRequestUrl(source, settings)).hostname;
    byHost.set(host, [...(byHost.get(host) ?? []), source]);
  }
  const queue = [...byHost.values()];
  const worker = async (): Promise<void> => {
    for (let group = queue.shift(); group; group = queue.shift())
      for (const source of group) results.set(source.id, await fetchOne(http, source, input, settings));
  };
  try {
    await Promise.all(
      Array.from({ length: Math.max(1, Math.min(settings.hostConcurrency, queue.length)) }, worker),
    );
  } finally {
    await http.close();
  }
  const ordered = input.sources.map((s) => results.get(s.id)!);
  const entries: SourceEntries[] = input.sources.map((source, i) => ({
    source: { id: source.id, name: source.name },
    entries: ordered[i]?.entries ?? [],
  }));
  const normalised = normaliseItems(entries, settings, fetchedAt);
  return {
    items: normalised.items,
    sources: ordered.map((r) => ({ ...r.report, kept: normalised.kept[r.report.id] ?? 0 })),
    dropped: normalised.dropped,
  };
}
