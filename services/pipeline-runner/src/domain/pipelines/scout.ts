import { z } from 'zod';
import { GapItem, Severity } from '@repo/schemas';
import {
  ScoutItem,
  ScoutJobInput,
  ScoutResult,
  SourceReport,
  type ScanBrief,
  type ScoutStats,
} from '@repo/compute';
import { nextProgress } from '../progress';
import {
  crossSignals,
  intensityOf,
  sectorHeatmap,
  strongestItem,
  trendScore,
  velocityOf,
} from '../scout/analysis';
import { fetchSources } from '../scout/fetch';
import { keywordCounts } from '../scout/keywords';
import { scoutSettings } from '../scout/settings';
import { clip, upTo } from './render';
import type { Pipeline, PipelineDeps, StepOutcome } from './types';

/** Task names of the scout LLM calls (one per analysis step). */
export const SCOUT_TASKS = {
  trends: 'scout_trends',
  pains: 'scout_pains',
  clusters: 'scout_clusters',
  gaps: 'scout_gaps',
  brief: 'scout_brief',
} as const;

/** Steps of a scan with items: fetch, trends, pains, clusters, gaps, brief. */
export const SCOUT_STEPS = 6;
/** Articles shown in the brief's `top_articles` at most. */
export const TOP_ARTICLES = 5;
/** Keywords of the sector shown in the heatmap. */
const HEATMAP_KEYWORDS = 5;

// ---- What the model is asked for (items, pains, trends and clusters by index) ----

const Indexes = z.array(z.number()).describe('indexes as shown in brackets, e.g. [3]');

/** Trends step answer. */
export const TrendsAnswer = z.object({
  trends: upTo(
    z.object({
      title: z.string().min(1),
      description: z.string().min(1),
      insight: z.string().min(1).describe('why the trend matters for builders, one sentence'),
      itemIndexes: Indexes.min(1),
    }),
    8,
  ),
});
/** Pains step answer. */
export const PainsAnswer = z.object({
  pains: upTo(
    z.object({
      theme: z.string().min(1),
      severity: Severity,
      description: z.string().min(1),
      itemIndexes: Indexes.min(1),
    }),
    12,
  ),
});
/** Clusters step answer. */
export const ClustersAnswer = z.object({
  clusters: upTo(
    z.object({
      theme: z.string().min(1),
      description: z.string().min(1),
      painIndexes: Indexes.min(1).describe('pain indexes, e.g. P2 -> 2'),
    }),
    8,
  ),
});
/** Gaps step answer. */
export const GapsAnswer = z.object({
  gaps: upTo(
    z.object({
      title: z.string().min(1).describe('the product opportunity'),
      trendIndex: z.number().describe('trend index, e.g. T1 -> 1'),
      clusterIndexes: Indexes.min(1).describe('pain cluster indexes, e.g. C0 -> 0'),
    }),
    8,
  ),
});
/** Brief step answer. */
export const BriefAnswer = z.object({
  overview: z.string().min(1),
  takeaway: z.string().min(1),
  narratives: upTo(
    z.object({
      title: z.string().min(1),
      summary: z.string().min(1),
      trendIndexes: Indexes.describe('trend indexes, e.g. T0 -> 0'),
    }),
    5,
  ),
});

// ---- State ----

const Dropped = z.strictObject({
  duplicate: z.number().int().nonnegative(),
  language: z.number().int().nonnegative(),
  length: z.number().int().nonnegative(),
});
const Trend = z.strictObject({
  title: z.string(),
  description: z.string(),
  insight: z.string(),
  itemIndexes: z.array(z.number().int().nonnegative()),
  velocity: z.string(),
  source: z.string(),
  article: z.string(),
  date: z.iso.datetime({ offset: true }),
  score: z.number(),
});
const Pain = z.strictObject({
  theme: z.string(),
  severity: Severity,
  description: z.string(),
  itemIndexes: z.array(z.number().int().nonnegative()),
});
const Cluster = z.strictObject({
  theme: z.string(),
  description: z.string(),
  painIndexes: z.array(z.number().int().nonnegative()),
  mentions: z.number().int().nonnegative(),
  intensity: Severity,
});

/**
 * The scan's state between steps. After step 0 it holds this scan's normalised `items`, the source
 * reports, `fetched` (items kept from the fetch) and `dropped`; market-intel then replaces `items` by
 * the sector's stored window and adds `newItems` (the scout contract in @repo/compute); the analysis
 * steps refer to `items` by index, so the window must not change after step 0.
 */
export const ScoutState = z.strictObject({
  phase: z.enum(['fetch', 'trends', 'pains', 'clusters', 'gaps', 'brief']),
  /** When step 0 fetched the sources (ISO): the report's `generatedAt`. */
  fetchedAt: z.iso.datetime({ offset: true }).nullable(),
  items: z.array(ScoutItem),
  sources: z.array(SourceReport),
  /** Items kept from this scan's fetch (before market-intel's window replaced `items`). */
  fetched: z.number().int().nonnegative(),
  dropped: Dropped,
  /** Set by market-intel after step 0: how many of this scan's items were new to the sector. */
  newItems: z.number().int().nonnegative().optional(),
  trends: z.array(Trend),
  pains: z.array(Pain),
  clusters: z.array(Cluster),
  gaps: z.array(GapItem),
  stepsDone: z.number().int().nonnegative(),
  progressPct: z.number().int().min(0).max(99),
});
/** Inferred type of {@link ScoutState}. */
export type ScoutState = z.infer<typeof ScoutState>;
type Trend = z.infer<typeof Trend>;
type Pain = z.infer<typeof Pain>;
type Cluster = z.infer<typeof Cluster>;
type ScoutOutcome = StepOutcome<ScoutState, ScoutResult>;

function initialState(): ScoutState {
  return {
    phase: 'fetch',
    fetchedAt: null,
    items: [],
    sources: [],
    fetched: 0,
    dropped: { duplicate: 0, language: 0, length: 0 },
    trends: [],
    pains: [],
    clusters: [],
    gaps: [],
    stepsDone: 0,
    progressPct: 0,
  };
}

function advance(state: ScoutState, patch: Partial<ScoutState>, label: string): ScoutOutcome {
  const stepsDone = state.stepsDone + 1;
  const progressPct = nextProgress(state.progressPct, stepsDone, SCOUT_STEPS);
  return { kind: 'continue', state: { ...state, ...patch, stepsDone, progressPct }, progressPct, label };
}

/** Valid, distinct integer indexes below `size` (and in `allowed` when given), in the model's order. */
function validIndexes(raw: readonly number[], size: number, allowed?: ReadonlySet<number>): number[] {
  const out: number[] = [];
  for (const n of raw)
    if (Number.isInteger(n) && n >= 0 && n < size && (!allowed || allowed.has(n)) && !out.includes(n))
      out.push(n);
  return out;
}

function scanTime(state: ScoutState, deps: PipelineDeps): Date {
  return state.fetchedAt ? new Date(state.fetchedAt) : deps.now();
}

function renderItem(item: ScoutItem, index: number): string {
  const discussion =
    item.kind === 'discussion' ? `, ${item.points ?? 0} points, ${item.comments ?? 0} comments` : '';
  // Short summaries keep a full window (150 items) within small models' context.
  const summary = item.summary ? ` — ${clip(item.summary, 160)}` : '';
  return `[${index}] (${item.kind}) ${clip(item.title, 200)}${summary} | ${item.sourceName}, ${item.publishedAt.slice(0, 10)}${discussion}`;
}

function renderItems(items: readonly ScoutItem[], indexes: readonly number[]): string {
  return indexes.map((i) => renderItem(items[i] as ScoutItem, i)).join('\n');
}

function intro(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): string {
  return `You analyse the news and public discussion of the "${input.sector}" sector for a market-intelligence report (scan of ${scanTime(state, deps).toISOString().slice(0, 10)}). Refer to items, pains, trends and clusters only by their indexes; never invent items.`;
}

function renderTrends(trends: readonly Trend[]): string {
  return trends
    .map((t, i) => `T${i} ${t.title} — ${clip(t.description, 200)} (${t.velocity}, score ${t.score})`)
    .join('\n');
}

function renderClusters(clusters: readonly Cluster[]): string {
  return clusters
    .map((c, i) => `C${i} ${c.theme} — ${clip(c.description, 200)} (${c.mentions} mentions, ${c.intensity})`)
    .join('\n');
}

// ---- Steps ----

async function fetchStep(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Promise<ScoutOutcome> {
  const fetchedAt = deps.now();
  const scan = await fetchSources(input, scoutSettings(deps.scout), fetchedAt);
  const failed = scan.sources.filter((s) => s.status === 'failed');
  for (const s of failed)
    deps.logger.warn({ source: s.id, url: s.url, error: s.error }, 'scout source failed');
  const notModified = scan.sources.filter((s) => s.status === 'not_modified').length;
  const notes = [
    ...(notModified ? [`${notModified} not modified`] : []),
    ...(failed.length ? [`${failed.length} failed`] : []),
  ];
  const label = `fetched ${scan.sources.length - failed.length} of ${scan.sources.length} sources, ${scan.items.length} items${notes.length ? ` (${notes.join(', ')})` : ''}`;
  return advance(
    state,
    {
      phase: 'trends',
      fetchedAt: fetchedAt.toISOString(),
      items: scan.items,
      sources: scan.sources,
      fetched: scan.items.length,
      dropped: scan.dropped,
    },
    label,
  );
}

async function trendsStep(
  input: ScoutJobInput,
  state: ScoutState,
  deps: PipelineDeps,
): Promise<ScoutOutcome> {
  const articles = state.items.flatMap((item, i) => (item.kind === 'article' ? [i] : []));
  // Without articles the discussions are the only trend material.
  const shown = articles.length ? articles : state.items.map((_, i) => i);
  const system = `${intro(input, state, deps)}\n\nExtract the trends the items show (at most 8): a short title, a description, a one-sentence insight for builders, and the indexes of the items behind each trend. An item may support several trends.`;
  const user = `# Items\n${renderItems(state.items, shown)}`;
  const answer = (
    await deps.llm.complete({
      task: SCOUT_TASKS.trends,
      system,
      user,
      schema: TrendsAnswer,
      temperature: 0.3,
    })
  ).value;
  const now = scanTime(state, deps);
  const allowed = new Set(shown);
  const trends: Trend[] = [];
  for (const t of answer.trends) {
    const itemIndexes = validIndexes(t.itemIndexes, state.items.length, allowed);
    const cited = itemIndexes.map((i) => state.items[i] as ScoutItem);
    const strongest = strongestItem(cited);
    if (!strongest || trends.some((x) => x.title.toLowerCase() === t.title.trim().toLowerCase())) continue;
    trends.push({
      title: clip(t.title, 200),
      description: clip(t.description, 1000),
      insight: clip(t.insight, 500),
      itemIndexes,
      velocity: velocityOf(
        cited.map((c) => c.publishedAt),
        now,
      ),
      source: strongest.sourceName,
      article: strongest.title,
      date:
        cited.map((c) => c.publishedAt).sort((a, b) => Date.parse(b) - Date.parse(a))[0] ??
        strongest.publishedAt,
      score: trendScore(cited),
    });
  }
  return advance(state, { phase: 'pains', trends }, `extracted ${trends.length} trends`);
}

async function painsStep(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Promise<ScoutOutcome> {
  const discussions = state.items.flatMap((item, i) => (item.kind === 'discussion' ? [i] : []));
  const articles = state.items.flatMap((item, i) => (item.kind === 'article' ? [i] : []));
  const system = `${intro(input, state, deps)}\n\nExtract the customer pains the items reveal (at most 12), mostly from the discussions: a theme, a severity (critical, high, medium, low), a description, and the indexes of the items that voice the pain.`;
  const user = `# Discussions\n${discussions.length ? renderItems(state.items, discussions) : '(none)'}\n\n# Articles\n${articles.length ? renderItems(state.items, articles) : '(none)'}`;
  const answer = (
    await deps.llm.complete({ task: SCOUT_TASKS.pains, system, user, schema: PainsAnswer, temperature: 0.3 })
  ).value;
  const pains: Pain[] = [];
  for (const p of answer.pains) {
    const itemIndexes = validIndexes(p.itemIndexes, state.items.length);
    if (itemIndexes.length === 0) continue;
    pains.push({
      theme: clip(p.theme, 200),
      severity: p.severity,
      description: clip(p.description, 1000),
      itemIndexes,
    });
  }
  return advance(state, { phase: 'clusters', pains }, `extracted ${pains.length} pains`);
}

/** Builds clusters from the model's grouping: each pain in its first cluster; ungrouped pains alone. */
function buildClusters(
  groups: readonly { theme: string; description: string; painIndexes: number[] }[],
  pains: readonly Pain[],
): Cluster[] {
  const taken = new Set<number>();
  const out: { theme: string; description: string; painIndexes: number[] }[] = [];
  for (const g of groups) {
    const painIndexes = validIndexes(g.painIndexes, pains.length).filter((i) => !taken.has(i));
    if (painIndexes.length === 0) continue;
    painIndexes.forEach((i) => taken.add(i));
    out.push({ theme: clip(g.theme, 200), description: clip(g.description, 1000), painIndexes });
  }
  pains.forEach((p, i) => {
    if (!taken.has(i)) out.push({ theme: p.theme, description: p.description, painIndexes: [i] });
  });
  return out.map((c) => {
    const members = c.painIndexes.map((i) => pains[i] as Pain);
    return {
      ...c,
      mentions: new Set(members.flatMap((p) => p.itemIndexes)).size,
      intensity: intensityOf(members.map((p) => ({ severity: p.severity, items: p.itemIndexes.length }))),
    };
  });
}

async function clustersStep(
  input: ScoutJobInput,
  state: ScoutState,
  deps: PipelineDeps,
): Promise<ScoutOutcome> {
  if (state.pains.length === 0) return advance(state, { phase: 'gaps', clusters: [] }, 'no pains to cluster');
  const system = `${intro(input, state, deps)}\n\nGroup the pains into clusters of the same underlying problem (at most 8): a theme, a description, and the pain indexes of each cluster. Every pain belongs to one cluster.`;
  const user = `# Pains\n${state.pains
    .map(
      (p, i) =>
        `P${i} ${p.theme} (${p.severity}, ${p.itemIndexes.length} items) — ${clip(p.description, 240)}`,
    )
    .join('\n')}`;
  const answer = (
    await deps.llm.complete({
      task: SCOUT_TASKS.clusters,
      system,
      user,
      schema: ClustersAnswer,
      temperature: 0.2,
    })
  ).value;
  const clusters = buildClusters(answer.clusters, state.pains);
  return advance(
    state,
    { phase: 'gaps', clusters },
    `grouped ${state.pains.length} pains into ${clusters.length} clusters`,
  );
}

async function gapsStep(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Promise<ScoutOutcome> {
  if (state.trends.length === 0 || state.clusters.length === 0)
    return advance(state, { phase: 'brief', gaps: [] }, 'no gaps (no trends or no pains)');
  const system = `${intro(input, state, deps)}\n\nFind market gaps (at most 8): product opportunities where a trend makes it newly possible to relieve pain clusters. For each, a title, the index of the trend and the indexes of the clusters it addresses.`;
  const user = `# Trends\n${renderTrends(state.trends)}\n\n# Pain clusters\n${renderClusters(state.clusters)}`;
  const answer = (
    await deps.llm.complete({ task: SCOUT_TASKS.gaps, system, user, schema: GapsAnswer, temperature: 0.4 })
  ).value;
  const gaps: GapItem[] = [];
  for (const g of answer.gaps) {
    const trend = Number.isInteger(g.trendIndex) ? state.trends[g.trendIndex] : undefined;
    const clusters = validIndexes(g.clusterIndexes, state.clusters.length).map(
      (i) => state.clusters[i] as Cluster,
    );
    const title = clip(g.title, 300);
    if (!trend || clusters.length === 0 || gaps.some((x) => x.title.toLowerCase() === title.toLowerCase()))
      continue;
    gaps.push({
      title,
      trend_signal: {
        article: trend.article,
        source: trend.source,
        score: trend.score,
        insight: trend.insight,
      },
      pain_signals: clusters.map((c) => ({
        theme: c.theme,
        severity: c.intensity,
        signal_count: c.mentions,
        description: c.description,
      })),
    });
  }
  return advance(state, { phase: 'brief', gaps }, `found ${gaps.length} gaps`);
}

function stats(input: ScoutJobInput, state: ScoutState, keywords: number): ScoutStats {
  return {
    sources: state.sources.length || input.sources.length,
    sourcesFailed: state.sources.filter((s) => s.status === 'failed').length,
    itemsFetched: state.fetched,
    newItems: state.newItems ?? state.fetched,
    analysed: state.items.length,
    dropped: state.dropped,
    trends: state.trends.length,
    pains: state.pains.length,
    painClusters: state.clusters.length,
    gaps: state.gaps.length,
    keywords,
  };
}

function topArticles(state: ScoutState): ScanBrief['top_articles'] {
  const best = new Map<number, number>();
  for (const t of state.trends)
    for (const i of t.itemIndexes)
      if (state.items[i]?.kind === 'article') best.set(i, Math.max(best.get(i) ?? 0, t.score));
  return [...best.entries()]
    .map(([i, score]) => ({ item: state.items[i] as ScoutItem, score }))
    .sort((a, b) => b.score - a.score || Date.parse(b.item.publishedAt) - Date.parse(a.item.publishedAt))
    .slice(0, TOP_ARTICLES)
    .map(({ item, score }) => ({
      title: item.title,
      url: item.url,
      source: item.sourceName,
      published_at: item.publishedAt,
      score,
    }));
}

function finish(
  input: ScoutJobInput,
  state: ScoutState,
  deps: PipelineDeps,
  written: { overview: string; takeaway: string; narratives: ScanBrief['narratives'] },
  label: string,
): ScoutOutcome {
  const generatedAt = scanTime(state, deps).toISOString();
  const keywords = keywordCounts(state.items.flatMap((i) => [i.title, i.summary]));
  const painMentions = state.clusters.reduce((n, c) => n + c.mentions, 0);
  const s = stats(input, state, keywords.length);
  const brief: ScanBrief = {
    date: generatedAt.slice(0, 10),
    overview: written.overview,
    takeaway: written.takeaway,
    stats: {
      sources: s.sources,
      sources_failed: s.sourcesFailed,
      items_analysed: s.analysed,
      new_items: s.newItems,
      articles: state.items.filter((i) => i.kind === 'article').length,
      discussions: state.items.filter((i) => i.kind === 'discussion').length,
      trends: s.trends,
      pain_clusters: s.painClusters,
      gaps: s.gaps,
    },
    top_articles: topArticles(state),
    sector_heatmap: sectorHeatmap(
      {
        sector: input.sector,
        gaps_count: state.gaps.length,
        pain_mentions: painMentions,
        top_keywords: keywords.slice(0, HEATMAP_KEYWORDS).map((k) => k.keyword),
      },
      input.peers,
    ),
    narratives: written.narratives,
    cross_signals: crossSignals(keywords, input.peers),
  };
  const result: ScoutResult = {
    report: {
      generatedAt,
      sectors: [
        {
          sector: input.sector,
          gaps: state.gaps,
          painClusters: state.clusters.map((c) => ({
            theme: c.theme,
            description: c.description,
            mentions: c.mentions,
            intensity: c.intensity,
          })),
          // Newest first, as the Data API serves them (stable: ties keep the extraction order).
          trends: [...state.trends]
            .sort((a, b) => Date.parse(b.date) - Date.parse(a.date))
            .map((t) => ({
              title: t.title,
              description: t.description,
              velocity: t.velocity,
              source: t.source,
              date: t.date,
            })),
          keywords,
        },
      ],
      brief,
    },
    stats: s,
    sources: state.sources,
  };
  return { kind: 'done', result, label };
}

async function briefStep(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Promise<ScoutOutcome> {
  const system = `${intro(input, state, deps)}\n\nWrite the daily brief of this scan: an overview (3-5 sentences), one takeaway for founders, and up to 5 narratives — story lines running through several trends, each with a title, a summary and the indexes of its trends.`;
  const user = [
    `# Trends\n${state.trends.length ? renderTrends(state.trends) : '(none)'}`,
    `# Pain clusters\n${state.clusters.length ? renderClusters(state.clusters) : '(none)'}`,
    `# Gaps\n${state.gaps.length ? state.gaps.map((g) => `- ${g.title}`).join('\n') : '(none)'}`,
  ].join('\n\n');
  const answer = (
    await deps.llm.complete({ task: SCOUT_TASKS.brief, system, user, schema: BriefAnswer, temperature: 0.5 })
  ).value;
  const narratives = answer.narratives.map((n) => ({
    title: clip(n.title, 200),
    summary: clip(n.summary, 1000),
    trends: validIndexes(n.trendIndexes, state.trends.length).map((i) => (state.trends[i] as Trend).title),
  }));
  return finish(
    input,
    state,
    deps,
    { overview: answer.overview, takeaway: answer.takeaway, narratives },
    `wrote the brief of ${state.items.length} items`,
  );
}

/**
 * scout (issue 7, README "Scout pipeline"): step 0 fetches and normalises the sector's sources
 * ({@link fetchSources}); market-intel stores the items and hands back the stored window; then one
 * LLM call per step — trends (from articles), pains (from discussions and articles), clusters of
 * pains, gaps (trends crossed with clusters), and the brief, whose keywords, stats, top articles,
 * heatmap and cross signals are computed. The model cites items, pains, trends and clusters by index;
 * provenance (sources, dates), velocities, scores, mentions and intensities are computed from the
 * cited items. An empty window skips the LLM steps. 6 steps.
 */
export const scoutPipeline: Pipeline<ScoutJobInput, ScoutState, ScoutResult> = {
  kind: 'scout',
  input: ScoutJobInput,
  state: ScoutState,
  result: ScoutResult,
  etaMinutes: 5,
  init: () => initialState(),
  async step(input, state, deps) {
    if (state.phase !== 'fetch' && state.items.length === 0)
      return finish(
        input,
        state,
        deps,
        {
          overview: `No items of the ${input.sector} sector in the analysed window.`,
          takeaway: 'Nothing to report.',
          narratives: [],
        },
        'no items to analyse',
      );
    switch (state.phase) {
      case 'fetch':
        return fetchStep(input, state, deps);
      case 'trends':
        return trendsStep(input, state, deps);
      case 'pains':
        return painsStep(input, state, deps);
      case 'clusters':
        return clustersStep(input, state, deps);
      case 'gaps':
        return gapsStep(input, state, deps);
      case 'brief':
        return briefStep(input, state, deps);
    }
  },
};
