import { setTimeout as delay } from 'node:timers/promises';
import { errors, interceptors, request, type Dispatcher } from 'undici';
import type { SourceValidators } from '@repo/compute';
import {
  createGuardedDispatcher,
  findSsrfBlockedError,
  type LookupFunction,
  type SsrfBlockedError,
} from '@repo/ssrf-guard';
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
   * name wait for each other and start at least `hostDelayMs` apart. Every connection, the first and
   * each redirect hop's, goes through the SSRF guard.
   * @throws {SourceFetchError} connection failure, timeout, HTTP status >= 400, a body larger than
   *   `maxResponseBytes`, too many redirects, or an address the SSRF policy refuses (`refused: …`,
   *   `httpStatus` null: nothing was sent to it)
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

/** Options of {@link createScoutHttp} that are not settings. */
export interface ScoutHttpOptions {
  /**
   * Resolver used instead of `dns.lookup`, both for the SSRF check and for the connection (tests
   * stand in for DNS with it).
   */
  lookup?: LookupFunction;
}

/** `[::1]` -> `::1`. */
function bare(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * The source report's reason for an SSRF refusal, e.g. `refused: redirect to 169.254.169.254
 * (metadata) is not allowed`. Built from the refusal's fields, so nothing of any answer is quoted.
 */
function describeRefusal(blocked: SsrfBlockedError, requested: string): string {
  let hop: URL | null = null;
  try {
    hop = new URL(blocked.url);
  } catch {
    // At connect time `url` is the origin; anything else is reported without it.
  }
  const host = hop ? bare(hop.hostname) : 'the source';
  // The guard names the origin it refused to connect to: another origin than the source's is a redirect.
  const target = hop && hop.origin !== new URL(requested).origin ? `redirect to ${host}` : host;
  if (blocked.reason === 'address' && blocked.address !== undefined) {
    const where =
      blocked.address === host
        ? `(${blocked.addressClass ?? 'not public'})`
        : `(${blocked.address}, ${blocked.addressClass ?? 'not public'})`;
    return `refused: ${target} ${where} is not allowed`;
  }
  // The guard refuses with `dns` when a name resolves to nothing it can classify.
  return blocked.reason === 'dns'
    ? `refused: ${target} has no address that can be checked`
    : `refused: ${target} (${blocked.reason})`;
}

function describe(error: unknown, settings: ScoutFetchSettings, timedOut: boolean, url: string): string {
  const blocked = findSsrfBlockedError(error);
  if (blocked) return describeRefusal(blocked, url);
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
 * Creates the HTTP client of one fetch step (undici): `@repo/ssrf-guard`'s guarded `Agent` (every
 * connection's addresses checked against `settings.ssrfAllowlist` before connecting, so a source or
 * a redirect to a loopback, private, link-local or metadata address, or to a host name resolving to
 * one, is refused) with connect, headers and body timeouts and `maxResponseSize`; under undici's
 * redirect interceptor, so each hop opens its connection through the guard; redirects followed up to
 * `maxRedirects`, and an overall deadline of `timeoutMs` per request (redirects included).
 * @param settings the fetch settings
 * @param options resolver override (tests)
 * @throws TypeError when `settings.ssrfAllowlist` holds an invalid entry (the config validates it first)
 */
export function createScoutHttp(settings: ScoutFetchSettings, options: ScoutHttpOptions = {}): ScoutHttp {
  const agent = createGuardedDispatcher(
    { allowlist: settings.ssrfAllowlist },
    {
      connectTimeoutMs: settings.timeoutMs,
      ...(options.lookup ? { lookup: options.lookup } : {}),
      agentOptions: {
        headersTimeout: settings.timeoutMs,
        bodyTimeout: settings.timeoutMs,
        maxResponseSize: settings.maxResponseBytes,
      },
    },
  );
  // The redirect interceptor dispatches each hop through the guarded agent, which checks it at connect time.
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
      throw new SourceFetchError(describe(error, settings, signal.aborted, url), null);
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
      throw new SourceFetchError(describe(error, settings, signal.aborted, url), status);
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
