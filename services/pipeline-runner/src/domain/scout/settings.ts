/**
 * How the scout pipeline fetches and filters its sources (README, "Scout pipeline"). The runner reads
 * them from `SCOUT_*` variables (src/config.ts); tests pass shorter delays and lower limits.
 */
export interface ScoutFetchSettings {
  /** Deadline of one request (connect, headers and body together), in milliseconds. */
  timeoutMs: number;
  /** Largest response body accepted, in bytes; a larger one fails its source. */
  maxResponseBytes: number;
  /** Minimum gap between the starts of two requests to one host, in milliseconds. */
  hostDelayMs: number;
  /** Hosts fetched at the same time at most. */
  hostConcurrency: number;
  /** Redirects followed per request at most. */
  maxRedirects: number;
  /** Items kept from one source at most (the first ones of the feed or search). */
  maxItemsPerSource: number;
  /** ISO 639-1 codes of the languages kept. */
  languages: string[];
  /** Titles shorter than this (in characters, after trimming) drop their item. */
  minTitleChars: number;
  /** Summaries are cut to this many characters. */
  maxSummaryChars: number;
  /** `User-Agent` header of every request. */
  userAgent: string;
  /**
   * Hosts, IP addresses and CIDR blocks that sources and their redirects may reach although they are
   * loopback, private, link-local or metadata addresses (`@repo/ssrf-guard` allowlist entries; from
   * `SSRF_ALLOWLIST`). Empty: public addresses only. Development and tests only.
   */
  ssrfAllowlist: readonly string[];
}

/** The defaults (10 s per request, 2 MiB, 1 s between requests to one host, English only, public addresses only). */
export const DEFAULT_SCOUT_FETCH_SETTINGS: ScoutFetchSettings = {
  timeoutMs: 10_000,
  maxResponseBytes: 2 * 1024 * 1024,
  hostDelayMs: 1000,
  hostConcurrency: 4,
  maxRedirects: 3,
  maxItemsPerSource: 50,
  languages: ['en'],
  minTitleChars: 12,
  maxSummaryChars: 1000,
  userAgent: 'market-intel-scout/1.0',
  ssrfAllowlist: [],
};

/**
 * The settings in force: the defaults overridden by the given fields.
 * @param overrides fields to override (from `PipelineDeps.scout`)
 */
export function scoutSettings(overrides: Partial<ScoutFetchSettings> | undefined): ScoutFetchSettings {
  return { ...DEFAULT_SCOUT_FETCH_SETTINGS, ...(overrides ?? {}) };
}
