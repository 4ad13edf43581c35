import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import {
  compileAllowlist,
  isAddressAllowed,
  isHostAllowed,
  type CompiledAllowlist,
  type SsrfPolicy,
} from './allowlist';
import { classifyParsed, isMetadataHostname, parseAddress, stripBrackets } from './classify';
import { SsrfBlockedError } from './errors';
import {
  dnsTimeoutOf,
  localhostAddresses,
  resolutionFailure,
  resolveHostAddresses,
  type DnsResolverOptions,
  type HostResolution,
} from './resolve';

/**
 * The resolver shape this package calls: `dns.lookup` with `all: true` (so `dns.lookup` itself fits).
 * `family` is 0 (any), 4 or 6.
 */
export type LookupFunction = (
  hostname: string,
  options: { all: true; family?: number; hints?: number },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** Options of {@link checkUrl} and {@link assertSafeUrl}. */
export interface CheckUrlOptions {
  /**
   * A `dns.lookup`-shaped resolver to use instead of DNS (tests, custom resolution). It is still
   * bounded by `dns.timeoutMs`; `dns.servers` and `dns.tries` are then ignored. Not consulted for
   * IP literals, `localhost` names or allowlisted host names.
   */
  lookup?: LookupFunction;
  /**
   * The default resolver's settings (`dns.promises.Resolver`, off the libuv thread pool): total
   * timeout in milliseconds (default 2000), tries per server, name servers.
   */
  dns?: DnsResolverOptions;
  /** Name of the checked field in error messages, e.g. `webhook_url`. Default `URL`. */
  label?: string;
}

/**
 * Result of {@link checkUrl}. `addresses` are the addresses that were checked: the literal, the
 * loopback addresses of `localhost`, or what DNS answered; empty for an allowlisted host name,
 * which is not resolved.
 */
export type CheckUrlResult =
  { ok: true; url: URL; addresses: string[] } | { ok: false; error: SsrfBlockedError };

/** The URL with any password masked, for error fields. */
function redact(url: URL): string {
  if (url.password === '') return url.href;
  const copy = new URL(url.href);
  copy.password = '***';
  return copy.href;
}

/**
 * Checks resolved addresses of `host` against the policy: any address that is not public, and
 * neither the host nor that address allowlisted, refuses the lot.
 * @returns the refusal, or `undefined` when every address is allowed
 */
export function checkAddresses(
  host: string,
  addresses: readonly string[],
  allowlist: CompiledAllowlist,
  context: { url: string; label: string; literal: boolean },
): SsrfBlockedError | undefined {
  if (isHostAllowed(allowlist, host)) return undefined;
  for (const address of addresses) {
    let addressClass;
    let parsed;
    try {
      parsed = parseAddress(address);
      addressClass = classifyParsed(parsed);
    } catch {
      return new SsrfBlockedError(`${context.label} resolves to "${address}", which is not an IP address`, {
        reason: 'dns',
        url: context.url,
      });
    }
    if (addressClass === 'public' || isAddressAllowed(allowlist, parsed)) continue;
    const verb = context.literal ? 'points to' : 'resolves to';
    return new SsrfBlockedError(
      `${context.label} ${verb} ${address} (${addressClass}), which is not allowed`,
      {
        reason: 'address',
        url: context.url,
        address,
        addressClass,
      },
    );
  }
  return undefined;
}

/** Refusal for a metadata host name that is not allowlisted, else `undefined`. */
export function checkHostname(
  host: string,
  allowlist: CompiledAllowlist,
  context: { url: string; label: string },
): SsrfBlockedError | undefined {
  if (!isMetadataHostname(host) || isHostAllowed(allowlist, host)) return undefined;
  return new SsrfBlockedError(
    `${context.label} host ${host} is a cloud metadata endpoint, which is not allowed`,
    {
      reason: 'address',
      url: context.url,
      address: host,
      addressClass: 'metadata',
    },
  );
}

/** Promise wrapper over a callback resolver, always `all: true`. */
export function resolveAll(lookup: LookupFunction, hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    lookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });
}

/** An injected `lookup` under the same deadline as the DNS path (its work cannot be cancelled). */
async function resolveWithLookup(
  lookup: LookupFunction,
  hostname: string,
  timeoutMs: number,
): Promise<HostResolution> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<HostResolution>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, failure: 'timeout', code: 'ETIMEOUT' }), timeoutMs);
  });
  const answer = resolveAll(lookup, hostname).then(
    (found): HostResolution =>
      found.length > 0
        ? { ok: true, addresses: found.map((a) => a.address) }
        : { ok: false, failure: 'not_found', code: 'ENODATA' },
    (err: unknown) => resolutionFailure(err),
  );
  try {
    return await Promise.race([answer, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The refusal for a host name that could not be resolved. */
function unresolved(
  resolution: HostResolution & { ok: false },
  host: string,
  timeoutMs: number,
  context: { url: string; label: string },
): SsrfBlockedError {
  const message =
    resolution.failure === 'timeout'
      ? `${context.label} host ${host} did not resolve within ${timeoutMs} ms`
      : resolution.failure === 'not_found'
        ? `${context.label} host ${host} does not resolve (${resolution.code})`
        : `${context.label} host ${host} could not be resolved (${resolution.code})`;
  return new SsrfBlockedError(message, {
    reason: 'dns',
    url: context.url,
    ...(resolution.cause !== undefined ? { cause: resolution.cause } : {}),
  });
}

/**
 * Checks a user-supplied URL before any request is made (e.g. when a webhook URL or skill endpoint
 * is registered, and again before each delivery).
 *
 * Rules, in order: the URL must parse (WHATWG URL, so `http://2130706433/` and `http://0x7f.1/`
 * are read as 127.0.0.1), use `http:` or `https:`, carry no userinfo; a metadata host name
 * (`metadata.google.internal`, ...) is refused; then the host's addresses are classified:
 * - an IP literal host (including bracketed IPv6) is classified directly;
 * - `localhost` and `*.localhost` are 127.0.0.1 and ::1, without asking DNS;
 * - a host name on `policy.allowlist` passes without being resolved (`addresses` is then empty),
 *   so development names known only to `/etc/hosts` work;
 * - any other name is resolved by DNS: A and AAAA in parallel through `dns.promises.Resolver`
 *   (c-ares, not `getaddrinfo` on the libuv thread pool that database and RPC connections also
 *   need), within `options.dns.timeoutMs` (default 2000 ms) in total; or by `options.lookup`.
 *
 * Any address that is not `public` refuses the URL unless that address is on `policy.allowlist`.
 * A name that does not resolve, resolves too slowly or fails to resolve is refused with reason
 * `dns` ("... host x.example does not resolve (ENOTFOUND)", "... did not resolve within 2000 ms").
 *
 * A pass is not enough on its own: DNS can change between this check and the connection (DNS
 * rebinding), so send the request through {@link createGuardedDispatcher} as well.
 *
 * @param url the URL as supplied
 * @param policy allowlist for development; default none
 * @param options resolver override or DNS settings, and the field label used in messages
 * @returns `{ ok: true, url, addresses }` with the parsed URL and the checked addresses, or
 *   `{ ok: false, error }` with an {@link SsrfBlockedError}; never rejects for bad input
 * @throws TypeError only for configuration errors: an invalid `policy.allowlist` entry, or
 *   `options.dns` out of range or naming an invalid server address
 */
export async function checkUrl(
  url: string,
  policy?: SsrfPolicy,
  options?: CheckUrlOptions,
): Promise<CheckUrlResult> {
  const allowlist = compileAllowlist(policy?.allowlist);
  const timeoutMs = dnsTimeoutOf(options?.dns);
  const label = options?.label ?? 'URL';
  const fail = (error: SsrfBlockedError): CheckUrlResult => ({ ok: false, error });

  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return fail(
      new SsrfBlockedError(`${label} is not a valid absolute URL`, {
        reason: 'invalid_url',
        url: typeof url === 'string' ? url.slice(0, 2048) : String(url),
      }),
    );
  }
  const shown = redact(parsed);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return fail(
      new SsrfBlockedError(`${label} uses the ${parsed.protocol} scheme; only http and https are allowed`, {
        reason: 'scheme',
        url: shown,
      }),
    );
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return fail(
      new SsrfBlockedError(`${label} must not contain credentials (user:password@)`, {
        reason: 'credentials',
        url: shown,
      }),
    );
  }

  const host = stripBrackets(parsed.hostname);
  if (host === '') {
    return fail(new SsrfBlockedError(`${label} has no host`, { reason: 'invalid_url', url: shown }));
  }
  const context = { url: shown, label };
  const byName = checkHostname(host, allowlist, context);
  if (byName) return fail(byName);

  const literal = isIP(host) !== 0;
  let addresses: string[];
  if (literal) {
    addresses = [host];
  } else {
    const loopback = localhostAddresses(host);
    if (loopback) {
      addresses = loopback;
    } else if (isHostAllowed(allowlist, host)) {
      // Allowlisted names permit every address (checkAddresses), so resolving them proves nothing.
      return { ok: true, url: parsed, addresses: [] };
    } else {
      const resolution = options?.lookup
        ? await resolveWithLookup(options.lookup, host, timeoutMs)
        : await resolveHostAddresses(host, options?.dns);
      if (!resolution.ok) return fail(unresolved(resolution, host, timeoutMs, context));
      addresses = resolution.addresses;
    }
  }
  const blocked = checkAddresses(host, addresses, allowlist, { ...context, literal });
  return blocked ? fail(blocked) : { ok: true, url: parsed, addresses };
}

/**
 * Like {@link checkUrl} but throws.
 * @returns the parsed URL when it is allowed
 * @throws SsrfBlockedError when it is refused; TypeError for an invalid allowlist entry
 */
export async function assertSafeUrl(
  url: string,
  policy?: SsrfPolicy,
  options?: CheckUrlOptions,
): Promise<URL> {
  const result = await checkUrl(url, policy, options);
  if (!result.ok) throw result.error;
  return result.url;
}
