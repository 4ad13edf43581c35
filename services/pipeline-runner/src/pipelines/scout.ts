import { z } from 'zod';
import { ScoutItem, ScoutJobInput, ScoutResult, SourceReport } from '@repo/schemas';
import type { Pipeline } from './types';

/** The scan's state between steps (see the scout.ts contract in @repo/schemas for the hand-over after step 0). */
export const ScoutState = z.strictObject({
  phase: z.enum(['fetch', 'trends', 'pains', 'clusters', 'gaps', 'brief']),
  /** When step 0 fetched the sources (ISO): the report's `generatedAt`. */
  fetchedAt: z.iso.datetime({ offset: true }).nullable(),
  items: z.array(ScoutItem),
  sources: z.array(SourceReport),
  /** Set by market-intel after step 0: how many of this scan's items were new to the sector. */
  newItems: z.number().int().nonnegative().optional(),
  stepsDone: z.number().int().nonnegative(),
  progressPct: z.number().int().min(0).max(99),
});
/** Inferred type of {@link ScoutState}. */
export type ScoutState = z.infer<typeof ScoutState>;

/** scout: fetches a sector's sources and analyses them into a scan report (work in progress). */
export const scoutPipeline: Pipeline<ScoutJobInput, ScoutState, ScoutResult> = {
  kind: 'scout',
  input: ScoutJobInput,
  state: ScoutState,
  result: ScoutResult,
  etaMinutes: 5,
  init: () => ({ phase: 'fetch', fetchedAt: null, items: [], sources: [], stepsDone: 0, progressPct: 0 }),
  step() {
    return Promise.reject(new Error('the scout pipeline is not implemented yet'));
  },
};
