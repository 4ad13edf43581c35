import type { z } from 'zod';
import { GapsResponse, KeywordsResponse, PainClustersResponse, TrendsResponse } from '@repo/schemas';
import type { ScoutService } from '../../domain/scout';
import {
  KeywordsArgs,
  KeywordsQuery,
  SectorLimitArgs,
  SectorLimitQuery,
  TrendsArgs,
  TrendsQuery,
} from '../../schemas';

/** The arguments of a scout list's MCP tool once parsed: its query, as `dispatchHttp` sends one. */
type ToolArgs = z.ZodType<Record<string, string | number | undefined>>;

/**
 * One scout list of the paid Data API (services/market-intel/README.md, "Endpoints"; README, "MCP"):
 * the `GET` route that serves a list of the latest reports' items and the MCP tool that stands for
 * it, declared once, so that a list is routed, priced and offered as a tool the same way.
 */
export interface ScoutList<Q extends z.ZodType = z.ZodType, A extends ToolArgs = ToolArgs> {
  /** The list's key in `DATA_PRICES` (its price) and in `DISCOVERY` (its x402 discovery metadata). */
  key: 'gaps' | 'painClusters' | 'trends' | 'keywords';
  path: string;
  operationId: string;
  /** The route's query: its `sector` and integer parameters, digits on the wire. */
  query: Q;
  /** The 200 body, one of the `@repo/schemas` scout list envelopes. */
  response: z.ZodType;
  /**
   * The answer to a parsed query, from the latest reports. A method, so that a list declared with its
   * own query stands in {@link SCOUT_LISTS} beside the others.
   */
  answer(scout: ScoutService, query: z.output<Q>): Promise<unknown>;
  /** The MCP tool: its arguments are the query as JSON values; the price is added to `description`. */
  tool: { name: string; title: string; description: string; args: A };
}

/** A scout list, checked against its own query and arguments (see {@link ScoutList}). */
function scoutList<Q extends z.ZodType, A extends ToolArgs>(list: ScoutList<Q, A>): ScoutList<Q, A> {
  return list;
}

/**
 * The scout lists in the order of the document and of the tool list: gaps, pain clusters, trends,
 * keywords (services/market-intel/README.md, "Endpoints").
 */
export const SCOUT_LISTS: readonly ScoutList[] = [
  scoutList({
    key: 'gaps',
    path: '/api/v1/scout/gaps',
    operationId: 'getGaps',
    query: SectorLimitQuery,
    response: GapsResponse,
    answer: (scout, { sector, limit }) => scout.gaps(sector, limit),
    tool: {
      name: 'scout_gaps',
      title: 'Market gaps',
      description: 'Market gaps from the latest scans: trends crossed with pain signals, scored.',
      args: SectorLimitArgs,
    },
  }),
  scoutList({
    key: 'painClusters',
    path: '/api/v1/scout/pain-clusters',
    operationId: 'getPainClusters',
    query: SectorLimitQuery,
    response: PainClustersResponse,
    answer: (scout, { sector, limit }) => scout.painClusters(sector, limit),
    tool: {
      name: 'scout_pain_clusters',
      title: 'Pain clusters',
      description: 'Clustered pain signals from the latest scans, with severity and sources.',
      args: SectorLimitArgs,
    },
  }),
  scoutList({
    key: 'trends',
    path: '/api/v1/scout/trends',
    operationId: 'getTrends',
    query: TrendsQuery,
    response: TrendsResponse,
    answer: (scout, { sector, days, limit }) => scout.trends(sector, days, limit),
    tool: {
      name: 'scout_trends',
      title: 'Trends',
      description: 'Trends over the last days (1 to 30), with momentum and sources.',
      args: TrendsArgs,
    },
  }),
  scoutList({
    key: 'keywords',
    path: '/api/v1/scout/keywords',
    operationId: 'getKeywords',
    query: KeywordsQuery,
    response: KeywordsResponse,
    answer: (scout, { sector, limit }) => scout.keywords(sector, limit),
    tool: {
      name: 'scout_keywords',
      title: 'Keywords',
      description: 'Keywords with aggregate occurrence counts from the latest scans.',
      args: KeywordsArgs,
    },
  }),
];
