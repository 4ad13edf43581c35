/** One web search hit (title, address and the provider's text excerpt). */
export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** Options of {@link SearchProvider.search}. */
export interface SearchOptions {
  /** Maximum number of results (default 5, at most 20). */
  limit?: number;
}

/** Outcome of {@link SearchProvider.probe}, shaped for market-intel's health contract. */
export interface SearchProbeResult {
  ok: boolean;
  /** What failed, or `null`. */
  error: string | null;
  /** `upstream` (retry later) or `config` (operator must fix), `null` when ok. */
  errorClass: 'upstream' | 'config' | null;
}

/**
 * The web search port used by the debate pipeline. Implementations throw
 * `SearchUnavailableError` (transient) or `SearchConfigError` (operator must fix) from `search`;
 * `probe` never throws.
 */
export interface SearchProvider {
  /** Provider name for logs and health, e.g. `searxng`. */
  readonly name: string;
  /**
   * Runs one query.
   * @param query the query text (trimmed; an empty query yields `[]` without a request)
   * @param options result limit
   */
  search(query: string, options?: SearchOptions): Promise<SearchResult[]>;
  /** Checks reachability and configuration cheaply. Never throws. */
  probe(): Promise<SearchProbeResult>;
}

/** Default number of results of one search. */
export const DEFAULT_SEARCH_LIMIT = 5;
/** Hard cap on the number of results of one search. */
export const MAX_SEARCH_LIMIT = 20;
/** Longest snippet kept, in characters; longer ones are cut at a word boundary with an ellipsis. */
export const MAX_SNIPPET_CHARS = 600;
