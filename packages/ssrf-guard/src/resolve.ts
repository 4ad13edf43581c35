import { Resolver } from 'node:dns/promises';
import { normalizeHostname } from './classify';

/** Default total time budget of one host name resolution by {@link checkUrl}, in milliseconds. */
export const DEFAULT_DNS_TIMEOUT_MS = 2000;

/** Default number of UDP tries per name server (one retransmission for a lost packet). */
const DEFAULT_TRIES = 2;

/** Largest accepted `timeoutMs` (one minute): longer budgets defeat the point of a deadline. */
const MAX_TIMEOUT_MS = 60_000;

/**
 * Settings of the DNS resolver {@link checkUrl} uses by default ({@link resolveHostAddresses}).
 */
export interface DnsResolverOptions {
  /**
   * Total time budget for resolving one host name (A and AAAA together), in milliseconds: an
   * integer from 1 to 60 000. Default {@link DEFAULT_DNS_TIMEOUT_MS} (2000). Also bounds an
   * injected `lookup` in {@link checkUrl}.
   */
  timeoutMs?: number;
  /** Tries per name server (the c-ares `tries` option), an integer from 1 to 10. Default 2. */
  tries?: number;
  /**
   * Name servers to ask, as `Resolver#setServers` takes them (`'1.1.1.1'`, `'127.0.0.1:5353'`,
   * `'[::1]:53'`). Default: the system's (`/etc/resolv.conf`).
   */
  servers?: readonly string[];
}

/**
 * Outcome of {@link resolveHostAddresses}:
 * - `ok: true`: every A and AAAA address of the name (at least one);
 * - `not_found`: NXDOMAIN or no A/AAAA data, or no addresses at all;
 * - `timeout`: no complete answer within `timeoutMs`;
 * - `error`: any other failure (SERVFAIL, REFUSED, unreachable server, bad name), named by `code`.
 */
export type HostResolution =
  | { ok: true; addresses: string[] }
  | { ok: false; failure: 'not_found' | 'timeout' | 'error'; code: string; cause?: unknown };

/** Error codes that mean "this name has no such records" (c-ares and getaddrinfo spellings). */
const NOT_FOUND_CODES = new Set(['ENOTFOUND', 'ENODATA', 'NOTFOUND', 'NODATA']);
const TIMEOUT_CODES = new Set(['ETIMEOUT', 'ETIMEDOUT', 'TIMEOUT']);

/**
 * Checks `DnsResolverOptions.timeoutMs` and returns it, or the default.
 * @throws TypeError when it is not an integer from 1 to 60 000
 */
export function dnsTimeoutOf(options: DnsResolverOptions | undefined): number {
  const timeoutMs = options?.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
    throw new TypeError(`DNS timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS}, got ${timeoutMs}`);
  }
  return timeoutMs;
}

/**
 * The loopback addresses of a name the machine answers itself without DNS: `localhost` and any
 * `*.localhost` (RFC 6761 section 6.3), case-insensitive, trailing dot ignored.
 * @returns `['127.0.0.1', '::1']`, or `undefined` for any other name
 */
export function localhostAddresses(hostname: string): string[] | undefined {
  const host = normalizeHostname(hostname);
  return host === 'localhost' || host.endsWith('.localhost') ? ['127.0.0.1', '::1'] : undefined;
}

/** The `code` of a resolver error, or `fallback`. */
export function errorCode(err: unknown, fallback: string): string {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && code !== '' ? code : fallback;
}

/** Classifies a resolver error (c-ares or getaddrinfo) into a failed {@link HostResolution}. */
export function resolutionFailure(err: unknown): HostResolution & { ok: false } {
  const code = errorCode(err, 'lookup failed');
  const failure = NOT_FOUND_CODES.has(code) ? 'not_found' : TIMEOUT_CODES.has(code) ? 'timeout' : 'error';
  return { ok: false, failure, code, cause: err };
}

/**
 * Resolves a host name's A and AAAA records in parallel with `dns.promises.Resolver` (c-ares:
 * UDP/TCP sockets on the event loop, not `getaddrinfo` on the libuv thread pool, and no
 * `/etc/hosts`), under a total deadline. Each call has its own Resolver, so a deadline cancels only
 * its own queries.
 *
 * Both families must settle: when one has addresses and the other fails for a reason other than
 * "no such data", the name is reported as failed, because not every address could be checked.
 *
 * @param hostname a DNS name (not an IP literal; not `localhost`, see {@link localhostAddresses})
 * @param options total timeout in milliseconds, tries per server, name servers
 * @returns the addresses, or the failure; never rejects for a name that does not resolve
 * @throws TypeError when `options.timeoutMs`/`options.tries` are out of range or `options.servers`
 *   holds an invalid address (configuration errors)
 */
export async function resolveHostAddresses(
  hostname: string,
  options?: DnsResolverOptions,
): Promise<HostResolution> {
  const timeoutMs = dnsTimeoutOf(options);
  const tries = options?.tries ?? DEFAULT_TRIES;
  if (!Number.isInteger(tries) || tries < 1 || tries > 10) {
    throw new TypeError(`DNS tries must be an integer from 1 to 10, got ${tries}`);
  }
  // The c-ares per-try timeout; the deadline below is the hard bound whatever c-ares backs off to.
  const resolver = new Resolver({ timeout: Math.max(1, Math.ceil(timeoutMs / tries)), tries });
  if (options?.servers) resolver.setServers([...options.servers]);

  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const lookups = Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
  try {
    const settled = await Promise.race([lookups, deadline]);
    if (settled === 'timeout') {
      resolver.cancel();
      return { ok: false, failure: 'timeout', code: 'ETIMEOUT' };
    }
    const addresses: string[] = [];
    let notFound: (HostResolution & { ok: false }) | undefined;
    for (const outcome of settled) {
      if (outcome.status === 'fulfilled') {
        addresses.push(...outcome.value);
        continue;
      }
      const failure = resolutionFailure(outcome.reason);
      if (failure.failure !== 'not_found') return failure;
      notFound ??= failure;
    }
    if (addresses.length > 0) return { ok: true, addresses };
    return notFound ?? { ok: false, failure: 'not_found', code: 'ENODATA' };
  } finally {
    clearTimeout(timer);
  }
}
