import type { GapItem } from '@repo/schemas';
import type { ScanBrief, ScoutItem, ScoutJobInput, ScoutResult, ScoutStats } from '@repo/compute';
import {
  crossSignals,
  intensityOf,
  sectorHeatmap,
  strongestItem,
  trendScore,
  velocityOf,
} from '../../scout/analysis';
import { fetchSources } from '../../scout/fetch';
import { keywordCounts } from '../../scout/keywords';
import { scoutSettings } from '../../scout/settings';
import { clip } from '../render';
import { askModel } from '../ask-model';
import type { PhaseStep } from '../phased';
import type { PipelineDeps } from '../types';
import { SCOUT_TASKS, briefPrompt, clustersPrompt, gapsPrompt, painsPrompt, trendsPrompt } from './prompts';
import { BriefAnswer, ClustersAnswer, GapsAnswer, PainsAnswer, TrendsAnswer } from './schemas';
import {
  advance,
  scanTime,
  type Cluster,
  type Pain,
  type ScoutOutcome,
  type ScoutState,
  type Trend,
} from './state';

/** One step of the scan: the step of its state's phase (`phasedPipeline`), never mutating the state. */
type Step = PhaseStep<ScoutJobInput, ScoutState, ScoutResult>;

/** Articles shown in the brief's `top_articles` at most (README, "Scout pipeline"). */
export const TOP_ARTICLES = 5;
/** Keywords of the sector shown in the heatmap. */
const HEATMAP_KEYWORDS = 5;

/** Valid, distinct integer indexes below `size` (and in `allowed` when given), in the model's order. */
function validIndexes(raw: readonly number[], size: number, allowed?: ReadonlySet<number>): number[] {
  const out: number[] = [];
  for (const n of raw)
    if (Number.isInteger(n) && n >= 0 && n < size && (!allowed || allowed.has(n)) && !out.includes(n))
      out.push(n);
  return out;
}

/**
 * Phase `fetch`, step 0 (README, "Scout pipeline": fetching, parsing, normalisation): fetches every
 * source ({@link fetchSources}); a failing source never fails the step: it is logged and reported in
 * the state's `sources`. Moves to `trends`.
 */
export const fetchStep: Step = async (input, state, deps) => {
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
};

/**
 * Phase `trends`, step 1 (README, "Scout pipeline"): trends from the articles (from every item when
 * there is no article); a trend without a valid cited item, or repeating a title, is dropped; its
 * velocity, provenance and score are computed from the cited items. Moves to `pains`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const trendsStep: Step = async (input, state, deps) => {
  const articles = state.items.flatMap((item, i) => (item.kind === 'article' ? [i] : []));
  // Without articles the discussions are the only trend material.
  const shown = articles.length ? articles : state.items.map((_, i) => i);
  const prompt = trendsPrompt(input, state, deps, shown);
  const answer = await askModel(deps, SCOUT_TASKS.trends, prompt, TrendsAnswer, 0.3);
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
};

/**
 * Phase `pains`, step 2 (README, "Scout pipeline"): pains from the discussions and articles; a pain
 * without a valid cited item is dropped. Moves to `clusters`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const painsStep: Step = async (input, state, deps) => {
  const answer = await askModel(deps, SCOUT_TASKS.pains, painsPrompt(input, state, deps), PainsAnswer, 0.3);
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
};

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

/**
 * Phase `clusters`, step 3 (README, "Scout pipeline"): the pains grouped into clusters (each pain in
 * its first cluster, a pain left out alone) with computed mentions and intensity; without pains, no
 * LLM call. Moves to `gaps`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const clustersStep: Step = async (input, state, deps) => {
  if (state.pains.length === 0) return advance(state, { phase: 'gaps', clusters: [] }, 'no pains to cluster');
  const prompt = clustersPrompt(input, state, deps);
  const answer = await askModel(deps, SCOUT_TASKS.clusters, prompt, ClustersAnswer, 0.2);
  const clusters = buildClusters(answer.clusters, state.pains);
  return advance(
    state,
    { phase: 'gaps', clusters },
    `grouped ${state.pains.length} pains into ${clusters.length} clusters`,
  );
};

/**
 * Phase `gaps`, step 4 (README, "Scout pipeline"): gaps crossing a trend with the clusters it
 * relieves (a gap without a valid trend or cluster, or repeating a title, is dropped); without trends
 * or clusters, no LLM call. Moves to `brief`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const gapsStep: Step = async (input, state, deps) => {
  if (state.trends.length === 0 || state.clusters.length === 0)
    return advance(state, { phase: 'brief', gaps: [] }, 'no gaps (no trends or no pains)');
  const answer = await askModel(deps, SCOUT_TASKS.gaps, gapsPrompt(input, state, deps), GapsAnswer, 0.4);
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
};

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

/**
 * The `done` outcome of a scan (README, "Scout pipeline", what is computed): the report of the
 * sector (gaps, clusters, trends newest first, keywords) and its brief (the written parts plus the
 * computed stats, top articles, heatmap and cross signals), the `ScoutStats` and the source reports.
 * @param input the job input @param state the state after the last analysis step @param deps for the clock
 * @param written the brief's overview, takeaway and narratives @param label the step's label
 */
export function finish(
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

/**
 * Phase `brief`, step 5 (README, "Scout pipeline"): the written brief (narratives name their trends
 * by title), then {@link finish}: ends the job with the `ScoutResult`.
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export const briefStep: Step = async (input, state, deps) => {
  const answer = await askModel(deps, SCOUT_TASKS.brief, briefPrompt(input, state, deps), BriefAnswer, 0.5);
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
};
