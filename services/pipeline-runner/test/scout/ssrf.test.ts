import type { SourceReport } from '@repo/compute';
import { scoutPipeline, type PipelineDeps } from '../../src/domain/pipelines';
import { fetchSources } from '../../src/domain/scout/fetch';
import { DEFAULT_SCOUT_FETCH_SETTINGS, type ScoutFetchSettings } from '../../src/domain/scout/settings';
import {
  FIXTURE_METADATA_URL,
  FIXTURE_SCAN,
  fixtureScoutInput,
  scriptedPipelineResponder,
  startFixtureFeeds,
  type FixtureFeeds,
} from '@repo/compute/testing';
import { startUpstreams } from '../support/deps';
import {
  INTERNAL_TITLE,
  startInternalServer,
  staticLookup,
  watchConnections,
  type ConnectionWatch,
  type InternalServer,
} from '../support/network';

// Scout sources are chosen by third parties: neither they nor their redirects may reach inside the cluster.
const settings: ScoutFetchSettings = {
  ...DEFAULT_SCOUT_FETCH_SETTINGS,
  hostDelayMs: 0,
  timeoutMs: 2000,
  // As in development: the fixture server's host, and nothing else.
  ssrfAllowlist: FIXTURE_SCAN.ssrfAllowlist,
};

let feeds: FixtureFeeds;
let connections: ConnectionWatch | undefined;
afterEach(async () => {
  connections?.stop();
  connections = undefined;
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

describe('scout fetch behind the SSRF guard', () => {
  it('When a feed redirects to the metadata endpoint 169.254.169.254, then the source fails with the refusal, no connection to it is attempted and the other sources are kept', async () => {
    feeds = await startFixtureFeeds();
    const watch = (connections = watchConnections());
    const scan = await fetchSources(
      fixtureScoutInput([feed('metadata', '/feeds/metadata.xml'), feed('rss', '/feeds/rss.xml')]),
      settings,
      feeds.now,
    );
    expect(byId(scan.sources, 'metadata')).toMatchObject({
      status: 'failed',
      httpStatus: null,
      items: 0,
      error: 'refused: redirect to 169.254.169.254 (metadata) is not allowed',
    });
    expect(byId(scan.sources, 'rss')).toMatchObject({ status: 'ok', error: null, items: 7 });
    // The feed itself was asked and answered the redirect; its target never was.
    expect(feeds.requests.filter((r) => r.path === '/feeds/metadata.xml').map((r) => r.status)).toEqual([
      302,
    ]);
    expect(new URL(FIXTURE_METADATA_URL).hostname).toBe('169.254.169.254');
    expect(watch.reached('169.254.169.254')).toBe(false);
    // The watch does see the connections that were made.
    expect(watch.reached('127.0.0.1')).toBe(true);
  });

  describe('with servers inside the "cluster" (127.0.0.2, ::1) that feeds redirect to', () => {
    let v4: InternalServer;
    let v6: InternalServer;
    beforeEach(async () => {
      v4 = await startInternalServer('127.0.0.2');
      v6 = await startInternalServer('::1');
      feeds = await startFixtureFeeds({
        redirects: {
          '/feeds/to-127-0-0-2.xml': `http://127.0.0.2:${v4.port}/feed.xml`,
          '/feeds/to-ipv6-loopback.xml': `http://[::1]:${v6.port}/feed.xml`,
          '/feeds/to-name.xml': `http://intranet.test:${v4.port}/feed.xml`,
          '/feeds/to-private.xml': 'http://10.0.0.1/feed.xml',
        },
      });
    });
    afterEach(async () => {
      await v4.close();
      await v6.close();
    });

    const sources = () => [
      feed('to-127-0-0-2', '/feeds/to-127-0-0-2.xml'),
      feed('to-ipv6-loopback', '/feeds/to-ipv6-loopback.xml'),
      feed('to-name', '/feeds/to-name.xml'),
    ];

    it('When a feed redirects to a loopback address other than the allowlisted 127.0.0.1, to a host name resolving to one, or to a private address, then each is refused and those servers receive nothing', async () => {
      const lookup = staticLookup({ 'intranet.test': ['127.0.0.2'] });
      const watch = (connections = watchConnections());
      const scan = await fetchSources(
        fixtureScoutInput([...sources(), feed('to-private', '/feeds/to-private.xml')]),
        settings,
        feeds.now,
        { lookup },
      );
      expect(scan.sources.map((s) => [s.id, s.status, s.httpStatus, s.error])).toEqual([
        ['to-127-0-0-2', 'failed', null, 'refused: redirect to 127.0.0.2 (loopback) is not allowed'],
        ['to-ipv6-loopback', 'failed', null, 'refused: redirect to ::1 (loopback) is not allowed'],
        [
          'to-name',
          'failed',
          null,
          'refused: redirect to intranet.test (127.0.0.2, loopback) is not allowed',
        ],
        ['to-private', 'failed', null, 'refused: redirect to 10.0.0.1 (private) is not allowed'],
      ]);
      expect([v4.hits(), v6.hits()]).toEqual([0, 0]);
      // The name was resolved and its address refused before connecting.
      expect(lookup.calls).toContain('intranet.test');
      for (const address of ['127.0.0.2', '::1', '10.0.0.1']) expect(watch.reached(address)).toBe(false);
      expect(scan.items).toEqual([]);
      expect(JSON.stringify(scan)).not.toContain(INTERNAL_TITLE);
    });

    it('When those addresses are allowlisted as well, then the same redirects reach the servers (the refusals are the guard’s doing)', async () => {
      const lookup = staticLookup({ 'intranet.test': ['127.0.0.2'] });
      const scan = await fetchSources(
        fixtureScoutInput(sources()),
        { ...settings, ssrfAllowlist: [...FIXTURE_SCAN.ssrfAllowlist, '127.0.0.2', '::1'] },
        feeds.now,
        { lookup },
      );
      expect(scan.sources.map((s) => [s.id, s.status, s.items])).toEqual([
        ['to-127-0-0-2', 'ok', 1],
        ['to-ipv6-loopback', 'ok', 1],
        ['to-name', 'ok', 1],
      ]);
      expect([v4.hits(), v6.hits()]).toEqual([2, 1]);
      expect(scan.items.map((i) => i.title)).toEqual([INTERNAL_TITLE]);
    });
  });

  it('When the allowlist is empty (the default), then sources on 127.0.0.1 itself, by address or by a name resolving to it, are refused and the fixture server receives no request', async () => {
    feeds = await startFixtureFeeds();
    const watch = (connections = watchConnections());
    const port = new URL(feeds.baseUrl).port;
    const lookup = staticLookup({ 'feeds.intranet.test': ['127.0.0.1'] });
    expect(DEFAULT_SCOUT_FETCH_SETTINGS.ssrfAllowlist).toEqual([]);
    const scan = await fetchSources(
      fixtureScoutInput([
        ...feeds.sources({ failing: false }),
        {
          type: 'feed',
          id: 'by-name',
          name: 'by-name',
          url: `http://feeds.intranet.test:${port}/feeds/rss.xml`,
        },
      ]),
      { ...settings, ssrfAllowlist: DEFAULT_SCOUT_FETCH_SETTINGS.ssrfAllowlist },
      feeds.now,
      { lookup },
    );
    expect(scan.sources.map((s) => [s.id, s.status, s.httpStatus, s.error])).toEqual([
      ['fixture-rss', 'failed', null, 'refused: 127.0.0.1 (loopback) is not allowed'],
      ['fixture-atom', 'failed', null, 'refused: 127.0.0.1 (loopback) is not allowed'],
      ['fixture-hn', 'failed', null, 'refused: 127.0.0.1 (loopback) is not allowed'],
      ['by-name', 'failed', null, 'refused: feeds.intranet.test (127.0.0.1, loopback) is not allowed'],
    ]);
    expect(feeds.requests).toEqual([]);
    expect(watch.attempts).not.toContain(`127.0.0.1:${port}`);
    expect(scan.items).toEqual([]);
  });

  it('When a source is refused, then the scan step still completes and reports it like any failed source', async () => {
    feeds = await startFixtureFeeds();
    const up = await startUpstreams(scriptedPipelineResponder());
    try {
      const deps: PipelineDeps = { ...up.depsWithoutSearch, now: () => feeds.now, scout: settings };
      const input = fixtureScoutInput([
        feed('metadata', '/feeds/metadata.xml'),
        feed('rss', '/feeds/rss.xml'),
      ]);
      const outcome = await scoutPipeline.step(input, scoutPipeline.init(input), deps);
      if (outcome.kind !== 'continue') throw new Error('the scan finished at the fetch');
      expect(outcome.state.sources.map((s) => [s.id, s.status, s.error])).toEqual([
        ['metadata', 'failed', 'refused: redirect to 169.254.169.254 (metadata) is not allowed'],
        ['rss', 'ok', null],
      ]);
      expect(up.llm.calls).toHaveLength(0);
    } finally {
      await up.close();
    }
  });
});
