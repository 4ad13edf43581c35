// The figures a scan of the fixture feeds yields (counted by hand), the peer sector beside it, and a scout job input for it.
import type { PeerSector, ScoutJobInput, ScoutSource } from '../scout';

/** A peer sector whose top keywords share `invoices` with the fixture scan (a cross signal). */
export const FIXTURE_PEER: PeerSector = {
  sector: 'fixture-fin',
  gaps_count: 1,
  pain_mentions: 10,
  top_keywords: ['invoices', 'payments', 'banking'],
};

/**
 * The figures a scan of {@link startFixtureFeeds}' sources yields with the scripted responder
 * (`scriptedPipelineResponder`), counted by hand from the fixture text in scout-fixture-content.ts
 * (not computed by the code under test). `inWindow` and everything after it hold for the stored
 * window of `windowDays` (7): the 40-day-old RSS entry is fetched and stored but not analysed.
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
