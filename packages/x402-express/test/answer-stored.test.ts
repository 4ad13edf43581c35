import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { payUsdc, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { SolanaPaymentVerifier } from '@repo/x402-solana';
import {
  createHotPath,
  requirePayment,
  type HotPath,
  type PaidAnswer,
  type PaymentGateway,
} from '../src/index';

// The onAnswerStored option: requirePayment tells it of each paid answer the ledger stored (or
// replayed), with the bytes it then sends; the hot path, given it, replays that answer from memory.
let localnet: Localnet;
let db: PgSqlClient;
let server: Server;
let base: string;
let hot: HotPath;
let told: PaidAnswer[] = [];
/** Whether the response had sent its headers when the option was told, per answer told. */
let sentWhenTold: boolean[] = [];
let runs = 0;

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  db = new PgSqlClient();
  const info = localnet.networks.solana;
  hot = createHotPath({ routes: { '/hot': 'GET /hot' } });
  const gateway: PaymentGateway = {
    ledger: new PrismaPaymentLedger(db),
    verifiers: {
      solana: new SolanaPaymentVerifier(
        { network: 'solana', rpcUrl: info.rpcUrl, asset: info.mint, payTo: info.merchantTokenAccount },
        { fetchAttempts: 2, fetchDelayMs: 50 },
      ),
    },
    onAnswerStored: (answer, res) => {
      told.push(answer);
      sentWhenTold.push(res.headersSent);
      hot.onAnswerStored(answer, res);
    },
  };
  const app = express();
  const handler = (_req: express.Request, res: express.Response): void => {
    runs += 1;
    res.json({ run: runs, nonce: Math.random() });
  };
  app.get('/hot', requirePayment({ ...gateway, amountAtomic: 100_000n, description: 'Hot' }), handler);
  app.get('/cold', requirePayment({ ...gateway, amountAtomic: 100_000n, description: 'Cold' }), handler);
  app.get(
    '/failing',
    requirePayment({ ...gateway, amountAtomic: 100_000n, description: 'Failing' }),
    (_req, res) => {
      res.status(500).json({ error: 'down' });
    },
  );
  app.use(notFoundHandler);
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  server = createServer(hot.wrap(app));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await db?.close();
  await localnet?.close();
});

beforeEach(() => {
  told = [];
  sentWhenTold = [];
});

const get = (path: string, header?: string) =>
  fetch(`${base}${path}`, header === undefined ? {} : { headers: { 'X-PAYMENT': header } });

describe('onAnswerStored', () => {
  it('When a paid answer is stored, then the option is told once of its status, stored headers and bytes, before they are sent', async () => {
    const header = encodePaymentHeader('solana', await payUsdc(localnet, 'solana', 100_000n));
    const res = await get('/cold', header);
    const body = Buffer.from(await res.arrayBuffer());
    expect(res.status).toBe(200);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ network: 'solana', status: 200, body });
    expect(told[0]?.headers['content-type']).toBe(res.headers.get('content-type'));
    expect(told[0]?.headers['x-payment-response']).toBe(res.headers.get('x-payment-response'));
    expect(told[0]?.headers).not.toHaveProperty('x-request-id');
    expect(told[0]?.headers).not.toHaveProperty('date');
    expect(sentWhenTold).toEqual([false]);
  });

  it('When the ledger replays a stored answer, then the option is told of the replayed bytes too', async () => {
    const header = encodePaymentHeader('solana', await payUsdc(localnet, 'solana', 100_000n));
    const first = Buffer.from(await (await get('/cold', header)).arrayBuffer());
    const again = await get('/cold', header);
    expect(Buffer.from(await again.arrayBuffer())).toEqual(first);
    expect(told.map((answer) => answer.body)).toEqual([first, first]);
  });

  it('When there is no payment, or the handler fails (5xx), then the option is told nothing', async () => {
    expect((await get('/cold')).status).toBe(402);
    const header = encodePaymentHeader('solana', await payUsdc(localnet, 'solana', 100_000n));
    expect((await get('/failing', header)).status).toBe(500);
    expect(told).toEqual([]);
  });

  it('When the hot path is given the option, then it replays the stored answer from memory without running the handler again', async () => {
    const header = encodePaymentHeader('solana', await payUsdc(localnet, 'solana', 100_000n));
    const before = hot.size().replays;
    const first = await get('/hot', header);
    const bytes = await first.text();
    const runsAfterFirst = runs;
    const again = await get('/hot', header);
    expect(await again.text()).toBe(bytes);
    expect(again.headers.get('x-payment-response')).toBe(first.headers.get('x-payment-response'));
    expect(runs).toBe(runsAfterFirst);
    expect(hot.size().replays).toBe(before + 1);
    // Answered from memory: the option was told of the first answer only, not of a ledger replay.
    expect(told).toHaveLength(1);
  });
});
