import type { LookupFunction } from '../../src/index';

/**
 * A resolver that answers from a fixed table (asynchronously, like dns.lookup) and fails with
 * ENOTFOUND for any other name. Stands in for DNS, an outside service.
 */
export function staticLookup(table: Record<string, readonly string[]>): LookupFunction & { calls: string[] } {
  const calls: string[] = [];
  const fn: LookupFunction = (hostname, _options, callback) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) {
      const err: NodeJS.ErrnoException = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
        code: 'ENOTFOUND',
      });
      setImmediate(() => callback(err, []));
      return;
    }
    setImmediate(() =>
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      ),
    );
  };
  return Object.assign(fn, { calls });
}
