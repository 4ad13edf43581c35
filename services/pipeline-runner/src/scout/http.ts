import { setTimeout as delay } from 'node:timers/promises';
import { Agent, errors, interceptors, request, type Dispatcher } from 'undici';
import type { SourceValidators } from '@repo/schemas';
import type { ScoutFetchSettings } from './settings';

/** A fetched response body with the validators to send next time. */
export interface FetchedBody {
  /** 200–299, or 304 (then `body` is empty). */
  status: number;
  body: string;
  validators: SourceValidators;
}

/** Why a fetch failed: a message for the source report and the HTTP status when there was one. */
export class SourceFetchError extends Error {
  /**
   * @param message what went wrong, for `SourceReport.error`
   * @param httpStatus the HTTP status answered, or `null` (no answer)
   */
  constructor(
    message: string,
    readonly httpStatus: number | null,
  ) {
    super(message);
    this.name = 'SourceFetchError';
  }
}

/** The HTTP client of one fetch step: timeouts, size limit, redirects, validators and per-host politeness. */
export interface ScoutHttp {
  /**
   * GETs `url`, conditionally when `validators` hold an ETag or Last-Modified. Requests to one host
   * name wait for each other and start at least `hostDelayMs` apart.
   * @throws {SourceFetchError} connection failure, timeout, HTTP status >= 400, a body larger than
   *   `maxResponseBytes`, too many redirects
   */
  get(url: string, validators: SourceValidators | undefined, accept: string): Promise<FetchedBody>;
  /** Closes the connections. */
  close(): Promise<void>;
}

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

function describe(error: unknown, settings: ScoutFetchSettings, timedOut: boolean): string {
  if (timedOut) return `no complete answer within ${settings.timeoutMs} ms`;
  if (error instanceof errors.ResponseExceededMaxSizeError)
    return `response larger than ${settings.maxResponseBytes} bytes`;
  if (error instanceof errors.ConnectTimeoutError)
    return `connection timed out after ${settings.timeoutMs} ms`;
  if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError)
    return `no complete answer within ${settings.timeoutMs} ms`;
  const message = error instanceof Error ? error.message : String(error);
  if (/redirect loop/i.test(message)) return 'redirect loop';
  const code =
    (error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code ?? undefined;
  if (code && NETWORK_CODES[code]) return NETWORK_CODES[code];
  return `request failed: ${message}`;
}

/**
 * Creates the HTTP client of one fetch step (undici): one `Agent` with connect, headers and body
 * timeouts and `maxResponseSize`, redirects followed up to `maxRedirects`, and an overall deadline of
 * `timeoutMs` per request (redirects included).
 * @param settings the fetch settings
 */
export function createScoutHttp(settings: ScoutFetchSettings): ScoutHttp {
  const agent = new Agent({
    connectTimeout: settings.timeoutMs,
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
    maxResponseSize: settings.maxResponseBytes,
  });
  const dispatcher: Dispatcher = agent.compose(
    interceptors.redirect({ maxRedirections: settings.maxRedirects }),
  );
  // Per host name: when its last request started, and the chain of requests waiting for it.
  const hosts = new Map<string, { chain: Promise<unknown>; lastStart: number }>();

  async function once(
    url: string,
    validators: SourceValidators | undefined,
    accept: string,
  ): Promise<FetchedBody> {
    const signal = AbortSignal.timeout(settings.timeoutMs);
    // identity: the size limit then counts what is parsed, and no decoder is needed.
    const headers: Record<string, string> = {
      'user-agent': settings.userAgent,
      accept,
      'accept-encoding': 'identity',
    };
    if (validators?.etag) headers['if-none-match'] = validators.etag;
    if (validators?.lastModified) headers['if-modified-since'] = validators.lastModified;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, { method: 'GET', headers, dispatcher, signal });
    } catch (error) {
      throw new SourceFetchError(describe(error, settings, signal.aborted), null);
    }
    const status = response.statusCode;
    const header = (name: string): string | undefined => {
      const value = response.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const next: SourceValidators = {
      ...(header('etag') ? { etag: header('etag')!.slice(0, 500) } : {}),
      ...(header('last-modified') ? { lastModified: header('last-modified')!.slice(0, 100) } : {}),
    };
    if (status === 304) {
      await response.body.dump();
      return { status, body: '', validators: { ...(validators ?? {}), ...next } };
    }
    if (status >= 300) {
      await response.body.dump().catch(() => undefined);
      // The redirect interceptor hands back the last redirect once maxRedirects are used up.
      if (status < 400 && header('location'))
        throw new SourceFetchError(`more than ${settings.maxRedirects} redirects`, status);
      throw new SourceFetchError(status >= 400 ? `HTTP ${status}` : `unexpected HTTP ${status}`, status);
    }
    try {
      return { status, body: await response.body.text(), validators: next };
    } catch (error) {
      throw new SourceFetchError(describe(error, settings, signal.aborted), status);
    }
  }

  return {
    get(url, validators, accept) {
      const host = new URL(url).hostname;
      const slot = hosts.get(host) ?? { chain: Promise.resolve(), lastStart: Number.NEGATIVE_INFINITY };
      hosts.set(host, slot);
      const run = slot.chain.then(async () => {
        const wait = slot.lastStart + settings.hostDelayMs - Date.now();
        if (wait > 0) await delay(wait);
        slot.lastStart = Date.now();
        return once(url, validators, accept);
      });
      slot.chain = run.catch(() => undefined);
      return run;
    },
    close: () => agent.close(),
  };
}
