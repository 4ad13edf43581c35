import { ScanReport } from '@repo/schemas';
import { ScanBrief, ScoutResult, SourceReport } from '@repo/compute';
import { scoutPipeline, type PipelineDeps, type ScoutState } from '../../src/domain/pipelines';
import { SCOUT_TASKS } from '../../src/domain/pipelines/scout';
import { DEFAULT_SCOUT_FETCH_SETTINGS } from '../../src/domain/scout/settings';
import {
  FIXTURE_SCAN,
  fixtureScoutInput,
  scriptedPipelineResponder,
  startFixtureFeeds,
  type FixtureFeeds,
} from '@repo/compute/testing';
import { runToCompletion, scoutWindow } from '../../src/testing';
import { startUpstreams, type Upstreams } from '../support/deps';

let up: Upstreams;
let feeds: FixtureFeeds;
let deps: PipelineDeps;
beforeEach(async () => {
  feeds = await startFixtureFeeds({ oversizedBytes: 1024 * 1024 });
  up = await startUpstreams(scriptedPipelineResponder());
  deps = {
    ...up.depsWithoutSearch,
    // The scan's time is the fixture's reference time, so item ages (and velocities) are exact.
    now: () => feeds.now,
    scout: {
      ...DEFAULT_SCOUT_FETCH_SETTINGS,
      hostDelayMs: 10,
      timeoutMs: 2000,
      maxResponseBytes: 256 * 1024,
      ssrfAllowlist: FIXTURE_SCAN.ssrfAllowlist,
    },
  };
});
afterEach(async () => {
  await up.close();
  await feeds.close();
});

/** market-intel's hand-over after step 0: the 7-day window of what the scan fetched. */
const handOver = (state: ScoutState, stepIndex: number) =>
  stepIndex === 0 ? scoutWindow(state, FIXTURE_SCAN.windowDays, feeds.now) : state;

async function scan() {
  return runToCompletion(scoutPipeline, fixtureScoutInput(feeds.sources()), deps, 20, handOver);
}

describe('scout pipeline', () => {
  it('When the fixture sector is scanned, then the report holds the hand-counted figures and validates', async () => {
    const { result, steps, finalLabel } = await scan();
    expect(ScoutResult.safeParse(result).error?.issues ?? []).toEqual([]);
    expect(ScanReport.safeParse(result.report).success).toBe(true);
    expect(result.report.generatedAt).toBe(feeds.now.toISOString());
    expect(result.stats).toEqual({
      sources: FIXTURE_SCAN.sources,
      sourcesFailed: FIXTURE_SCAN.failedSources.length,
      itemsFetched: FIXTURE_SCAN.kept,
      newItems: FIXTURE_SCAN.kept,
      analysed: FIXTURE_SCAN.inWindow,
      dropped: FIXTURE_SCAN.dropped,
      trends: FIXTURE_SCAN.trends,
      pains: FIXTURE_SCAN.pains,
      painClusters: FIXTURE_SCAN.painClusters.length,
      gaps: FIXTURE_SCAN.gaps,
      keywords: result.report.sectors[0]!.keywords.length,
    });
    expect(result.sources.map((s) => [s.id, s.status])).toEqual([
      ['fixture-rss', 'ok'],
      ['fixture-atom', 'ok'],
      ['fixture-hn', 'ok'],
      ['fixture-dead', 'failed'],
      ['fixture-malformed', 'failed'],
      ['fixture-oversized', 'failed'],
    ]);
    result.sources.forEach((s) => expect(SourceReport.safeParse(s).success).toBe(true));

    const sector = result.report.sectors[0]!;
    expect(sector.sector).toBe(FIXTURE_SCAN.sector);
    expect(sector.trends.map((t) => [t.title, t.velocity, t.source])).toEqual(
      FIXTURE_SCAN.trendDetails.map((t) => [t.title, t.velocity, t.source]),
    );
    // A trend's date is its newest item's: the undated bookkeeping story got the scan's time.
    expect(sector.trends[0]!.date).toBe(feeds.now.toISOString());
    expect(sector.trends.filter((t) => Date.parse(t.date) >= feeds.now.getTime() - 86_400_000)).toHaveLength(
      FIXTURE_SCAN.trendsWithinOneDay,
    );
    expect(sector.painClusters.map((c) => [c.theme, c.mentions, c.intensity])).toEqual(
      FIXTURE_SCAN.painClusters.map(([theme, mentions], i) => [
        theme,
        mentions,
        FIXTURE_SCAN.clusterIntensities[i],
      ]),
    );
    expect(sector.gaps.map((g) => [g.title, g.pain_signals.map((p) => p.theme)])).toEqual(
      FIXTURE_SCAN.gapDetails.map((g) => [g.title, g.clusters]),
    );
    const reconciliation = sector.gaps[0]!;
    expect(reconciliation.trend_signal).toEqual({
      article: 'Small businesses adopt AI bookkeeping assistants',
      source: 'Fixture Tech Daily',
      score: 2,
      insight: expect.any(String),
    });
    expect(reconciliation.pain_signals[0]).toMatchObject({ severity: 'high', signal_count: 3 });
    for (const [keyword, count] of Object.entries(FIXTURE_SCAN.keywords))
      expect(sector.keywords.find((k) => k.keyword === keyword)).toEqual({ keyword, count });
    expect(sector.keywords.every((k) => k.count >= 2)).toBe(true);

    const brief = ScanBrief.parse(result.report.brief);
    expect(brief.date).toBe(feeds.now.toISOString().slice(0, 10));
    expect(brief.stats).toMatchObject({
      items_analysed: FIXTURE_SCAN.inWindow,
      articles: FIXTURE_SCAN.articles,
      discussions: FIXTURE_SCAN.discussions,
      sources_failed: FIXTURE_SCAN.failedSources.length,
    });
    expect(brief.cross_signals).toEqual(FIXTURE_SCAN.crossSignals);
    expect(brief.sector_heatmap).toMatchObject({
      [FIXTURE_SCAN.sector]: { heat: FIXTURE_SCAN.heat, pain_mentions: 8, gaps_count: 2 },
      'fixture-fin': { heat: 1, pain_mentions: 10 },
    });
    expect(brief.top_articles).toHaveLength(5);
    expect(brief.narratives[0]!.trends).toEqual([
      'AI coding agents go mainstream',
      'Open source under AI pressure',
    ]);

    expect(steps.map((s) => s.label)).toEqual([
      'fetched 3 of 6 sources, 13 items (3 failed)',
      'extracted 3 trends',
      'extracted 4 pains',
      'grouped 4 pains into 2 clusters',
      'found 2 gaps',
    ]);
    expect(finalLabel).toBe('wrote the brief of 12 items');
    steps.forEach((s, i) => {
      expect(s.progressPct).toBeGreaterThanOrEqual(1);
      expect(s.progressPct).toBeLessThanOrEqual(99);
      if (i > 0) expect(s.progressPct).toBeGreaterThan(steps[i - 1]!.progressPct);
    });
    expect(up.llm.calls.map((c) => c.task)).toEqual(Object.values(SCOUT_TASKS));
  });

  it('When clusters are formed, then each cluster counts the distinct items behind its pains', async () => {
    const input = fixtureScoutInput(feeds.sources({ failing: false }));
    let state = scoutPipeline.init(input);
    const states: ScoutState[] = [];
    for (let i = 0; i < 4; i += 1) {
      const outcome = await scoutPipeline.step(input, state, deps);
      if (outcome.kind !== 'continue') throw new Error('finished early');
      state = handOver(outcome.state, i);
      states.push(state);
    }
    for (const cluster of state.clusters) {
      const items = new Set(cluster.painIndexes.flatMap((p) => state.pains[p]!.itemIndexes));
      expect(cluster.mentions).toBe(items.size);
    }
    expect(state.clusters.map((c) => c.mentions)).toEqual(
      FIXTURE_SCAN.painClusters.map(([, mentions]) => mentions),
    );
  });

  it('When a step is run again from the same state (a redelivery), then its outcome is the same', async () => {
    const input = fixtureScoutInput(feeds.sources());
    const first = await scoutPipeline.step(input, scoutPipeline.init(input), deps);
    const again = await scoutPipeline.step(input, scoutPipeline.init(input), deps);
    if (first.kind !== 'continue' || again.kind !== 'continue') throw new Error('finished early');
    const withoutDurations = (s: ScoutState) => ({
      ...s,
      sources: s.sources.map((r) => ({ ...r, durationMs: 0 })),
    });
    expect(withoutDurations(again.state)).toEqual(withoutDurations(first.state));
    let state = handOver(first.state, 0);
    for (let i = 1; i < 5; i += 1) {
      const a = await scoutPipeline.step(input, state, deps);
      const b = await scoutPipeline.step(input, state, deps);
      expect(b).toEqual(a);
      if (a.kind !== 'continue') throw new Error('finished early');
      state = a.state;
    }
  });

  it('When the window holds no item, then the scan finishes without LLM calls and with empty lists', async () => {
    const { result, steps } = await runToCompletion(
      scoutPipeline,
      fixtureScoutInput(feeds.sources()),
      deps,
      20,
      (state, i) => (i === 0 ? { ...state, items: [], newItems: 0 } : state),
    );
    expect(steps).toHaveLength(1);
    expect(up.llm.calls).toHaveLength(0);
    expect(result.stats).toMatchObject({
      analysed: 0,
      itemsFetched: 13,
      newItems: 0,
      trends: 0,
      gaps: 0,
      keywords: 0,
    });
    expect(result.report.sectors[0]).toMatchObject({ gaps: [], painClusters: [], trends: [], keywords: [] });
  });

  it('When every source fails, then the scan still completes on the stored window', async () => {
    const failing = feeds
      .sources()
      .filter((s) => s.id.startsWith('fixture-dead') || s.id === 'fixture-malformed');
    const { result } = await runToCompletion(
      scoutPipeline,
      fixtureScoutInput(failing),
      deps,
      20,
      (state, i) => (i === 0 ? { ...state, items: [], newItems: 0 } : state),
    );
    expect(result.stats).toMatchObject({ sources: 2, sourcesFailed: 2, itemsFetched: 0, analysed: 0 });
    expect(result.sources.every((s) => s.status === 'failed' && s.error)).toBe(true);
  });

  it('When a second scan sees the same items, then market-intel counts none as new and the analysis is unchanged', async () => {
    const input = fixtureScoutInput(feeds.sources({ failing: false }));
    const firstFetch = await scoutPipeline.step(input, scoutPipeline.init(input), deps);
    if (firstFetch.kind !== 'continue') throw new Error('finished early');
    const { result } = await runToCompletion(scoutPipeline, input, deps, 20, (state, i) =>
      i === 0 ? scoutWindow(state, FIXTURE_SCAN.windowDays, feeds.now, firstFetch.state.items) : state,
    );
    expect(result.stats).toMatchObject({ itemsFetched: 13, newItems: 0, analysed: 12 });
  });

  it('When the items match none of the fixture themes (real feeds with the offline stand-in), then the scripted answers still make a complete report', async () => {
    const other = (i: number, kind: 'article' | 'discussion') => ({
      hash: String(i).padStart(64, '0'),
      kind,
      url: `https://example.com/${i}`,
      title: `Quarterly results of regional logistics company number ${i}`,
      summary: 'Freight volumes grew in the quarter.',
      source: 'other',
      sourceName: 'Other Source',
      publishedAt: new Date(feeds.now.getTime() - i * 3_600_000).toISOString(),
      lang: 'en',
      ...(kind === 'discussion' ? { points: 10 * i, comments: i } : {}),
    });
    const items = [other(1, 'article'), other(2, 'article'), other(3, 'discussion'), other(4, 'discussion')];
    const { result } = await runToCompletion(
      scoutPipeline,
      fixtureScoutInput(feeds.sources({ failing: false })),
      deps,
      20,
      (state, i) => (i === 0 ? { ...state, items, newItems: 0 } : state),
    );
    const sector = result.report.sectors[0]!;
    expect([sector.trends.length, sector.painClusters.length, sector.gaps.length]).toEqual([1, 1, 1]);
    expect(result.stats.pains).toBe(2);
    // The two most discussed items are the pains; the cluster counts both.
    expect(sector.painClusters[0]!.mentions).toBe(2);
    expect(sector.gaps[0]!.pain_signals[0]!.signal_count).toBe(2);
    expect(sector.keywords.find((k) => k.keyword === 'regional logistics')).toEqual({
      keyword: 'regional logistics',
      count: 4,
    });
  });
});
