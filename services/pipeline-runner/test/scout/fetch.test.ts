import type { SourceReport } from '@repo/compute';
import { fetchSources } from '../../src/domain/scout/fetch';
import { DEFAULT_SCOUT_FETCH_SETTINGS, type ScoutFetchSettings } from '../../src/domain/scout/settings';
import { FIXTURE_SCAN, fixtureScoutInput, startFixtureFeeds, type FixtureFeeds } from '@repo/compute/testing';

const LIMIT = 256 * 1024;
const settings: ScoutFetchSettings = {
  ...DEFAULT_SCOUT_FETCH_SETTINGS,
  hostDelayMs: 20,
  timeoutMs: 2000,
  maxResponseBytes: LIMIT,
  // The fixture server listens on 127.0.0.1, which the SSRF guard refuses unless allowlisted.
  ssrfAllowlist: FIXTURE_SCAN.ssrfAllowlist,
};

let feeds: FixtureFeeds;
beforeEach(async () => {
  feeds = await startFixtureFeeds({ oversizedBytes: 1024 * 1024 });
});
afterEach(async () => {
  await feeds.close();
});

function byId(reports: readonly SourceReport[], id: string): SourceReport {
  const report = reports.find((r) => r.id === id);
  if (!report) throw new Error(`no report for ${id}`);
  return report;
}

function feed(id: string, path: string) {
  return { type: 'feed' as const, id, name: id, url: `${feeds.baseUrl}${path}` };
}

describe('scout fetch', () => {
  it('When every fixture source is fetched, then the working ones are parsed and each failure is reported with its reason', async () => {
    const scan = await fetchSources(fixtureScoutInput(feeds.sources()), settings, feeds.now);
    expect(scan.sources.map((s) => [s.id, s.status])).toEqual([
      ['fixture-rss', 'ok'],
      ['fixture-atom', 'ok'],
      ['fixture-hn', 'ok'],
      ['fixture-dead', 'failed'],
      ['fixture-malformed', 'failed'],
      ['fixture-oversized', 'failed'],
    ]);
    for (const [id, parsed] of Object.entries(FIXTURE_SCAN.parsed)) {
      expect(byId(scan.sources, id).items).toBe(parsed);
      expect(byId(scan.sources, id).kept).toBe(FIXTURE_SCAN.keptBySource[id]);
      expect(byId(scan.sources, id).httpStatus).toBe(200);
      expect(byId(scan.sources, id).error).toBeNull();
    }
    for (const [id, text] of Object.entries(FIXTURE_SCAN.errors)) {
      expect(byId(scan.sources, id).error).toContain(text);
      expect(byId(scan.sources, id).items).toBe(0);
    }
    expect(byId(scan.sources, 'fixture-dead').httpStatus).toBeNull();
    expect(byId(scan.sources, 'fixture-malformed').httpStatus).toBe(200);
    expect(byId(scan.sources, 'fixture-oversized').error).toBe(`response larger than ${LIMIT} bytes`);
    expect(scan.items).toHaveLength(FIXTURE_SCAN.kept);
    expect(scan.dropped).toEqual(FIXTURE_SCAN.dropped);
    expect(byId(scan.sources, 'fixture-rss').validators).toEqual({
      etag: '"rss-v1"',
      lastModified: expect.any(String),
    });
    // Every item keeps its source for provenance.
    expect(new Set(scan.items.map((i) => `${i.source}/${i.sourceName}`))).toEqual(
      new Set(['fixture-rss/Fixture Tech Daily', 'fixture-atom/Fixture Weekly', 'fixture-hn/Fixture HN']),
    );
    expect(scan.items.every((i) => /^[0-9a-f]{64}$/.test(i.hash))).toBe(true);
  });

  it('When the validators of the last fetch are sent, then the feeds answer 304 and the sources are not_modified with no items', async () => {
    const first = await fetchSources(
      fixtureScoutInput(feeds.sources({ failing: false })),
      settings,
      feeds.now,
    );
    const validators = Object.fromEntries(first.sources.map((s) => [s.id, s.validators]));
    const second = await fetchSources(
      fixtureScoutInput(feeds.sources({ failing: false }), { validators }),
      settings,
      feeds.now,
    );
    expect(second.sources.map((s) => [s.id, s.status, s.httpStatus, s.items])).toEqual([
      ['fixture-rss', 'not_modified', 304, 0],
      ['fixture-atom', 'not_modified', 304, 0],
      ['fixture-hn', 'not_modified', 304, 0],
    ]);
    expect(second.items).toEqual([]);
    expect(second.sources.map((s) => s.validators)).toEqual(first.sources.map((s) => s.validators));
    expect(feeds.requests.slice(3).map((r) => [r.status, r.conditional])).toEqual([
      [304, true],
      [304, true],
      [304, true],
    ]);
  });

  it('When only Last-Modified is known, then If-Modified-Since alone gets the 304', async () => {
    const first = await fetchSources(fixtureScoutInput([feed('rss', '/feeds/rss.xml')]), settings, feeds.now);
    const lastModified = first.sources[0]!.validators.lastModified!;
    const second = await fetchSources(
      fixtureScoutInput([feed('rss', '/feeds/rss.xml')], { validators: { rss: { lastModified } } }),
      settings,
      feeds.now,
    );
    expect(second.sources[0]).toMatchObject({ status: 'not_modified', httpStatus: 304 });
    expect(second.sources[0]!.validators).toEqual({ etag: '"rss-v1"', lastModified });
  });

  it('When a source answers HTTP 500 or not at all, then it fails with the status or the deadline and the others are kept', async () => {
    const scan = await fetchSources(
      fixtureScoutInput([
        feed('error', '/feeds/error.xml'),
        feed('slow', '/feeds/slow.xml'),
        feed('rss', '/feeds/rss.xml'),
      ]),
      { ...settings, timeoutMs: 300 },
      feeds.now,
    );
    expect(scan.sources.map((s) => [s.id, s.status, s.httpStatus, s.error])).toEqual([
      ['error', 'failed', 500, 'HTTP 500'],
      ['slow', 'failed', null, 'no complete answer within 300 ms'],
      ['rss', 'ok', 200, null],
    ]);
    expect(scan.items.length).toBe(5);
    expect(scan.sources[1]!.durationMs).toBeGreaterThanOrEqual(290);
  });

  it('When sources share a host, then they are fetched one after the other at least the host delay apart', async () => {
    const hostDelayMs = 250;
    await fetchSources(
      fixtureScoutInput(feeds.sources({ failing: false })),
      { ...settings, hostDelayMs },
      feeds.now,
    );
    const times = feeds.requests.map((r) => r.at);
    expect(feeds.requests.map((r) => r.path)).toEqual([
      '/feeds/rss.xml',
      '/feeds/atom.xml',
      '/hn/search_by_date',
    ]);
    for (let i = 1; i < times.length; i += 1)
      // A request starts hostDelayMs after the previous one started; on a loaded machine arrivals
      // jitter by tens of ms, and unspaced requests would still arrive well under this bound.
      expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(hostDelayMs - 100);
  });

  it('When a response is larger than the limit, then the fetch stops and reports the limit', async () => {
    const scan = await fetchSources(
      fixtureScoutInput([feed('huge', '/feeds/huge.xml')]),
      { ...settings, maxResponseBytes: 64 * 1024 },
      feeds.now,
    );
    expect(scan.sources[0]).toMatchObject({
      status: 'failed',
      error: 'response larger than 65536 bytes',
      items: 0,
    });
  });

  it('When a feed has moved, then the redirect is followed; a redirect loop fails after the limit', async () => {
    const scan = await fetchSources(
      fixtureScoutInput([feed('moved', '/feeds/moved.xml'), feed('loop', '/feeds/loop.xml')]),
      { ...settings, maxRedirects: 3 },
      feeds.now,
    );
    expect(scan.sources.map((s) => [s.id, s.status, s.items, s.error])).toEqual([
      ['moved', 'ok', 7, null],
      ['loop', 'failed', 0, 'more than 3 redirects'],
    ]);
    expect(feeds.requests.filter((r) => r.path === '/feeds/loop.xml')).toHaveLength(4);
  });
});
