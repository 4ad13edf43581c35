import { ScoutJobInput, ScoutResult } from '@repo/compute';
import { phasedPipeline } from '../phased';
import type { Pipeline } from '../types';
import { ScoutState } from './state';
import { briefStep, clustersStep, fetchStep, finish, gapsStep, painsStep, trendsStep } from './steps';

export { BriefAnswer, ClustersAnswer, GapsAnswer, PainsAnswer, TrendsAnswer } from './schemas';
export { SCOUT_STEP_COUNT, ScoutState } from './state';
export { SCOUT_TASKS } from './prompts';
export { TOP_ARTICLES } from './steps';

/**
 * scout (README, "Scout pipeline"): step 0 fetches and normalises the sector's sources
 * (`fetchSources`); market-intel stores the items and hands back the stored window; then one LLM call
 * per step — trends (from articles), pains (from discussions and articles), clusters of pains, gaps
 * (trends crossed with clusters), and the brief, whose keywords, stats, top articles, heatmap and cross
 * signals are computed. The model cites items, pains, trends and clusters by index; provenance
 * (sources, dates), velocities, scores, mentions and intensities are computed from the cited items.
 * An empty window skips the LLM steps. 6 steps (README, "Scout pipeline", the step table): `fetch`
 * (step 0), `trends`, `pains`, `clusters`, `gaps`, `brief` (steps 1–5). `step` runs the step of the
 * state's phase and throws what that step throws (README, "Pipelines", errors).
 */
export const scoutPipeline: Pipeline<ScoutJobInput, ScoutState, ScoutResult> = phasedPipeline({
  kind: 'scout',
  input: ScoutJobInput,
  state: ScoutState,
  result: ScoutResult,
  etaMinutes: 5,
  // before step 0: nothing fetched yet.
  start: {
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
  },
  shortcut: (input, state, deps) =>
    state.phase !== 'fetch' && state.items.length === 0
      ? finish(
          input,
          state,
          deps,
          {
            overview: `No items of the ${input.sector} sector in the analysed window.`,
            takeaway: 'Nothing to report.',
            narratives: [],
          },
          'no items to analyse',
        )
      : undefined,
  steps: {
    fetch: fetchStep,
    trends: trendsStep,
    pains: painsStep,
    clusters: clustersStep,
    gaps: gapsStep,
    brief: briefStep,
  },
});
