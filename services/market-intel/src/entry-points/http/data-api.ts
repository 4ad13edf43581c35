import type { RequestHandler } from 'express';
import { contractRouter, errorResponse, type ContractRouter } from '@repo/service-kit';
import {
  BriefResponse,
  GapsResponse,
  KeywordsResponse,
  PainClustersResponse,
  TrendsResponse,
} from '@repo/schemas';
import type { ResourceDiscovery } from '@repo/x402-core';
import { DATA_PRICES, type PaidRoute } from '../../domain/prices';
import type { ScoutService } from '../../domain/scout';
import { paidDataParts, PAYMENT_REQUEST_HEADERS } from './contract-parts';
import { DISCOVERY } from './discovery';
import { KeywordsQuery, NetworkOnlyQuery, SectorLimitQuery, TrendsQuery } from '../../schemas';

/**
 * Builds the x402 payment middleware of one paid route (answers 402 until paid, replays reuse), with
 * its discovery metadata (docs/payments.md, "Discovery").
 */
export type PaymentGate = (route: PaidRoute, discovery: ResourceDiscovery) => RequestHandler;

/**
 * The paid Data API (services/market-intel/README.md, "Endpoints" and "Paying, in three steps"), each
 * route declared with its contract; mount the router at the root (its paths are absolute). Each route
 * validates its query first, so an out-of-range parameter is a 400 that asks for and consumes no
 * payment, then passes the payment gate, then answers from the stored reports. Prices are in
 * `DATA_PRICES` (atomic USDC units).
 */
export function dataApiRouter(deps: { scout: ScoutService; pay: PaymentGate }): ContractRouter {
  const { scout, pay } = deps;
  return (
    contractRouter()
      .route(
        {
          method: 'get',
          path: '/api/v1/scout/gaps',
          operationId: 'getGaps',
          ...paidDataParts(DATA_PRICES.gaps, GapsResponse),
          request: { query: SectorLimitQuery, headers: PAYMENT_REQUEST_HEADERS },
        },
        pay(DATA_PRICES.gaps, DISCOVERY.gaps),
        async (_req, res) => {
          const { sector, limit } = res.locals.valid.query;
          res.json(await scout.gaps(sector, limit));
        },
      )
      .route(
        {
          method: 'get',
          path: '/api/v1/scout/pain-clusters',
          operationId: 'getPainClusters',
          ...paidDataParts(DATA_PRICES.painClusters, PainClustersResponse),
          request: { query: SectorLimitQuery, headers: PAYMENT_REQUEST_HEADERS },
        },
        pay(DATA_PRICES.painClusters, DISCOVERY.painClusters),
        async (_req, res) => {
          const { sector, limit } = res.locals.valid.query;
          res.json(await scout.painClusters(sector, limit));
        },
      )
      .route(
        {
          method: 'get',
          path: '/api/v1/scout/trends',
          operationId: 'getTrends',
          ...paidDataParts(DATA_PRICES.trends, TrendsResponse),
          request: { query: TrendsQuery, headers: PAYMENT_REQUEST_HEADERS },
        },
        pay(DATA_PRICES.trends, DISCOVERY.trends),
        async (_req, res) => {
          const { sector, days, limit } = res.locals.valid.query;
          res.json(await scout.trends(sector, days, limit));
        },
      )
      .route(
        {
          method: 'get',
          path: '/api/v1/scout/keywords',
          operationId: 'getKeywords',
          ...paidDataParts(DATA_PRICES.keywords, KeywordsResponse),
          request: { query: KeywordsQuery, headers: PAYMENT_REQUEST_HEADERS },
        },
        pay(DATA_PRICES.keywords, DISCOVERY.keywords),
        async (_req, res) => {
          const { sector, limit } = res.locals.valid.query;
          res.json(await scout.keywords(sector, limit));
        },
      )
      // No payment is asked for a brief that does not exist: 404 comes before the 402.
      .route(
        {
          method: 'get',
          path: '/api/v1/scout/brief',
          operationId: 'getBrief',
          ...paidDataParts(DATA_PRICES.brief, BriefResponse, {
            '404': errorResponse('no completed brief exists (answered before any payment is asked)'),
          }),
          request: { query: NetworkOnlyQuery, headers: PAYMENT_REQUEST_HEADERS },
        },
        async (_req, _res, next) => {
          await scout.assertBriefExists();
          next();
        },
        pay(DATA_PRICES.brief, DISCOVERY.brief),
        async (_req, res) => {
          res.json(await scout.brief());
        },
      )
  );
}
