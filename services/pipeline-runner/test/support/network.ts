import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { LookupFunction } from '@repo/ssrf-guard';

/** Every TCP connection this process attempts while watched. */
export interface ConnectionWatch {
  /** `address:port` of each attempt, in order (IPv6 without brackets: `::1:8080`). */
  readonly attempts: string[];
  /** Whether any attempt went to `address` (any port). */
  reached(address: string): boolean;
  /** Stops watching. */
  stop(): void;
}

/**
 * Records the address of every outgoing TCP connection attempt of this process (Node's
 * `net.client.socket` diagnostics channel and each socket's `connectionAttempt` event), so a test can
 * show that nothing tried to reach an address, even one no local server can listen on.
 */
export function watchConnections(): ConnectionWatch {
  const attempts: string[] = [];
  const onSocket = (message: unknown): void => {
    const { socket } = message as { socket: Socket };
    socket.on('connectionAttempt', (ip: string, port: number) => attempts.push(`${ip}:${port}`));
  };
  subscribe('net.client.socket', onSocket);
  return {
    attempts,
    reached: (address) => attempts.some((a) => a.slice(0, a.lastIndexOf(':')) === address),
    stop: () => unsubscribe('net.client.socket', onSocket),
  };
}

/** A server standing in for something inside the cluster that a feed must never reach. */
export interface InternalServer {
  /** The port it listens on. */
  port: number;
  /** Requests received so far. */
  hits(): number;
  /** Stops it. */
  close(): Promise<void>;
}

/** The title of the one item {@link startInternalServer} serves: it must never show up in a scan refused access. */
export const INTERNAL_TITLE = 'Internal only: instance credentials and cluster secrets';

/**
 * Starts an HTTP server on `host` (e.g. `127.0.0.2`, `::1`) that counts requests and answers every
 * path with an RSS feed of one item titled {@link INTERNAL_TITLE}.
 */
export async function startInternalServer(host: string): Promise<InternalServer> {
  let count = 0;
  const body = `<?xml version="1.0"?><rss version="2.0"><channel><title>Internal</title><link>https://internal.test/</link><description>internal</description><item><title>${INTERNAL_TITLE}</title><link>https://internal.test/secrets</link><description>Access keys of the instance role.</description></item></channel></rss>`;
  const server = createServer((_req, res) => {
    count += 1;
    res.writeHead(200, { 'content-type': 'application/rss+xml', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hits: () => count,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/**
 * A resolver answering from a fixed table (asynchronously, like `dns.lookup`) and failing with
 * ENOTFOUND for any other name: a stand-in for DNS. `calls` lists the names asked for.
 */
export function staticLookup(table: Record<string, readonly string[]>): LookupFunction & { calls: string[] } {
  const calls: string[] = [];
  const lookup: LookupFunction = (hostname, _options, callback) => {
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
  return Object.assign(lookup, { calls });
}
