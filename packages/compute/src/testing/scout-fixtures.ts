import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PeerSector, ScoutJobInput, ScoutSource } from '../scout';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

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

interface FixtureEntry {
  title: string;
  url: string;
  summary: string;
  /** Age relative to `now` in milliseconds, or `null`: the entry has no date. */
  age: number | null;
}

/** The RSS feed "Fixture Tech Daily": 7 entries (one French, one with a 2-character title, one 40 days old, one undated). */
const RSS_ENTRIES: FixtureEntry[] = [
  {
    title: 'AI coding agents now write a third of new code at startups',
    url: 'https://news.fixture.test/2026/ai-coding-agents/?utm_source=rss&utm_medium=feed',
    summary: '<p>Startups report that <b>AI coding agents</b> produce a third of merged code.</p>',
    age: 2 * HOUR,
  },
  {
    title: 'Invoice automation startups raise record funding',
    url: 'https://news.fixture.test/2026/invoice-automation-funding',
    summary: '<p>Investors back invoice automation for small businesses.</p>',
    age: 10 * HOUR,
  },
  {
    title: 'Open source maintainers struggle with AI generated pull requests',
    url: 'https://news.fixture.test/2026/maintainers-ai-pull-requests',
    summary: 'Maintainers close low quality pull requests opened by AI coding agents.',
    age: 30 * HOUR,
  },
  {
    title: 'Les banques européennes adoptent enfin les paiements instantanés',
    url: 'https://news.fixture.test/2026/banques-paiements-instantanes',
    summary:
      'Les grandes banques européennes proposent désormais les virements instantanés à tous leurs clients.',
    age: 6 * HOUR,
  },
  { title: 'AI', url: 'https://news.fixture.test/2026/ai', summary: 'A one-word headline.', age: 3 * HOUR },
  {
    title: 'The dot-com bubble, twenty-five years later',
    url: 'https://news.fixture.test/2001/dot-com-retro',
    summary: 'A look back at the dot-com crash and what founders learned.',
    age: 40 * DAY,
  },
  {
    title: 'Small businesses adopt AI bookkeeping assistants',
    url: 'https://news.fixture.test/2026/ai-bookkeeping',
    summary: 'Small businesses use AI assistants to categorise expenses and chase invoices.',
    age: null,
  },
];

/** The Atom feed "Fixture Weekly": 5 entries, two of them duplicates of RSS entries (same canonical URL; same title). */
const ATOM_ENTRIES: FixtureEntry[] = [
  {
    title: 'AI coding agents now write a third of new code at startups',
    url: 'https://NEWS.fixture.test:443/2026/ai-coding-agents?fbclid=abc123#comments',
    summary: 'The same story, syndicated.',
    age: 3 * HOUR,
  },
  {
    title: 'Agent frameworks consolidate as AI coding tools mature',
    url: 'https://weekly.fixture.test/agent-frameworks-consolidate',
    summary: 'Three agent frameworks merged this quarter as AI coding tools mature.',
    age: 3 * DAY,
  },
  {
    title: 'Invoice Automation Startups Raise Record Funding!',
    url: 'https://weekly.fixture.test/invoice-funding?ref=homepage',
    summary: 'A funding round roundup.',
    age: 12 * HOUR,
  },
  {
    title: 'Code review bottlenecks slow teams adopting AI agents',
    url: 'https://weekly.fixture.test/code-review-bottlenecks',
    summary: 'Teams adopting AI agents say code review is now the slowest step.',
    age: 4 * DAY,
  },
  {
    title: 'Payment reconciliation tools see rising demand from small businesses',
    url: 'https://weekly.fixture.test/payment-reconciliation-demand',
    summary: 'Small businesses want payment reconciliation across providers.',
    age: 5 * DAY,
  },
];

interface FixtureHit {
  objectID: string;
  title: string;
  url: string | null;
  story_text: string | null;
  points: number;
  num_comments: number;
  age: number;
}

/** The Hacker News search answer: 5 discussions. */
const HN_HITS: FixtureHit[] = [
  {
    objectID: '9001',
    title: 'Ask HN: How do you reconcile invoices across three payment providers?',
    url: null,
    story_text: '<p>We reconcile invoices by hand every week and it takes two days.</p>',
    points: 120,
    num_comments: 85,
    age: 5 * HOUR,
  },
  {
    objectID: '9002',
    title: 'Our AI agent opened 40 pull requests and broke CI',
    url: 'https://blog.fixture.test/agent-broke-ci',
    story_text: null,
    points: 300,
    num_comments: 150,
    age: 18 * HOUR,
  },
  {
    objectID: '9003',
    title: 'Ask HN: Is anyone else drowning in flaky tests?',
    url: null,
    story_text: 'Flaky tests block every merge on our team.',
    points: 80,
    num_comments: 60,
    age: 2 * DAY,
  },
  {
    objectID: '9004',
    title: 'Late invoice payments are killing my freelance business',
    url: 'https://blog.fixture.test/late-invoices',
    story_text: 'Clients pay invoices sixty days late.',
    points: 45,
    num_comments: 30,
    age: 3 * DAY,
  },
  {
    objectID: '9005',
    title: 'Code review is the new bottleneck with AI coding agents',
    url: 'https://blog.fixture.test/code-review-bottleneck',
    story_text: null,
    points: 150,
    num_comments: 90,
    age: 4 * DAY,
  },
];

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function rss(now: Date, entries: readonly FixtureEntry[], title = 'Fixture Tech Daily'): string {
  const items = entries
    .map(
      (e) =>
        `<item><title>${xml(e.title)}</title><link>${xml(e.url)}</link><description>${xml(e.summary)}</description>${
          e.age === null ? '' : `<pubDate>${new Date(now.getTime() - e.age).toUTCString()}</pubDate>`
        }</item>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>${xml(title)}</title><link>https://news.fixture.test/</link><description>Fixture news</description>\n${items}\n</channel></rss>\n`;
}

function atom(now: Date): string {
  const entries = ATOM_ENTRIES.map((e) => {
    const when = new Date(now.getTime() - (e.age ?? 0)).toISOString();
    return `<entry><title>${xml(e.title)}</title><link href="${xml(e.url)}"/><id>${xml(e.url)}</id><updated>${when}</updated><published>${when}</published><summary type="html">${xml(e.summary)}</summary></entry>`;
  }).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom"><title>Fixture Weekly</title><id>urn:fixture:weekly</id><updated>${now.toISOString()}</updated>\n${entries}\n</feed>\n`;
}

function hn(now: Date, hitsPerPage: number): string {
  return JSON.stringify({
    hits: HN_HITS.slice(0, hitsPerPage).map(({ age, ...hit }) => ({
      ...hit,
      created_at: new Date(now.getTime() - age).toISOString(),
    })),
    nbHits: HN_HITS.length,
    page: 0,
    hitsPerPage,
  });
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

/** A peer sector whose top keywords share `invoices` with the fixture scan (a cross signal). */
export const FIXTURE_PEER: PeerSector = {
  sector: 'fixture-fin',
  gaps_count: 1,
  pain_mentions: 10,
  top_keywords: ['invoices', 'payments', 'banking'],
};

/**
 * The figures a scan of {@link startFixtureFeeds}' sources yields with the scripted responder
 * (`scriptedPipelineResponder`), counted by hand from the fixture text above (not computed by the
 * code under test). `inWindow` and everything after it hold for the stored window of `windowDays`
 * (7): the 40-day-old RSS entry is fetched and stored but not analysed.
 */
export const FIXTURE_SCAN = {
  sector: 'fixture-tech',
  windowDays: 7,
  /**
   * Runner settings for end-to-end tests and the demo (environment variables of the runner process):
   * short politeness gaps, a 1 MiB size limit, which the 3 MiB oversized feed exceeds, and the
   * fixture server's host (and nothing else) on the SSRF allowlist.
   */
  runnerEnv: {
    SCOUT_HOST_DELAY_MS: '50',
    SCOUT_FETCH_TIMEOUT_MS: '5000',
    SCOUT_MAX_RESPONSE_BYTES: String(1024 * 1024),
    SSRF_ALLOWLIST: '127.0.0.1',
  } as Record<string, string>,
  /** The SSRF allowlist of the runner's scout fetch settings for scanning the fixture server in-process: its host only. */
  ssrfAllowlist: ['127.0.0.1'] as readonly string[],
  /** All six sources; three fail: dead (connection refused), malformed, oversized. */
  sources: 6,
  failedSources: ['fixture-dead', 'fixture-malformed', 'fixture-oversized'],
  /** `SourceReport.error` of each failing source contains this text. */
  errors: {
    'fixture-dead': 'connection refused',
    'fixture-malformed': 'malformed feed',
    'fixture-oversized': 'response larger than',
  } as Record<string, string>,
  /** Entries parsed per working source. */
  parsed: { 'fixture-rss': 7, 'fixture-atom': 5, 'fixture-hn': 5 } as Record<string, number>,
  /** Items kept per working source after normalisation. */
  keptBySource: { 'fixture-rss': 5, 'fixture-atom': 3, 'fixture-hn': 5 } as Record<string, number>,
  /** Items kept by the fetch (`ScoutStats.itemsFetched`; 13 = 17 parsed - 4 dropped) and stored. */
  kept: 13,
  /** The French entry; the 2-character title; the Atom copies of two RSS stories (same URL after canonicalisation; same title). */
  dropped: { duplicate: 2, language: 1, length: 1 },
  /** Items in a 7-day window (`ScoutStats.analysed`). */
  inWindow: 12,
  articles: 7,
  discussions: 5,
  /** Exact counts of some keywords over the window's titles and summaries. */
  keywords: {
    ai: 12,
    agents: 6,
    'ai coding': 6,
    'small businesses': 5,
    invoices: 4,
    'coding agents': 4,
    'code review': 3,
    'pull requests': 3,
  } as Record<string, number>,
  /** Number of trends. */
  trends: 3,
  /** Trends whose newest item is at most a day old (`/scout/trends?days=1`). */
  trendsWithinOneDay: 2,
  /** The report's trends, newest first: title, velocity, cited items, source, score. */
  trendDetails: [
    {
      title: 'Invoice and payment automation',
      velocity: 'new',
      items: 2,
      source: 'Fixture Tech Daily',
      score: 2,
    },
    {
      title: 'AI coding agents go mainstream',
      velocity: 'steady',
      items: 3,
      source: 'Fixture Tech Daily',
      score: 3,
    },
    {
      title: 'Open source under AI pressure',
      velocity: 'rising',
      items: 1,
      source: 'Fixture Tech Daily',
      score: 1,
    },
  ],
  pains: 4,
  /** Pain clusters as `[theme, mentions]` (mentions: distinct items behind the cluster's pains). */
  painClusters: [
    ['Getting paid and reconciling', 3],
    ['Review and CI overload from AI agents', 5],
  ] as [string, number][],
  /** Intensity of each cluster, in order. */
  clusterIntensities: ['high', 'critical'],
  /** Number of gaps. */
  gaps: 2,
  /** The gaps in order: title, trend, the cluster themes it addresses. */
  gapDetails: [
    {
      title: 'Reconciliation autopilot for small businesses',
      trend: 'Invoice and payment automation',
      clusters: ['Getting paid and reconciling'],
    },
    {
      title: 'Review gatekeeper for AI-generated code',
      trend: 'AI coding agents go mainstream',
      clusters: ['Review and CI overload from AI agents'],
    },
  ],
  /** With {@link FIXTURE_PEER} as the only peer: the cross signal and the heat of the fixture sector (8 of 10 mentions). */
  crossSignals: [{ keyword: 'invoices', count: 4, sectors: ['fixture-fin'] }],
  heat: 0.8,
};

/**
 * A scout job input for the fixture sector.
 * @param sources the sources (usually `feeds.sources()`)
 * @param overrides fields to replace (validators, windowDays, peers)
 */
export function fixtureScoutInput(
  sources: ScoutSource[],
  overrides: Partial<ScoutJobInput> = {},
): ScoutJobInput {
  return {
    sector: FIXTURE_SCAN.sector,
    sources,
    validators: {},
    windowDays: FIXTURE_SCAN.windowDays,
    peers: [FIXTURE_PEER],
    ...overrides,
  };
}
