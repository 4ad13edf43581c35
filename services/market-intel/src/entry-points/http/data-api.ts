import { contractRouter, errorResponse, type ContractRouter } from '@repo/service-kit';
import { BriefResponse } from '@repo/schemas';
import type { PaymentGate } from '../../adapters/x402';
import { DATA_PRICES } from '../../domain/prices';
import type { ScoutService } from '../../domain/scout';
import { paidDataParts, PAYMENT_REQUEST_HEADERS } from './contract-parts';
import { DISCOVERY } from './discovery';
import { SCOUT_LISTS } from './scout-lists';
import { NetworkOnlyQuery } from '../../schemas';

/**
 * The paid Data API (services/market-intel/README.md, "Endpoints" and "Paying, in three steps"), each
 * route declared with its contract; mount the router at the root (its paths are absolute). Each route
 * validates its query first, so an out-of-range parameter is a 400 that asks for and consumes no
 * payment, then passes the payment gate, then answers from the stored reports: the scout lists of
 * `SCOUT_LISTS`, then the brief. Prices are in `DATA_PRICES` (atomic USDC units).
 */
export function dataApiRouter(deps: { scout: ScoutService; pay: PaymentGate }): ContractRouter {
  const { scout, pay } = deps;
  const router = contractRouter();
  for (const list of SCOUT_LISTS) {
    const price = DATA_PRICES[list.key];
    router.route(
      {
        method: 'get',
        path: list.path,
        operationId: list.operationId,
        ...paidDataParts(price, list.response),
        request: { query: list.query, headers: PAYMENT_REQUEST_HEADERS },
      },
      pay(price, DISCOVERY[list.key]),
      async (_req, res) => {
        res.json(await list.answer(scout, res.locals.valid.query));
      },
    );
  }
  // No payment is asked for a brief that does not exist: 404 comes before the 402.
  return router.route(
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
  );
}
