// The fixture feed server: a local HTTP server with the fixture sector's feeds, a search API and failing sources.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ScoutSource } from '../scout';
import { atom, hn, HOUR, rss, RSS_ENTRIES } from './scout-fixture-content';

/** Options of {@link startFixtureFeeds}. */
export interface FixtureFeedsOptions {
  /** The time item dates are relative to (default: when the server starts). */
  now?: Date;
  /** Size of the oversized feed in bytes (default 3 MiB: above the default 2 MiB limit). */
  oversizedBytes?: number;
  /** Port on 127.0.0.1 (default 0: a free port). */
  port?: number;
  /** Extra paths that answer `302` with the given `Location` (absolute URLs reach other servers). */
  redirects?: Record<string, string>;
}

/** Where `/feeds/metadata.xml` redirects: the cloud instance-metadata endpoint the SSRF guard must refuse. */
export const FIXTURE_METADATA_URL = 'http://169.254.169.254/latest/meta-data/';

/** One request the fixture server received. */
export interface FixtureRequest {
  /** Path without the query string. */
  path: string;
  /** The status answered (0: not answered, `/feeds/slow.xml`). */
  status: number;
  /** Whether the request carried `If-None-Match` or `If-Modified-Since`. */
  conditional: boolean;
  /** When the request arrived (milliseconds since the epoch). */
  at: number;
}

/** A running fixture feed server. */
export interface FixtureFeeds {
  /** `http://127.0.0.1:<port>`. */
  baseUrl: string;
  /**
   * The fixture sector's sources: `fixture-rss` (RSS 2.0), `fixture-atom` (Atom), `fixture-hn`
   * (Hacker News search API), and three that fail: `fixture-dead` (a port that refuses connections),
   * `fixture-malformed` (broken XML) and `fixture-oversized` (larger than the size limit).
   * @param options `failing: false` leaves the three failing sources out
   */
  sources(options?: { failing?: boolean }): ScoutSource[];
  /** Every request received, in order. */
  requests: FixtureRequest[];
  /** The time item dates are relative to. */
  now: Date;
  /** Stops the server. */
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/**
 * Starts a local HTTP server (127.0.0.1) with the fixture sector's sources, for tests and the demo
 * (no internet needed): `/feeds/rss.xml` (RSS 2.0), `/feeds/atom.xml` (Atom), `/hn/search_by_date`
 * (Algolia's Hacker News search API), `/feeds/broken.xml` (malformed XML), `/feeds/huge.xml` (an
 * oversized RSS feed, streamed without Content-Length), `/feeds/error.xml` (HTTP 500), `/feeds/moved.xml` (301 to the RSS feed), `/feeds/loop.xml`
 * (redirects on and on), `/feeds/metadata.xml` (302 to {@link FIXTURE_METADATA_URL}), `/feeds/slow.xml`
 * (never answers; status 0 in `requests`) and the paths of `options.redirects` (302). The feeds and
 * the search send an ETag and Last-Modified and answer 304 to a matching conditional request. Item
 * dates are relative to `options.now`; the figures a scan of them yields are {@link FIXTURE_SCAN}.
 * The server listens on 127.0.0.1, which the runner's SSRF guard refuses unless allowlisted: scan it
 * with `ssrfAllowlist: FIXTURE_SCAN.ssrfAllowlist` (a runner process: `FIXTURE_SCAN.runnerEnv`).
 * @param options the reference time, the oversized feed's size, the port and extra redirects
 */
export async function startFixtureFeeds(options: FixtureFeedsOptions = {}): Promise<FixtureFeeds> {
  const now = options.now ?? new Date();
  const oversizedBytes = options.oversizedBytes ?? 3 * 1024 * 1024;
  const lastModified = new Date(Math.floor((now.getTime() - HOUR) / 1000) * 1000).toUTCString();
  const requests: FixtureRequest[] = [];
  const deadPort = await freePort();

  const answer = (req: IncomingMessage, res: ServerResponse, path: string): number => {
    const url = new URL(req.url ?? '/', 'http://fixture');
    const conditional = (etag: string, type: string, body: () => string): number => {
      const inm = req.headers['if-none-match'];
      const ims = req.headers['if-modified-since'];
      const notModified =
        inm !== undefined ? inm === etag : ims !== undefined && Date.parse(ims) >= Date.parse(lastModified);
      res.setHeader('etag', etag);
      res.setHeader('last-modified', lastModified);
      if (notModified) {
        res.writeHead(304).end();
        return 304;
      }
      const text = body();
      res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(text) }).end(text);
      return 200;
    };
    switch (path) {
      case '/feeds/rss.xml':
        return conditional('"rss-v1"', 'application/rss+xml; charset=utf-8', () => rss(now, RSS_ENTRIES));
      case '/feeds/atom.xml':
        return conditional('"atom-v1"', 'application/atom+xml; charset=utf-8', () => atom(now));
      case '/hn/search_by_date': {
        const perPage = Math.min(1000, Math.max(1, Number(url.searchParams.get('hitsPerPage') ?? 20) || 20));
        return conditional('"hn-v1"', 'application/json; charset=utf-8', () => hn(now, perPage));
      }
      case '/feeds/broken.xml': {
        const text =
          '<?xml version="1.0"?><rss version="2.0"><channel><title>Broken</title><item><title>Half an item</title><link>https://broken.fixture.test/a</lin';
        res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(text);
        return 200;
      }
      case '/feeds/huge.xml': {
        res.writeHead(200, { 'content-type': 'application/rss+xml' });
        res.write('<?xml version="1.0"?><rss version="2.0"><channel><title>Huge</title>');
        const filler = 'x'.repeat(1000);
        let sent = 0;
        for (let i = 0; sent < oversizedBytes; i += 1) {
          const chunk = `<item><title>Padding item number ${i}</title><link>https://huge.fixture.test/${i}</link><description>${filler}</description></item>`;
          sent += chunk.length;
          res.write(chunk);
        }
        res.end('</channel></rss>');
        return 200;
      }
      case '/feeds/moved.xml':
        res.writeHead(301, { location: '/feeds/rss.xml' }).end();
        return 301;
      case '/feeds/loop.xml': {
        const hop = Number(url.searchParams.get('hop') ?? 0) + 1;
        res.writeHead(302, { location: `/feeds/loop.xml?hop=${hop}` }).end();
        return 302;
      }
      case '/feeds/metadata.xml':
        res.writeHead(302, { location: FIXTURE_METADATA_URL }).end();
        return 302;
      case '/feeds/slow.xml':
        // Never answers: the client's deadline must end the request (the server closes it on close()).
        return 0;
      case '/feeds/error.xml':
        res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
        return 500;
      default: {
        const location = options.redirects?.[path];
        if (location !== undefined) {
          res.writeHead(302, { location }).end();
          return 302;
        }
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return 404;
      }
    }
  };

  const server: Server = createServer((req, res) => {
    const at = Date.now();
    const path = new URL(req.url ?? '/', 'http://fixture').pathname;
    const status = answer(req, res, path);
    requests.push({
      path,
      status,
      conditional:
        req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined,
      at,
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    baseUrl,
    now,
    requests,
    sources: ({ failing = true } = {}) => [
      { type: 'feed', id: 'fixture-rss', name: 'Fixture Tech Daily', url: `${baseUrl}/feeds/rss.xml` },
      { type: 'feed', id: 'fixture-atom', name: 'Fixture Weekly', url: `${baseUrl}/feeds/atom.xml` },
      { type: 'hn', id: 'fixture-hn', name: 'Fixture HN', query: 'invoice', baseUrl: `${baseUrl}/hn` },
      ...(failing
        ? ([
            {
              type: 'feed',
              id: 'fixture-dead',
              name: 'Dead feed',
              url: `http://127.0.0.1:${deadPort}/feed.xml`,
            },
            {
              type: 'feed',
              id: 'fixture-malformed',
              name: 'Malformed feed',
              url: `${baseUrl}/feeds/broken.xml`,
            },
            {
              type: 'feed',
              id: 'fixture-oversized',
              name: 'Oversized feed',
              url: `${baseUrl}/feeds/huge.xml`,
            },
          ] satisfies ScoutSource[])
        : []),
    ],
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
