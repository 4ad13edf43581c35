import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rawGet, type RawAnswer } from '@repo/service-kit/testing';
import { Keypair } from '@solana/web3.js';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { SIGN_IN_WITH_X, type SIWxExtension } from '@x402/extensions/sign-in-with-x';
import { PrismaPaymentLedger, PrismaSignInRecords } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import { AppError } from '@repo/errors';
import { createHotPath, type HotPath, type PaymentGateway } from '../src/index';
import { buildPaidApp, listen, type HandlerRuns } from './support/app';

// The sign-in-with-x challenge of the middleware (README, "Sign-in-with-x"): declared fresh in every
// PAYMENT-REQUIRED, bound to the request's origin when no public base URL is set, and never a 500
// for a hostile Host or a malformed proof. (market-intel's test/sign-in-with-x.test.ts signs in for
// real against the ledger.)
const MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
let db: PgSqlClient;
let server: { url: string; close: () => Promise<void> };
const runs: HandlerRuns = { gaps: 0, keywords: 0, flaky: 0 };
// The same app behind a hot path (the gaps route answered for new URLs too), counting what reaches it.
let hot: HotPath;
let hotServer: Server;
let fullServer: Server;
let fullPathCalls = 0;

beforeAll(async () => {
  db = new PgSqlClient();
  // Nothing here reaches the RPC: only unpaid requests and refused proofs are sent.
  const rpcUrl = 'http://127.0.0.1:9';
  const gateway: PaymentGateway = {
    ledger: new PrismaPaymentLedger(db),
    verifiers: {
      solana: new SolanaPaymentVerifier({
        network: 'solana',
        rpcUrl,
        asset: MINT,
        payTo: Keypair.generate().publicKey.toBase58(),
      }),
    },
    settlers: {
      solana: new ExactSvmSettler({
        network: 'solana',
        rpcUrl,
        asset: MINT,
        payTo: Keypair.generate().publicKey.toBase58(),
        feePayerSecretKey: Keypair.generate().secretKey,
      }),
    },
    signInWithX: {
      records: new PrismaSignInRecords(db),
      accessWindowSeconds: { sync: 600, async: 600 },
      requiredForReplay: true,
    },
  };
  hot = createHotPath({
    routes: {
      '/api/v1/scout/gaps': {
        endpoint: 'GET /api/v1/scout/gaps',
        // As the app's own validation of the route.
        validateQuery: ({ limit }) => {
          const n = limit === undefined ? 20 : Number(limit);
          if (!Number.isInteger(n) || n < 1 || n > 100)
            throw new AppError('invalid_request', 'limit must be an integer from 1 to 100');
        },
      },
    },
  });
  const app = buildPaidApp({ ...gateway, onAnswerStored: hot.onAnswerStored }, runs);
  server = await listen(app);
  // As the services' base app: no ETag (one is computed from the bytes, which differ per 402).
  app.set('etag', false);
  // As the services' access log: the request's id (the caller's or a new one) on it and its answer.
  const logged: RequestListener = (req, res) => {
    const header = req.headers['x-request-id'];
    const id = typeof header === 'string' ? header : randomUUID();
    (req as typeof req & { id?: string }).id = id;
    res.setHeader('x-request-id', id);
    app(req, res);
  };
  fullServer = createServer(logged);
  hotServer = createServer(
    hot.wrap((req, res) => {
      fullPathCalls += 1;
      logged(req, res);
    }),
  );
  for (const listening of [fullServer, hotServer])
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  for (const listening of [fullServer, hotServer])
    await new Promise<void>((resolve) => listening.close(() => resolve()));
  await server?.close();
  await db?.close();
});

function challengeOf(res: Response): SIWxExtension | undefined {
  const header = res.headers.get('payment-required');
  return header
    ? (decodePaymentRequiredHeader(header).extensions?.[SIGN_IN_WITH_X] as SIWxExtension)
    : undefined;
}

describe('the sign-in-with-x challenge', () => {
  it('When a 402 is sent, then its PAYMENT-REQUIRED carries a fresh challenge on the request origin', async () => {
    const first = challengeOf(await fetch(`${server.url}/api/v1/scout/gaps?limit=2`));
    const second = challengeOf(await fetch(`${server.url}/api/v1/scout/gaps?limit=2`));
    expect(first?.info).toMatchObject({
      domain: new URL(server.url).host,
      uri: `${server.url}/api/v1/scout/gaps?limit=2`,
      version: '1',
    });
    expect(second?.info.nonce).not.toBe(first?.info.nonce);
  });

  it('When the Host header makes no URL, then the 402 has no challenge and is not a 500', async () => {
    const { port } = new URL(server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/api/v1/scout/gaps', headers: { host: 'exa mple' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(402);
  });

  it('When a malformed proof is sent, then it is a 402 naming why, with a new challenge', async () => {
    const res = await fetch(`${server.url}/api/v1/scout/gaps`, { headers: { [SIGN_IN_WITH_X]: 'e30=' } });
    expect(res.status).toBe(402);
    expect(challengeOf(res)?.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(await res.json()).toMatchObject({ details: { reason: 'invalid_siwx_header' } });
    expect(runs.gaps).toBe(0);
  });
});

/**
 * An answer without what differs per response: `date`, and the nonce, `issuedAt` and
 * `expirationTime` of its sign-in challenge (in the decoded `PAYMENT-REQUIRED`, everything else byte
 * for byte).
 */
function withoutFreshValues({ status, headers, body }: RawAnswer) {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
  const required = rest['payment-required'];
  if (typeof required === 'string')
    rest['payment-required'] = Buffer.from(required, 'base64')
      .toString('utf8')
      .replace(/"(nonce|issuedAt|expirationTime)":"[^"]*"/g, '"$1":"*"');
  return { status, headers: rest, body };
}

/** The sign-in challenge of a raw 402, checked to be a valid fresh one for `url`. */
function validChallenge(answer: RawAnswer, url: string): SIWxExtension['info'] {
  expect(answer.status).toBe(402);
  const required = decodePaymentRequiredHeader(String(answer.headers['payment-required']));
  const { info } = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension;
  expect(info).toMatchObject({ domain: new URL(url).host, uri: url, resources: [url], version: '1' });
  expect(info.nonce).toMatch(/^[0-9a-f]{32}$/);
  expect(Math.abs(Date.now() - Date.parse(info.issuedAt))).toBeLessThan(60_000);
  expect(Date.parse(info.expirationTime!) - Date.parse(info.issuedAt)).toBe(300_000);
  return info;
}

// The hot path with sign-in-with-x on (README, "The hot path (`createHotPath`)"): its 402s carry a
// fresh challenge each, the full path's but for the nonce and times, and a sign-in goes to the full path.
describe('the hot path with sign-in-with-x', () => {
  const host = 'paid.example';
  const port = () => (hotServer.address() as AddressInfo).port;
  const fullPort = () => (fullServer.address() as AddressInfo).port;

  it('When a URL is asked again, or a new URL of a learned route, then each 402 has its own valid challenge, equal to the full path’s but for it', async () => {
    // The first 402 of the route takes the full path and teaches the hot path.
    const taught = await rawGet(port(), '/api/v1/scout/gaps?limit=2', { host });
    const calls = fullPathCalls;
    const asks = [
      '/api/v1/scout/gaps?limit=2', // remembered from the full path's 402
      '/api/v1/scout/gaps?limit=3', // new: from the route's template
      '/api/v1/scout/gaps?limit=3', // remembered from the hot path's own 402
    ];
    const nonces = [validChallenge(taught, `http://${host}/api/v1/scout/gaps?limit=2`).nonce];
    for (const [i, path] of asks.entries()) {
      const headers = { host, 'x-request-id': `hot-${i}` };
      const fromHot = await rawGet(port(), path, headers);
      const fromFull = await rawGet(fullPort(), path, headers);
      nonces.push(validChallenge(fromHot, `http://${host}${path}`).nonce);
      nonces.push(validChallenge(fromFull, `http://${host}${path}`).nonce);
      expect(withoutFreshValues(fromHot)).toEqual(withoutFreshValues(fromFull));
    }
    expect(fullPathCalls).toBe(calls);
    expect(new Set(nonces).size).toBe(nonces.length);
  });

  it('When a request carries a sign-in proof, then the full path answers it', async () => {
    await rawGet(port(), '/api/v1/scout/gaps?limit=4', { host });
    const calls = fullPathCalls;
    const res = await rawGet(port(), '/api/v1/scout/gaps?limit=4', { host, [SIGN_IN_WITH_X]: 'e30=' });
    expect(res.status).toBe(402);
    expect((JSON.parse(res.body) as { details?: { reason?: string } }).details?.reason).toBe(
      'invalid_siwx_header',
    );
    expect(fullPathCalls).toBe(calls + 1);
  });
});
