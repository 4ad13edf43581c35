import { z } from 'zod';
import { GapItem, Severity } from '@repo/schemas';
import { DroppedItems, ScoutItem, SourceReport, type ScoutResult } from '@repo/compute';
import { advanceOver, PROGRESS_FIELDS } from '../phased';
import type { PipelineDeps, StepOutcome } from '../types';

/** Steps of a scan with items (README, "Scout pipeline"): fetch, trends, pains, clusters, gaps, brief. */
export const SCOUT_STEP_COUNT = 6;

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
 * The scan's state between steps (README, "Scout pipeline"). After step 0 it holds this scan's
 * normalised `items`, the source reports, `fetched` (items kept from the fetch) and `dropped`;
 * market-intel then replaces `items` by the sector's stored window and adds `newItems` (the scout
 * contract in @repo/compute); the analysis steps refer to `items` by index, so the window must not
 * change after step 0.
 */
export const ScoutState = z.strictObject({
  phase: z.enum(['fetch', 'trends', 'pains', 'clusters', 'gaps', 'brief']),
  /** When step 0 fetched the sources (ISO): the report's `generatedAt`. */
  fetchedAt: z.iso.datetime({ offset: true }).nullable(),
  items: z.array(ScoutItem),
  sources: z.array(SourceReport),
  /** Items kept from this scan's fetch (before market-intel's window replaced `items`). */
  fetched: z.number().int().nonnegative(),
  dropped: DroppedItems,
  /** Set by market-intel after step 0: how many of this scan's items were new to the sector. */
  newItems: z.number().int().nonnegative().optional(),
  trends: z.array(Trend),
  pains: z.array(Pain),
  clusters: z.array(Cluster),
  gaps: z.array(GapItem),
  ...PROGRESS_FIELDS,
});
export type ScoutState = z.infer<typeof ScoutState>;
/**
 * A trend kept in the state: the model's title, description, insight and cited item indexes, with the
 * computed velocity, provenance (strongest item's source and title, newest cited date) and score.
 */
export type Trend = z.infer<typeof Trend>;
/** A pain kept in the state: theme, severity, description and the indexes of the items voicing it. */
export type Pain = z.infer<typeof Pain>;
/** A pain cluster kept in the state: its pains by index, with the computed mentions and intensity. */
export type Cluster = z.infer<typeof Cluster>;
/** What a scout step returns: the next {@link ScoutState}, or the `ScoutResult` after the brief. */
export type ScoutOutcome = StepOutcome<ScoutState, ScoutResult>;

/**
 * A `continue` outcome of a scout step (see `advanceOver`): `state` with `patch` applied, one more
 * step done, the progress over {@link SCOUT_STEP_COUNT} steps.
 */
export const advance = advanceOver<ScoutState, ScoutResult>(() => SCOUT_STEP_COUNT);

/**
 * The scan's time: when step 0 fetched the sources, or now before that.
 * @param state the state @param deps for the clock
 */
export function scanTime(state: ScoutState, deps: PipelineDeps): Date {
  return state.fetchedAt ? new Date(state.fetchedAt) : deps.now();
}
