import { Router, type RequestHandler } from 'express';
import { validate, validated } from '@repo/service-kit';
import type { z } from 'zod';
import type { ResourceDiscovery } from '@repo/x402-core';
import { DATA_PRICES, type PaidRoute } from '../../domain/prices';
import type { ScoutService } from '../../domain/scout';
import { DISCOVERY } from './discovery';
import { KeywordsQuery, NetworkOnlyQuery, SectorLimitQuery, TrendsQuery } from './query';

/**
 * Builds the x402 payment middleware of one paid route (answers 402 until paid, replays reuse), with
 * its discovery metadata (README, "Discovery").
 */
export type PaymentGate = (route: PaidRoute, discovery: ResourceDiscovery) => RequestHandler;

/**
 * The paid Data API under `/api/v1` (market-intel spec, "Data API"). Each route validates its query
 * first, so an out-of-range parameter is a 400 that asks for and consumes no payment, then passes
 * the payment gate, then answers from the stored reports.
 */
export function dataApiRouter(deps: { scout: ScoutService; pay: PaymentGate }): Router {
  const router = Router();
  const { scout, pay } = deps;

  router.get(
    '/scout/gaps',
    validate({ query: SectorLimitQuery }),
    pay(DATA_PRICES.gaps, DISCOVERY.gaps),
    async (_req, res) => {
      const { sector, limit } = validated<z.infer<typeof SectorLimitQuery>>(res.locals).query;
      res.json(await scout.gaps(sector, limit));
    },
  );

  router.get(
    '/scout/pain-clusters',
    validate({ query: SectorLimitQuery }),
    pay(DATA_PRICES.painClusters, DISCOVERY.painClusters),
    async (_req, res) => {
      const { sector, limit } = validated<z.infer<typeof SectorLimitQuery>>(res.locals).query;
      res.json(await scout.painClusters(sector, limit));
    },
  );

  router.get(
    '/scout/trends',
    validate({ query: TrendsQuery }),
    pay(DATA_PRICES.trends, DISCOVERY.trends),
    async (_req, res) => {
      const { sector, days, limit } = validated<z.infer<typeof TrendsQuery>>(res.locals).query;
      res.json(await scout.trends(sector, days, limit));
    },
  );

  router.get(
    '/scout/keywords',
    validate({ query: KeywordsQuery }),
    pay(DATA_PRICES.keywords, DISCOVERY.keywords),
    async (_req, res) => {
      const { sector, limit } = validated<z.infer<typeof KeywordsQuery>>(res.locals).query;
      res.json(await scout.keywords(sector, limit));
    },
  );

  // No payment is asked for a brief that does not exist: 404 comes before the 402.
  router.get(
    '/scout/brief',
    validate({ query: NetworkOnlyQuery }),
    async (_req, _res, next) => {
      await scout.assertBriefExists();
      next();
    },
    pay(DATA_PRICES.brief, DISCOVERY.brief),
    async (_req, res) => {
      res.json(await scout.brief());
    },
  );

  return router;
}
