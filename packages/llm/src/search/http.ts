import { SearchConfigError, SearchUnavailableError } from '../errors';
import {
  DEFAULT_SEARCH_LIMIT,
  MAX_SEARCH_LIMIT,
  MAX_SNIPPET_CHARS,
  type SearchProbeResult,
  type SearchResult,
} from './types';

/** Largest response body read from a search provider, in bytes (2 MiB). */
export const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/** A response read whole (bounded by {@link MAX_RESPONSE_BYTES}). */
export interface BoundedResponse {
  status: number;
  text: string;
}

/**
 * Sends one HTTP request with a timeout and reads at most {@link MAX_RESPONSE_BYTES} of the body.
 * @param provider provider name, for messages
 * @param url the request URL
 * @param init fetch options (method, headers, body)
 * @param timeoutMs the deadline for the whole exchange, in milliseconds
 * @throws {SearchUnavailableError} network error, timeout or an oversized body
 */
export async function boundedFetch(
  provider: string,
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<BoundedResponse> {
  const signal = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal, redirect: 'follow' });
  } catch (error) {
    const timedOut = signal.aborted;
    const cause = (error as { cause?: { code?: string } }).cause;
    throw new SearchUnavailableError(
      timedOut
        ? `${provider}: no answer within ${timeoutMs} ms`
        : `${provider}: cannot reach the search endpoint (${cause?.code ?? (error as Error).message})`,
      { cause: error },
    );
  }
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > MAX_RESPONSE_BYTES) {
    await response.body?.cancel();
    throw new SearchUnavailableError(
      `${provider}: response of ${declared} bytes exceeds ${MAX_RESPONSE_BYTES}`,
      { status: response.status },
    );
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    if (response.body) {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        if (size > MAX_RESPONSE_BYTES) {
          await response.body.cancel().catch(() => undefined);
          throw new SearchUnavailableError(`${provider}: response exceeds ${MAX_RESPONSE_BYTES} bytes`, {
            status: response.status,
          });
        }
        chunks.push(chunk);
      }
    }
  } catch (error) {
    if (error instanceof SearchUnavailableError) throw error;
    throw new SearchUnavailableError(
      signal.aborted
        ? `${provider}: no complete answer within ${timeoutMs} ms`
        : `${provider}: the response broke off`,
      { cause: error, status: response.status },
    );
  }
  return { status: response.status, text: Buffer.concat(chunks).toString('utf8') };
}

/**
 * Turns a non-2xx status into the matching error: 401/403 -> {@link SearchConfigError}, anything else
 * -> {@link SearchUnavailableError}.
 * @param provider provider name @param response the response @param configHint what to fix on 401/403
 */
export function statusError(
  provider: string,
  response: BoundedResponse,
  configHint: string,
): SearchConfigError | SearchUnavailableError {
  const detail = `${provider}: the search endpoint answered ${response.status}`;
  if (response.status === 401 || response.status === 403)
    return new SearchConfigError(`${detail} (${configHint})`, { status: response.status });
  return new SearchUnavailableError(detail, { status: response.status });
}

/**
 * Parses a JSON body.
 * @throws {SearchUnavailableError} when the body is not JSON (a proxy error page, for instance)
 */
export function parseJsonBody(provider: string, response: BoundedResponse): unknown {
  try {
    return JSON.parse(response.text) as unknown;
  } catch (error) {
    throw new SearchUnavailableError(`${provider}: the answer is not JSON`, {
      cause: error,
      status: response.status,
    });
  }
}

/** Clamps a requested result limit to 1..{@link MAX_SEARCH_LIMIT} (default {@link DEFAULT_SEARCH_LIMIT}). */
export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_SEARCH_LIMIT;
  return Math.min(MAX_SEARCH_LIMIT, Math.max(1, Math.floor(limit)));
}

/** Collapses whitespace and cuts a snippet to {@link MAX_SNIPPET_CHARS}. */
export function cleanSnippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= MAX_SNIPPET_CHARS) return flat;
  const cut = flat.slice(0, MAX_SNIPPET_CHARS - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > MAX_SNIPPET_CHARS / 2 ? cut.slice(0, space) : cut}…`;
}

/**
 * Keeps the well-formed hits (string title and an http(s) URL), first occurrence of each URL, at most
 * `limit`.
 * @param raw the provider's result items
 * @param snippetKey the field holding the text excerpt (`content` for SearXNG and Tavily)
 */
export function normaliseResults(raw: unknown, snippetKey: string, limit: number): SearchResult[] {
  if (!Array.isArray(raw)) return [];
  const seen = new Set<string>();
  const out: SearchResult[] = [];
  for (const item of raw as unknown[]) {
    if (out.length >= limit) break;
    if (typeof item !== 'object' || item === null) continue;
    const record = item as Record<string, unknown>;
    const url = typeof record.url === 'string' ? record.url : '';
    if (!/^https?:\/\//i.test(url) || seen.has(url)) continue;
    seen.add(url);
    const snippet = record[snippetKey];
    out.push({
      title:
        typeof record.title === 'string' && record.title.trim() ? record.title.trim().slice(0, 300) : url,
      url,
      snippet: typeof snippet === 'string' ? cleanSnippet(snippet) : '',
    });
  }
  return out;
}

/** How the providers' requests are made: the provider's name for messages, the deadline, what to fix on 401/403. */
export interface ProviderEndpoint {
  /** Provider name, e.g. `searxng`. */
  provider: string;
  /** Deadline of one request, in milliseconds. */
  timeoutMs: number;
  /** What an operator should fix when the provider answers 401/403. */
  configHint: string;
}

/**
 * Runs one search request whose answer is `{ results: [{ title, url, content }] }` (SearXNG's and
 * Tavily's shape) and returns the hits, normalised by {@link normaliseResults}.
 * @param endpoint the provider @param url the request URL @param init fetch options
 * @param limit the most hits returned (already clamped)
 * @throws {SearchConfigError} on 401/403
 * @throws {SearchUnavailableError} network error, timeout, another non-2xx status, or an answer that
 * is not JSON or has no `results` array
 */
export async function fetchResults(
  endpoint: ProviderEndpoint,
  url: string,
  init: RequestInit,
  limit: number,
): Promise<SearchResult[]> {
  const { provider, timeoutMs, configHint } = endpoint;
  const response = await boundedFetch(provider, url, init, timeoutMs);
  if (response.status < 200 || response.status >= 300) throw statusError(provider, response, configHint);
  const body = parseJsonBody(provider, response);
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { results?: unknown }).results)) {
    throw new SearchUnavailableError(`${provider}: the answer has no results array`, {
      status: response.status,
    });
  }
  return normaliseResults((body as { results: unknown }).results, 'content', limit);
}

/**
 * Probes a provider with one request: healthy when `healthy(status)`; otherwise the
 * {@link statusError}'s message, classed `config` for 401/403 (credentials) and `upstream` for any
 * other status, a network error or a timeout. Never throws.
 * @param endpoint the provider @param url the probe URL @param init fetch options
 * @param healthy which answer statuses mean healthy
 */
export async function probeEndpoint(
  endpoint: ProviderEndpoint,
  url: string,
  init: RequestInit,
  healthy: (status: number) => boolean,
): Promise<SearchProbeResult> {
  const { provider, timeoutMs, configHint } = endpoint;
  try {
    const response = await boundedFetch(provider, url, init, timeoutMs);
    if (healthy(response.status)) return { ok: true, error: null, errorClass: null };
    const error = statusError(provider, response, configHint);
    return { ok: false, error: error.message, errorClass: error.errorClass };
  } catch (error) {
    return { ok: false, error: (error as Error).message, errorClass: 'upstream' };
  }
}
