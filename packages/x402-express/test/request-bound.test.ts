import { randomUUID } from 'node:crypto';
import express from 'express';
import { Connection, PublicKey } from '@solana/web3.js';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { Error402 } from '@repo/schemas';
import { payUsdc, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { buildSignature } from '@repo/x402-core/testing';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { SolanaPaymentVerifier, type SolanaPaymentVerifierOptions } from '@repo/x402-solana';
import { fetchWithPayment } from '@repo/x402-solana/client';
import {
  recordPaymentSighting,
  requirePayment,
  type PaymentGateway,
  type VerificationGuard,
} from '../src/index';
import { listen } from './support/app';

// A payment buys the one request it was offered for (Solana Pay references), keeps its freshness from
// the first time the service saw it, and unverified attempts can be limited before they cost RPC calls.
jest.setTimeout(60_000);

const PRICE = 100_000n;
const SECRET = 'a reference secret of at least thirty-two bytes';
let localnet: Localnet;
let db: PgSqlClient;
const servers: { url: string; close: () => Promise<void> }[] = [];
let runs: string[] = [];

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  db = new PgSqlClient();
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await db?.close();
  await localnet?.close();
});

interface AppOptions {
  references?: PaymentGateway['references'];
  verifier?: SolanaPaymentVerifierOptions & { rpcUrl?: string };
  verificationGuard?: VerificationGuard;
  /** A compute-like route whose preflight answers 503 while this is true. */
  preflightDown?: { down: boolean };
  /** Milliseconds this replica's clocks (ledger sightings, verifier) run ahead of the real one. */
  clock?: { offsetMs: number };
}

/** A paid app (one replica): /gaps and /keywords at one price, /ideate behind a preflight. */
async function paidApp(options: AppOptions = {}): Promise<string> {
  const info = localnet.networks.solana;
  const { rpcUrl, ...verifierOptions } = options.verifier ?? {};
  const clock = options.clock;
  const now = clock ? () => new Date(Date.now() + clock.offsetMs) : undefined;
  const gateway: PaymentGateway = {
    ledger: new PrismaPaymentLedger(db, now ? { now } : {}),
    verifiers: {
      solana: new SolanaPaymentVerifier(
        {
          network: 'solana',
          rpcUrl: rpcUrl ?? info.rpcUrl,
          asset: info.mint,
          payTo: info.merchantTokenAccount,
        },
        {
          fetchAttempts: 2,
          fetchDelayMs: 50,
          rpcTimeoutMs: 2_000,
          ...(now ? { now } : {}),
          ...verifierOptions,
        },
      ),
    },
    ...(options.references ? { references: options.references } : {}),
    ...(options.verificationGuard ? { verificationGuard: options.verificationGuard } : {}),
  };
  const app = express();
  for (const name of ['gaps', 'keywords']) {
    app.get(
      `/api/v1/scout/${name}`,
      requirePayment({
        ...gateway,
        amountAtomic: PRICE,
        description: name,
        endpoint: `GET /api/v1/scout/${name}`,
      }),
      (req, res) => {
        runs.push(`${name}?${new URL(req.originalUrl, 'http://x').searchParams}`);
        res.json({ name, payer: res.locals.x402Payment?.payer });
      },
    );
  }
  const route = {
    ...gateway,
    amountAtomic: PRICE,
    description: 'ideate',
    endpoint: 'GET /ideate',
    kind: 'sync' as const,
  };
  app.get(
    '/ideate',
    async (req, res, next) => {
      if (!options.preflightDown?.down) return next();
      await recordPaymentSighting(req, route);
      res.setHeader('Retry-After', '600');
      res.status(503).json({ error: 'no runner', code: 'service_unavailable', requestId: 'r' });
    },
    requirePayment(route),
    (_req, res) => {
      runs.push('ideate');
      res.json({ ok: true });
    },
  );
  app.use(notFoundHandler);
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  const server = await listen(app);
  servers.push(server);
  return server.url;
}

async function challenge(url: string): Promise<{ reference: unknown; body: Error402 }> {
  const res = await fetch(url);
  expect(res.status).toBe(402);
  const body = Error402.parse(await res.json());
  return { reference: body.accepts[0]?.extra?.reference, body };
}

function paid(url: string, signature: string): Promise<Response> {
  return fetch(url, { headers: { 'X-PAYMENT': encodePaymentHeader('solana', signature) } });
}

async function rowOf(signature: string): Promise<{ status: string; endpoint: string } | undefined> {
  const rows = await db.$queryRawUnsafe<{ status: string; endpoint: string }[]>(
    'SELECT status, endpoint FROM x402_payments WHERE signature = $1',
    signature,
  );
  return rows[0];
}

async function merchantBalance(): Promise<bigint> {
  const connection = new Connection(localnet.networks.solana.rpcUrl, 'confirmed');
  const balance = await connection.getTokenAccountBalance(
    new PublicKey(localnet.networks.solana.merchantTokenAccount),
  );
  return BigInt(balance.value.amount);
}

beforeEach(() => {
  runs = [];
});

describe('request-bound payments (Solana Pay references)', () => {
  it('When the 402 is asked twice for one request, then both carry the same reference; another query gets another', async () => {
    const url = await paidApp({ references: { secret: SECRET } });
    const first = await challenge(`${url}/api/v1/scout/gaps?limit=1&sector=ai`);
    const again = await challenge(`${url}/api/v1/scout/gaps?sector=ai&limit=1`);
    const other = await challenge(`${url}/api/v1/scout/gaps?limit=2&sector=ai`);
    expect(typeof first.reference).toBe('string');
    expect(new PublicKey(first.reference as string).toBytes()).toHaveLength(32);
    expect(again.reference).toBe(first.reference);
    expect(other.reference).not.toBe(first.reference);
  });

  it('When a watcher presents the victim signature on another endpoint and on another query, then both are refused unconsumed and the victim is served', async () => {
    const url = await paidApp({ references: { secret: SECRET } });
    const victimUrl = `${url}/api/v1/scout/gaps?limit=1`;
    const { reference } = await challenge(victimUrl);
    const before = await merchantBalance();
    const signature = await payUsdc(localnet, 'solana', PRICE, { references: [reference as string] });

    for (const stolen of [`${url}/api/v1/scout/keywords`, `${url}/api/v1/scout/gaps?limit=2`]) {
      const res = await paid(stolen, signature);
      expect(res.status).toBe(402);
      const body = Error402.parse(await res.json());
      expect(body.details).toMatchObject({ reason: 'reference_mismatch' });
      expect(await rowOf(signature)).toMatchObject({ status: 'processing' }); // not consumed
    }

    const served = await paid(victimUrl, signature);
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ name: 'gaps', payer: localnet.agent.publicKey });
    expect(await rowOf(signature)).toEqual({ status: 'completed', endpoint: 'GET /api/v1/scout/gaps' });
    expect(runs).toEqual(['gaps?limit=1']);
    expect((await merchantBalance()) - before).toBe(PRICE);
  });

  it('When a watcher presents a completed payment on another query of the same endpoint, then 400 payment_reused, and the payer still gets the stored answer', async () => {
    for (const references of [{ secret: SECRET }, undefined]) {
      const url = await paidApp(references ? { references } : {});
      const payerUrl = `${url}/api/v1/scout/gaps?sector=fintech&limit=5`;
      const { reference } = await challenge(payerUrl);
      const signature = await payUsdc(
        localnet,
        'solana',
        PRICE,
        references ? { references: [reference as string] } : {},
      );
      runs = [];
      const served = await paid(payerUrl, signature);
      expect(served.status).toBe(200);
      const answer = await served.text();

      for (const watcherUrl of [
        `${url}/api/v1/scout/gaps?sector=climate&limit=50`,
        `${url}/api/v1/scout/gaps`,
      ]) {
        const stolen = await paid(watcherUrl, signature);
        expect(stolen.status).toBe(400);
        expect(await stolen.json()).toMatchObject({ code: 'payment_reused' });
      }
      // Query order is not part of the request: the payer's genuine retry is the same request.
      const retry = await paid(`${url}/api/v1/scout/gaps?limit=5&sector=fintech`, signature);
      expect(retry.status).toBe(200);
      expect(await retry.text()).toBe(answer);
      expect(runs).toEqual(['gaps?sector=fintech&limit=5']);
      expect(await rowOf(signature)).toEqual({ status: 'completed', endpoint: 'GET /api/v1/scout/gaps' });
    }
  });

  it('When our client pays a 402 with a reference, then the transfer carries it and references can be required', async () => {
    const url = await paidApp({ references: { secret: SECRET, required: true } });
    const { response, payment } = await fetchWithPayment(`${url}/api/v1/scout/keywords?limit=3`, {
      keypair: localnet.agent.keypair,
      rpcUrls: { solana: localnet.networks.solana.rpcUrl },
      mode: 'push',
    });
    expect(response.status).toBe(200);
    expect(payment?.mode).toBe('push');

    const unreferenced = await payUsdc(localnet, 'solana', PRICE);
    const res = await paid(`${url}/api/v1/scout/keywords?limit=3`, unreferenced);
    expect(res.status).toBe(402);
    expect(Error402.parse(await res.json()).details).toMatchObject({ reason: 'reference_missing' });
    expect(runs).toEqual(['keywords?limit=3']);
  });

  it('When references are configured but the payment carries none, then it is accepted (not required)', async () => {
    const url = await paidApp({ references: { secret: SECRET } });
    const signature = await payUsdc(localnet, 'solana', PRICE);
    expect((await paid(`${url}/api/v1/scout/gaps`, signature)).status).toBe(200);
  });
});

describe('freshness from the first sighting', () => {
  it('When the RPC is down at the first presentation and the payer retries 600 s later, then it is served', async () => {
    const downReplica = await paidApp({ verifier: { rpcUrl: 'http://127.0.0.1:1', fetchAttempts: 1 } });
    const laterReplica = await paidApp({ clock: { offsetMs: 600_000 } });
    const signature = await payUsdc(localnet, 'solana', PRICE);

    const refused = await paid(`${downReplica}/api/v1/scout/gaps`, signature);
    expect(refused.status).toBe(503);
    expect(await rowOf(signature)).toMatchObject({ status: 'processing' });

    const served = await paid(`${laterReplica}/api/v1/scout/gaps`, signature);
    expect(served.status).toBe(200);
    expect(runs).toEqual(['gaps?']);
  });

  it('When a payment was never seen before, then 600 s after its block time it is stale', async () => {
    const laterReplica = await paidApp({ clock: { offsetMs: 600_000 } });
    const signature = await payUsdc(localnet, 'solana', PRICE);
    const res = await paid(`${laterReplica}/api/v1/scout/gaps`, signature);
    expect(res.status).toBe(402);
    expect(Error402.parse(await res.json()).details).toMatchObject({ reason: 'stale' });
    expect(await rowOf(signature)).toMatchObject({ status: 'processing' });
    expect(runs).toEqual([]);
  });

  it('When a preflight answers 503 Retry-After 600 before the payment is looked at, then the retry 600 s later is served', async () => {
    const preflight = { down: true };
    const clock = { offsetMs: 0 };
    const url = await paidApp({ preflightDown: preflight, clock });
    const signature = await payUsdc(localnet, 'solana', PRICE);
    const refused = await paid(`${url}/ideate`, signature);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('600');
    expect(await rowOf(signature)).toEqual({ status: 'processing', endpoint: 'GET /ideate' });

    preflight.down = false;
    clock.offsetMs = 600_000;
    const served = await paid(`${url}/ideate`, signature);
    expect(served.status).toBe(200);
    expect(runs).toEqual(['ideate']);
  });
});

describe('unverified attempts', () => {
  it('When a client over its attempt limit floods a failing preflight with signatures, then no sighting is recorded', async () => {
    const url = await paidApp({
      preflightDown: { down: true },
      verificationGuard: {
        check: async () => ({ allowed: false, retryAfterSeconds: 30 }),
        verified: async () => undefined,
      },
    });
    const signature = buildSignature();
    expect((await paid(`${url}/ideate`, signature)).status).toBe(503);
    expect(await rowOf(signature)).toBeUndefined();
  });

  it('When the verification guard refuses, then 429 with Retry-After, no RPC call, and nothing kept', async () => {
    const rpcCalls: string[] = [];
    const url = await paidApp({
      verifier: { onRpcCall: (call) => rpcCalls.push(call.outcome) },
      verificationGuard: {
        check: async () => ({ allowed: false, retryAfterSeconds: 7 }),
        verified: async () => undefined,
      },
    });
    const signature = buildSignature();
    const res = await paid(`${url}/api/v1/scout/gaps`, signature);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toMatchObject({ code: 'rate_limited' });
    expect(rpcCalls).toEqual([]);
    expect(await rowOf(signature)).toBeUndefined();
  });

  it('When a random signature is not found, then its claim is forgotten, its attempt stays counted, and a repeat within seconds makes no RPC call', async () => {
    const rpcCalls: string[] = [];
    const verified: (string | undefined)[] = [];
    const url = await paidApp({
      verifier: { onRpcCall: (call) => rpcCalls.push(call.outcome) },
      verificationGuard: {
        check: async () => ({ allowed: true }),
        verified: async ({ ip }) => void verified.push(ip),
      },
    });
    const signature = buildSignature();
    for (let i = 0; i < 2; i++) {
      const res = await paid(`${url}/api/v1/scout/gaps`, signature);
      expect(res.status).toBe(402);
      expect(Error402.parse(await res.json()).details).toMatchObject({ reason: 'not_found' });
    }
    expect(rpcCalls).toEqual(['not_found', 'not_found', 'cached_not_found']);
    expect(await rowOf(signature)).toBeUndefined();
    expect(verified).toEqual([]);
    // A payment that verifies gives its attempt back.
    expect((await paid(`${url}/api/v1/scout/gaps`, await payUsdc(localnet, 'solana', PRICE))).status).toBe(
      200,
    );
    expect(verified).toHaveLength(1);
    expect(verified[0]).toMatch(/127\.0\.0\.1$/);
  });

  it('When the guard names its counter row, then the claim statement counts each attempt and the verified mark gives a paid one back, check and verified are never asked, and the attempt beyond the limit is refused before any RPC call', async () => {
    const key = `x402_verify_test:${randomUUID()}`;
    const asked: string[] = [];
    const rpcCalls: string[] = [];
    const url = await paidApp({
      verifier: { onRpcCall: (call) => rpcCalls.push(call.outcome) },
      verificationGuard: {
        check: async () => {
          asked.push('check');
          return { allowed: true };
        },
        verified: async () => void asked.push('verified'),
        counter: () => ({ table: 'rate_limits', key, limit: 2, windowMs: 60_000 }),
      },
    });
    const pointsOf = async (): Promise<number | undefined> =>
      (
        await db.$queryRawUnsafe<{ points: number }[]>('SELECT points FROM rate_limits WHERE key = $1', key)
      )[0]?.points;
    const gaps = `${url}/api/v1/scout/gaps`;
    expect((await paid(gaps, await payUsdc(localnet, 'solana', PRICE))).status).toBe(200);
    expect(await pointsOf()).toBe(0);
    for (let i = 0; i < 2; i++) expect((await paid(gaps, buildSignature())).status).toBe(402);
    expect(await pointsOf()).toBe(2);
    const callsBefore = rpcCalls.length;
    const signature = buildSignature();
    const refused = await paid(gaps, signature);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(rpcCalls.length).toBe(callsBefore);
    expect(await rowOf(signature)).toBeUndefined();
    expect(await pointsOf()).toBe(3);
    expect(asked).toEqual([]);
  });
});
