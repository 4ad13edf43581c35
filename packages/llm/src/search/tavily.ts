import { SearchConfigError } from '../errors';
import { clampLimit, fetchResults, probeEndpoint, type ProviderEndpoint } from './http';
import type { SearchOptions, SearchProbeResult, SearchProvider, SearchResult } from './types';

/** Options of {@link createTavilyProvider}. */
export interface TavilyOptions {
  /** Tavily API key (`tvly-...`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** API base URL (default `https://api.tavily.com`). */
  baseUrl?: string;
  /** Deadline of one request in milliseconds (default 15000). */
  timeoutMs?: number;
}

const CONFIG_HINT = 'check TAVILY_API_KEY';

/**
 * A {@link SearchProvider} over Tavily's Search API (`POST /search` with `{ query, max_results,
 * search_depth: "basic" }`, answer `{ results: [{ title, url, content }] }`). 401/403 ->
 * `SearchConfigError`; 429 (rate limit), 432/433 (plan or pay-as-you-go limit reached), network
 * errors, timeouts and 5xx -> `SearchUnavailableError`. `probe()` calls `GET /usage`, which checks
 * the key without spending search credits.
 * @param options key, base URL and timeout
 * @throws {SearchConfigError} at creation when the key is empty
 */
export function createTavilyProvider(options: TavilyOptions): SearchProvider {
  if (!options.apiKey) throw new SearchConfigError('tavily: an API key is required');
  const baseUrl = (options.baseUrl ?? 'https://api.tavily.com').replace(/\/+$/, '');
  const endpoint: ProviderEndpoint = {
    provider: 'tavily',
    timeoutMs: options.timeoutMs ?? 15_000,
    configHint: CONFIG_HINT,
  };
  const headers = {
    accept: 'application/json',
    'content-type': 'application/json',
    authorization: `Bearer ${options.apiKey}`,
  };
  return {
    name: 'tavily',
    async search(query: string, searchOptions: SearchOptions = {}): Promise<SearchResult[]> {
      const q = query.trim();
      if (!q) return [];
      const limit = clampLimit(searchOptions.limit);
      const body = JSON.stringify({ query: q.slice(0, 400), max_results: limit, search_depth: 'basic' });
      return fetchResults(endpoint, `${baseUrl}/search`, { method: 'POST', headers, body }, limit);
    },
    probe(): Promise<SearchProbeResult> {
      return probeEndpoint(
        endpoint,
        `${baseUrl}/usage`,
        { headers },
        (status) => status >= 200 && status < 300,
      );
    },
  };
}
