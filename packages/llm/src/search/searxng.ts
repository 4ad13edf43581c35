import { clampLimit, fetchResults, probeEndpoint, type ProviderEndpoint } from './http';
import type { SearchOptions, SearchProbeResult, SearchProvider, SearchResult } from './types';

/** Options of {@link createSearxngProvider}. */
export interface SearxngOptions {
  /** Base URL of the SearXNG instance, e.g. `http://127.0.0.1:8888` (a path prefix is kept). */
  baseUrl: string;
  /** Deadline of one request in milliseconds (default 10000). */
  timeoutMs?: number;
}

const CONFIG_HINT = 'enable the json output format: search.formats in settings.yml must list json';

function searchUrl(baseUrl: string, query: string): string {
  const url = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  const search = new URL('search', url);
  search.searchParams.set('q', query);
  search.searchParams.set('format', 'json');
  return search.toString();
}

/**
 * A {@link SearchProvider} over SearXNG's JSON API (`GET /search?q=<query>&format=json`, answer
 * `{ results: [{ title, url, content }] }`). 401/403 (typically the `json` format not enabled in
 * `settings.yml`) -> `SearchConfigError`; network errors, timeouts, 429 (its limiter) and 5xx ->
 * `SearchUnavailableError`.
 *
 * `probe()` requests `/search?q=&format=json`: SearXNG checks the output format first (403 when json
 * is disabled) and then answers 400 "No query" without querying any engine, so the probe is cheap and
 * still detects the configuration error.
 * @param options instance URL and timeout
 */
export function createSearxngProvider(options: SearxngOptions): SearchProvider {
  const endpoint: ProviderEndpoint = {
    provider: 'searxng',
    timeoutMs: options.timeoutMs ?? 10_000,
    configHint: CONFIG_HINT,
  };
  const headers = { accept: 'application/json' };
  return {
    name: 'searxng',
    async search(query: string, searchOptions: SearchOptions = {}): Promise<SearchResult[]> {
      const q = query.trim();
      if (!q) return [];
      return fetchResults(
        endpoint,
        searchUrl(options.baseUrl, q),
        { headers },
        clampLimit(searchOptions.limit),
      );
    },
    probe(): Promise<SearchProbeResult> {
      // 400 is SearXNG's "No query": the json format is enabled.
      return probeEndpoint(
        endpoint,
        searchUrl(options.baseUrl, ''),
        { headers },
        (status) => status === 400 || (status >= 200 && status < 300),
      );
    },
  };
}
