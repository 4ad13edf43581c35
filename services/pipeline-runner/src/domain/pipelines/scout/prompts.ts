import type { ScoutItem, ScoutJobInput } from '@repo/compute';
import { clip, type Prompt } from '../render';
import type { PipelineDeps } from '../types';
import { scanTime, type Cluster, type ScoutState, type Trend } from './state';

/** Task names of the scout LLM calls, one per analysis step (README, "LLM task names"). */
export const SCOUT_TASKS = {
  trends: 'scout_trends',
  pains: 'scout_pains',
  clusters: 'scout_clusters',
  gaps: 'scout_gaps',
  brief: 'scout_brief',
} as const;

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

/**
 * Trends step prompt (README, "Scout pipeline", step 1): the items shown, by index, asking for at most
 * 8 trends citing them.
 * @param input the job input @param state the state (its items) @param deps for the clock
 * @param shown indexes of the items to show (valid indexes into `state.items`)
 */
export function trendsPrompt(
  input: ScoutJobInput,
  state: ScoutState,
  deps: PipelineDeps,
  shown: readonly number[],
): Prompt {
  const system = `${intro(input, state, deps)}\n\nExtract the trends the items show (at most 8): a short title, a description, a one-sentence insight for builders, and the indexes of the items behind each trend. An item may support several trends.`;
  const user = `# Items\n${renderItems(state.items, shown)}`;
  return { system, user };
}

/**
 * Pains step prompt (README, "Scout pipeline", step 2): the discussions, then the articles, by index,
 * asking for at most 12 pains citing them.
 * @param input the job input @param state the state (its items) @param deps for the clock
 */
export function painsPrompt(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Prompt {
  const discussions = state.items.flatMap((item, i) => (item.kind === 'discussion' ? [i] : []));
  const articles = state.items.flatMap((item, i) => (item.kind === 'article' ? [i] : []));
  const system = `${intro(input, state, deps)}\n\nExtract the customer pains the items reveal (at most 12), mostly from the discussions: a theme, a severity (critical, high, medium, low), a description, and the indexes of the items that voice the pain.`;
  const user = `# Discussions\n${discussions.length ? renderItems(state.items, discussions) : '(none)'}\n\n# Articles\n${articles.length ? renderItems(state.items, articles) : '(none)'}`;
  return { system, user };
}

/**
 * Clusters step prompt (README, "Scout pipeline", step 3): the pains as `P<n>`, asking for at most 8
 * clusters of them.
 * @param input the job input @param state the state (its pains) @param deps for the clock
 */
export function clustersPrompt(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Prompt {
  const system = `${intro(input, state, deps)}\n\nGroup the pains into clusters of the same underlying problem (at most 8): a theme, a description, and the pain indexes of each cluster. Every pain belongs to one cluster.`;
  const user = `# Pains\n${state.pains
    .map(
      (p, i) =>
        `P${i} ${p.theme} (${p.severity}, ${p.itemIndexes.length} items) — ${clip(p.description, 240)}`,
    )
    .join('\n')}`;
  return { system, user };
}

/**
 * Gaps step prompt (README, "Scout pipeline", step 4): the trends as `T<n>` and the clusters as
 * `C<n>`, asking for at most 8 gaps crossing them.
 * @param input the job input @param state the state (trends, clusters) @param deps for the clock
 */
export function gapsPrompt(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Prompt {
  const system = `${intro(input, state, deps)}\n\nFind market gaps (at most 8): product opportunities where a trend makes it newly possible to relieve pain clusters. For each, a title, the index of the trend and the indexes of the clusters it addresses.`;
  const user = `# Trends\n${renderTrends(state.trends)}\n\n# Pain clusters\n${renderClusters(state.clusters)}`;
  return { system, user };
}

/**
 * Brief step prompt (README, "Scout pipeline", step 5): trends, clusters and gaps, asking for the
 * overview, the takeaway and at most 5 narratives.
 * @param input the job input @param state the state after the gaps step @param deps for the clock
 */
export function briefPrompt(input: ScoutJobInput, state: ScoutState, deps: PipelineDeps): Prompt {
  const system = `${intro(input, state, deps)}\n\nWrite the daily brief of this scan: an overview (3-5 sentences), one takeaway for founders, and up to 5 narratives — story lines running through several trends, each with a title, a summary and the indexes of its trends.`;
  const user = [
    `# Trends\n${state.trends.length ? renderTrends(state.trends) : '(none)'}`,
    `# Pain clusters\n${state.clusters.length ? renderClusters(state.clusters) : '(none)'}`,
    `# Gaps\n${state.gaps.length ? state.gaps.map((g) => `- ${g.title}`).join('\n') : '(none)'}`,
  ].join('\n\n');
  return { system, user };
}
