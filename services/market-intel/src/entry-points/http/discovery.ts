import type { z } from 'zod';
import {
  BriefResponse,
  GapsResponse,
  KeywordsResponse,
  PainClustersResponse,
  toJsonSchema,
  TrendsResponse,
} from '@repo/schemas';
import type { ResourceDiscovery } from '@repo/x402-core';
import {
  ForgeRequest,
  JobAccepted,
  ProveRequest,
  KeywordsQuery,
  NetworkOnlyQuery,
  SectorLimitQuery,
  TrendsQuery,
} from '../../schemas';

const generatedFrom = '2026-11-23T06:00:00.000Z';

function get<Q extends z.ZodType, O extends z.ZodType>(
  query: Q,
  output: O,
  inputExample: z.input<Q>,
  outputExample: z.output<O>,
): ResourceDiscovery {
  return {
    method: 'GET',
    query: toJsonSchema(query, 'input'),
    output: toJsonSchema(output),
    inputExample: inputExample as Record<string, unknown>,
    outputExample,
  };
}

function post<B extends z.ZodType>(body: B, inputExample: z.input<B>): ResourceDiscovery {
  return {
    method: 'POST',
    body: toJsonSchema(body, 'input'),
    output: toJsonSchema(JobAccepted),
    inputExample: inputExample as Record<string, unknown>,
    outputExample: {
      jobId: '5Hb7rWq3xK9mJ2nLpV8sT4yZ6cF1dG3hA',
      status: 'pending',
      statusUrl: '/api/v1/jobs/5Hb7rWq3xK9mJ2nLpV8sT4yZ6cF1dG3hA',
      etaMinutes: 30,
    } satisfies z.output<typeof JobAccepted>,
  };
}

/**
 * x402 discovery metadata of every paid route (docs/payments.md, "Discovery"): the query or body schema and the
 * answer's schema, from the same zod schemas the routes validate with and the OpenAPI document
 * describes, with one example each. Published as each v1 requirement's `outputSchema` and as the
 * `bazaar` extension of `PAYMENT-REQUIRED`.
 */
export const DISCOVERY = {
  gaps: get(
    SectorLimitQuery,
    GapsResponse,
    { sector: 'ai', limit: '1' },
    {
      gaps: [
        {
          title: 'Agents cannot prove what they paid for',
          trend_signal: {
            article: 'Agent payments move on chain',
            source: 'hn',
            score: 0.91,
            insight: 'Per-call payments need receipts',
          },
          pain_signals: [
            { theme: 'receipts', severity: 'high', signal_count: 12, description: 'No proof of payment' },
          ],
        },
      ],
      count: 1,
      generatedFrom,
      sector: 'ai',
    },
  ),
  painClusters: get(
    SectorLimitQuery,
    PainClustersResponse,
    { sector: 'ai', limit: '1' },
    {
      painClusters: [
        { theme: 'receipts', description: 'No proof of payment', mentions: 12, intensity: 'high' },
      ],
      count: 1,
      generatedFrom,
      sector: 'ai',
    },
  ),
  trends: get(
    TrendsQuery,
    TrendsResponse,
    { sector: 'ai', days: '7', limit: '1' },
    {
      trends: [
        { title: 'Agent payments', description: 'x402 adoption grows', velocity: 'rising', source: 'hn' },
      ],
      count: 1,
      days: 7,
      generatedFrom,
      sector: 'ai',
    },
  ),
  keywords: get(
    KeywordsQuery,
    KeywordsResponse,
    { sector: 'ai', limit: '1' },
    { keywords: [{ keyword: 'x402', count: 42 }], count: 1, generatedFrom, sector: 'ai' },
  ),
  brief: get(
    NetworkOnlyQuery,
    BriefResponse,
    {},
    {
      brief: {
        date: '2026-11-23',
        overview: 'Agent payments lead the day',
        takeaway: 'Ship receipts',
        stats: {},
        top_articles: [],
        sector_heatmap: {},
        narratives: [],
        cross_signals: [],
      },
      generatedFrom,
      sectors: ['ai'],
    },
  ),
  forge: post(ForgeRequest, { sectors: ['ai'], context: 'Tools for agents that pay per call' }),
  prove: post(ProveRequest, { idea: 'A receipt service for agent payments on Solana' }),
} as const satisfies Record<string, ResourceDiscovery>;
