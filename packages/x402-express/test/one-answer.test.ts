import type { AddressInfo } from 'node:net';
import express from 'express';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { TcpProxy, waitFor } from '@repo/service-kit/testing';
import { payUsdc, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { requirePayment, type PaymentEvent, type PaymentGateway } from '../src/index';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient, TEST_DATABASE_URL } from '@repo/x402-ledger/testing';
import { SolanaPaymentVerifier } from '@repo/x402-solana';

// One payment buys one answer: the answer leaves only once it is stored, and a long handler keeps its
// claim. The ledger's PostgreSQL goes through a proxy the test cuts.
jest.setTimeout(60_000);

const LEASE_MS = 600;
let localnet: Localnet;
let pg: { proxy: TcpProxy; url: string };
let db: PgSqlClient;
let direct: PgSqlClient;
let server: { url: string; close: () => Promise<void> };
let runs = 0;
let events: PaymentEvent[] = [];
/** While set, `/unstorable` answers a body PostgreSQL's text type refuses (a NUL byte). */
let unstorable = true;
let gate: { open: () => void; opened: Promise<void> };

function newGate(): void {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gate = { open, opened };
}

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  pg = await TcpProxy.forUrl(TEST_DATABASE_URL, 5432);
  db = new PgSqlClient({ connectionString: pg.url, max: 4, connectionTimeoutMillis: 1000 });
  direct = new PgSqlClient();
  const info = localnet.networks.solana;
  const gateway: PaymentGateway = {
    ledger: new PrismaPaymentLedger(db, { leaseMs: LEASE_MS, waitTimeoutMs: 10_000 }),
    verifiers: {
      solana: new SolanaPaymentVerifier(
        { network: 'solana', rpcUrl: info.rpcUrl, asset: info.mint, payTo: info.merchantTokenAccount },
        { fetchAttempts: 2, fetchDelayMs: 50 },
      ),
    },
    onPaymentEvent: (event) => events.push(event),
  };
  const app = express();
  app.get(
    '/held',
    requirePayment({ ...gateway, amountAtomic: 100_000n, description: 'Held' }),
    async (_req, res) => {
      runs += 1;
      const run = runs;
      await gate.opened;
      res.json({ run, nonce: Math.random() });
    },
  );
  app.get(
    '/unstorable',
    requirePayment({ ...gateway, amountAtomic: 100_000n, description: 'Unstorable' }),
    (_req, res) => {
      runs += 1;
      res.type('text/plain').send(unstorable ? 'a\u0000b' : 'stored');
    },
  );
  app.use(notFoundHandler);
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
        close: () =>
          new Promise<void>((done) => {
            s.closeAllConnections();
            s.close(() => done());
          }),
      }),
    );
  });
});

afterAll(async () => {
  await server?.close();
  await db?.close();
  await direct?.close();
  await pg?.proxy.close();
  await localnet?.close();
});

beforeEach(() => {
  runs = 0;
  events = [];
  newGate();
});

const held = (signature: string) =>
  fetch(`${server.url}/held`, { headers: { 'X-PAYMENT': encodePaymentHeader('solana', signature) } });

async function statusOf(signature: string): Promise<string | undefined> {
  const rows = await direct.$queryRawUnsafe<{ status: string }[]>(
    'SELECT status FROM x402_payments WHERE signature = $1',
    signature,
  );
  return rows[0]?.status;
}

describe('One answer per payment', () => {
  it('When storing the paid answer fails, then the answer is not sent (503, Retry-After), the payment stays verified, and a retry with the same payment runs the handler once more without verifying it again and is then replayed', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const first = held(signature);
    await waitFor('the handler to start', () => runs === 1);
    // A handler still running after VERIFIED_MARK_DELAY_MS (a third of this lease) gets its verified mark.
    await waitFor('the verified mark', async () => (await statusOf(signature)) === 'verified');
    await pg.proxy.cut();
    gate.open();
    const lost = await first;
    expect(lost.status).toBe(503);
    expect(lost.headers.get('retry-after')).toBe('1');
    expect(lost.headers.get('x-payment-response')).toBeNull();
    expect(await lost.json()).toMatchObject({ code: 'service_unavailable', requestId: expect.any(String) });
    expect(await statusOf(signature)).toBe('verified');

    await pg.proxy.restore();
    const retry = await held(signature);
    expect(retry.status).toBe(200);
    const body = (await retry.json()) as { run: number };
    expect(body.run).toBe(2);
    expect(await statusOf(signature)).toBe('completed');
    const replay = await held(signature);
    expect(await replay.json()).toEqual(body);
    expect(runs).toBe(2);
    expect(events.filter((e) => e.type === 'verified')).toHaveLength(1);
    const rows = await direct.$queryRawUnsafe<unknown[]>(
      'SELECT 1 FROM x402_payments WHERE signature = $1',
      signature,
    );
    expect(rows).toHaveLength(1);
  });

  it('When a handler runs for several leases, then its claim is renewed and a concurrent request with the same payment waits and replays instead of running the handler again', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const first = held(signature);
    await waitFor('the handler to start', () => runs === 1);
    const second = held(signature);
    // Seven renewals seen: the handler has outlived its 600 ms lease twice over.
    const seen = new Set<string>();
    await waitFor(
      'seven lease renewals',
      async () => {
        const rows = await direct.$queryRawUnsafe<{ claimed_at: Date }[]>(
          'SELECT claimed_at FROM x402_payments WHERE signature = $1',
          signature,
        );
        if (rows[0]) seen.add(rows[0].claimed_at.toISOString());
        return seen.size >= 8;
      },
      10_000,
    );
    expect(runs).toBe(1);
    // The handler outlived the deferral of its verified mark: the payment is recorded while it runs.
    expect(await statusOf(signature)).toBe('verified');
    gate.open();
    const [a, b] = await Promise.all([first, second]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await b.text()).toBe(await a.text());
    expect(runs).toBe(1);
  });

  it('When a fast answer cannot be stored, then 503, the payment is recorded as verified anyway, and a retry runs the handler without verifying again', async () => {
    unstorable = true;
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const url = `${server.url}/unstorable`;
    const headers = { 'X-PAYMENT': encodePaymentHeader('solana', signature) };
    const lost = await fetch(url, { headers });
    expect(lost.status).toBe(503);
    expect(await lost.json()).toMatchObject({ code: 'service_unavailable' });
    expect(await statusOf(signature)).toBe('verified');

    unstorable = false;
    const retry = await fetch(url, { headers });
    expect(retry.status).toBe(200);
    expect(await retry.text()).toBe('stored');
    expect(await statusOf(signature)).toBe('completed');
    expect(runs).toBe(2);
    expect(events.filter((e) => e.type === 'verified')).toHaveLength(1);
  });
});
