// What the model is asked for: it cites items, pains, trends and clusters by index, never by content.
import { z } from 'zod';
import { Severity } from '@repo/schemas';
import { upTo } from '../render';

const Indexes = z.array(z.number()).describe('indexes as shown in brackets, e.g. [3]');

/** Trends step answer (README, "Scout pipeline", step 1): at most 8 trends, each citing items by index. */
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
/** Pains step answer (README, "Scout pipeline", step 2): at most 12 pains, each citing items by index. */
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
/** Clusters step answer (README, "Scout pipeline", step 3): at most 8 clusters, each citing pains by index. */
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
/**
 * Gaps step answer (README, "Scout pipeline", step 4): at most 8 gaps, each a trend (by index) crossed
 * with the clusters (by index) it relieves.
 */
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
/**
 * Brief step answer (README, "Scout pipeline", step 5): overview, takeaway and at most 5 narratives,
 * each citing trends by index.
 */
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
