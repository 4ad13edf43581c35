import * as dns from 'node:dns';
import { isIP, type LookupFunction as NetLookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { compileAllowlist, type SsrfPolicy } from './allowlist';
import { stripBrackets } from './classify';
import { checkAddresses, checkHostname, type LookupFunction } from './check';
import { SsrfBlockedError, isSsrfBlockedError } from './errors';

/** Options of {@link createGuardedDispatcher}. */
export interface GuardedDispatcherOptions {
  /** TCP (+TLS) connect timeout in milliseconds. Default 10 000 (undici's default). */
  connectTimeoutMs?: number;
  /** Resolver to use instead of `dns.lookup` (tests, custom DNS). */
  lookup?: LookupFunction;
  /** Other undici Agent options (timeouts, pool sizes); `connect` is owned by the guard. */
  agentOptions?: Omit<Agent.Options, 'connect'>;
}

const LABEL = 'connection';

/** Re-labels a lookup-time refusal with the origin being connected to. */
function withOrigin(err: SsrfBlockedError, origin: string): SsrfBlockedError {
  return new SsrfBlockedError(err.message, {
    reason: err.reason,
    url: origin,
    ...(err.addressClass !== undefined ? { addressClass: err.addressClass } : {}),
    ...(err.address !== undefined ? { address: err.address } : {}),
    ...(err.cause !== undefined ? { cause: err.cause } : {}),
  });
}

/**
 * Creates an undici `Agent` that enforces the SSRF policy at connect time: every address a host
 * name resolves to is re-checked inside the socket's `lookup`, and IP-literal and metadata hosts are
 * checked before connecting. Because the check runs on the addresses the socket actually connects
 * to, a host whose DNS answer changes after {@link checkUrl} (DNS rebinding) is still refused, and so
 * is every redirect hop `fetch` follows.
 *
 * A refused connection fails the request with the {@link SsrfBlockedError} itself (undici
 * `request`) or with `TypeError: fetch failed` whose `cause` is it (`fetch`); use
 * {@link findSsrfBlockedError} to get at it either way.
 *
 * @example
 * ```ts
 * import { request, fetch } from 'undici';
 * const dispatcher = createGuardedDispatcher({ allowlist: parseAllowlist(process.env.SSRF_ALLOWLIST) });
 * const res = await request(webhookUrl, { method: 'POST', body, dispatcher });
 * const res2 = await fetch(endpointUrl, { dispatcher }); // undici's fetch; Node's global fetch also accepts an undici 7 dispatcher
 * // on shutdown: await dispatcher.close();
 * ```
 * Create one per process (it pools connections) and close it on shutdown. It does not check the
 * scheme or userinfo: run {@link checkUrl} on user-supplied URLs first for clear 4xx messages.
 *
 * @param policy allowlist for development; default none
 * @param options connect timeout (ms), resolver override, other Agent options
 * @throws TypeError when `policy.allowlist` holds an invalid entry
 */
export function createGuardedDispatcher(policy?: SsrfPolicy, options?: GuardedDispatcherOptions): Agent {
  const allowlist = compileAllowlist(policy?.allowlist);
  const resolver: LookupFunction = options?.lookup ?? dns.lookup;

  const guardedLookup: NetLookupFunction = (hostname, lookupOptions, callback) => {
    const family = typeof lookupOptions.family === 'number' ? lookupOptions.family : 0;
    const request: { all: true; family?: number; hints?: number } = { all: true, family };
    if (lookupOptions.hints !== undefined) request.hints = lookupOptions.hints;
    resolver(hostname, request, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const first = addresses[0];
      if (first === undefined) {
        const empty = new SsrfBlockedError(`${LABEL} host ${hostname} resolved to no addresses`, {
          reason: 'dns',
          url: hostname,
        });
        return callback(empty as NodeJS.ErrnoException, '', 0);
      }
      const blocked = checkAddresses(
        hostname,
        addresses.map((a) => a.address),
        allowlist,
        { url: hostname, label: `${LABEL} to ${hostname}`, literal: false },
      );
      if (blocked) return callback(blocked as NodeJS.ErrnoException, '', 0);
      if (lookupOptions.all) return callback(null, addresses);
      return callback(null, first.address, first.family);
    });
  };

  const connector = buildConnector({
    ...(options?.connectTimeoutMs !== undefined ? { timeout: options.connectTimeoutMs } : {}),
    lookup: guardedLookup,
  });

  const connect: buildConnector.connector = (connectOptions, callback) => {
    const host = stripBrackets(connectOptions.hostname);
    const origin = `${connectOptions.protocol}//${connectOptions.host ?? connectOptions.hostname}`;
    const context = { url: origin, label: `${LABEL} to ${host}` };
    // net.connect skips lookup for IP literals, so those are checked here.
    const refused =
      checkHostname(host, allowlist, context) ??
      (isIP(host) !== 0 ? checkAddresses(host, [host], allowlist, { ...context, literal: true }) : undefined);
    if (refused) {
      callback(refused, null);
      return;
    }
    connector(connectOptions, (...args) => {
      const [err] = args;
      if (err && isSsrfBlockedError(err)) callback(withOrigin(err, origin), null);
      else callback(...args);
    });
  };

  return new Agent({ ...options?.agentOptions, connect });
}
