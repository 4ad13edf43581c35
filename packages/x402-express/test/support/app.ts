import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type Express } from 'express';
import { AppError, errorHandler, notFoundHandler } from '@repo/errors';
import { requirePayment, type PaymentGateway, type RequirePaymentOptions } from '../../src/index';

/** Counts of handler runs per route, to prove a handler ran once. */
export interface HandlerRuns {
  gaps: number;
  keywords: number;
  flaky: number;
}

/**
 * A tiny service with three paid routes, in the order a real route uses: validate query → pay → handle.
 * - GET /api/v1/scout/gaps?limit=1..100 (0.10 USDC): answers a body with a random nonce;
 * - GET /api/v1/scout/keywords (0.05 USDC);
 * - GET /api/v1/scout/flaky (0.10 USDC): 500 while `flaky.failing`, then 200.
 */
export function buildPaidApp(
  gateway: PaymentGateway & Pick<RequirePaymentOptions, 'deferVerifiedMark'>,
  runs: HandlerRuns,
  flaky = { failing: false },
): Express {
  const app = express();
  app.get(
    '/api/v1/scout/gaps',
    (req, _res, next) => {
      const limit = req.query.limit === undefined ? 20 : Number(req.query.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
        next(new AppError('invalid_request', 'limit must be an integer from 1 to 100'));
        return;
      }
      next();
    },
    requirePayment({ ...gateway, amountAtomic: 100_000n, description: 'Market gaps' }),
    (_req, res) => {
      runs.gaps += 1;
      res.json({
        gaps: [{ title: 'Agents need receipts', score: 0.93 }],
        count: 1,
        nonce: Math.random(),
        payer: res.locals.x402Payment?.payer,
      });
    },
  );
  app.get(
    '/api/v1/scout/keywords',
    requirePayment({ ...gateway, amountAtomic: 50_000n, description: 'Keywords' }),
    (_req, res) => {
      runs.keywords += 1;
      res.json([{ keyword: 'x402', count: 3 }]);
    },
  );
  app.get(
    '/api/v1/scout/flaky',
    requirePayment({ ...gateway, amountAtomic: 100_000n, description: 'Flaky' }),
    (_req, res) => {
      runs.flaky += 1;
      if (flaky.failing) throw new Error('database down');
      res.json({ ok: true, run: runs.flaky });
    },
  );
  app.use(notFoundHandler);
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  return app;
}

/** Listens on a free port. */
export async function listen(app: Express): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
