import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type RequestListener,
} from 'node:http';
import express, { type Express } from 'express';
import { Keypair } from '@solana/web3.js';
import { z } from 'zod';
import { errorHandler, requestIdOf } from '@repo/errors';
import { toJsonSchema } from '@repo/schemas';
import { encodeBase64Json, paymentRequiredBody, type ResourceDiscovery } from '@repo/x402-core';
import type { PaymentRequired } from '@x402/core/types';
import {
  extractOffersFromPaymentRequired,
  verifyOfferSignatureJWS,
  type JWSSignedOffer,
} from '@x402/extensions/offer-receipt';
import { ReceiptIssuer } from '@repo/x402-core/receipts';
import { PrismaPaymentIdentifiers, PrismaPaymentLedger, PrismaSignInRecords } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import { createHotPath, requirePayment, type PaymentGateway, type PaidRoute } from '../src/index';
import { paymentRequiredOf, requirementsForRequest, type OfferV2 } from '../src/requirements';
import { compileJsonTemplate } from '../src/request';

// A 402's body and PAYMENT-REQUIRED are assembled from templates compiled once per route: they must
// be, byte for byte, what serialising the whole value gives. Each request is answered by two apps:
// one as served, one where Express serialises the body itself (a `json replacer` that changes
// nothing turns the template off); PAYMENT-REQUIRED is compared with the plain encoding of the very
// offer the request was made. Only unpaid and malformed payments are sent: no ledger or RPC is reached.

const mint = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const rpcUrl = 'http://127.0.0.1:9';
const merchant = Keypair.generate().publicKey.toBase58();
const V1_MISSING = 'X-PAYMENT header is required';

const Query = z.object({ sector: z.string().regex(/^[a-z]+$/), limit: z.string().optional() });
const Answer = z.object({ items: z.array(z.object({ title: z.string() })), count: z.number().int() });
const discovery: ResourceDiscovery = {
  method: 'GET',
  query: toJsonSchema(Query, 'input'),
  output: toJsonSchema(Answer),
  inputExample: { sector: 'ai' },
  outputExample: { items: [{ title: 'reçus "signés"' }], count: 1 },
};

// Both apps offer the same: one fee payer per network.
const feePayers = { solana: Keypair.generate().secretKey, 'solana-devnet': Keypair.generate().secretKey };

function settler(network: 'solana' | 'solana-devnet'): ExactSvmSettler {
  return new ExactSvmSettler({
    network,
    rpcUrl,
    asset: mint,
    payTo: merchant,
    feePayerSecretKey: feePayers[network],
  });
}

let db: PgSqlClient;
const receipts = new ReceiptIssuer({ signingKey: ReceiptIssuer.generateKey() });
// What each request was offered, by request id, as the plain build makes it.
const offered = new Map<string, { offer: OfferV2 | undefined; accepts: unknown }>();

function buildApp(plainJson: boolean): Express {
  const ledger = new PrismaPaymentLedger(db);
  const verifier = (network: 'solana' | 'solana-devnet') =>
    new SolanaPaymentVerifier({ network, rpcUrl, asset: mint, payTo: merchant });
  const full: PaymentGateway = {
    ledger,
    verifiers: { solana: verifier('solana'), 'solana-devnet': verifier('solana-devnet') },
    settlers: { solana: settler('solana'), 'solana-devnet': settler('solana-devnet') },
    references: { secret },
    // PAYMENT-REQUIRED then declares payment-identifier beside bazaar (or alone, on /plain).
    identifiers: new PrismaPaymentIdentifiers(db),
    // And the signed offer of offer-receipt: one per route, network and origin.
    receipts,
  };
  const pushOnly: PaymentGateway = { ledger, verifiers: { solana: verifier('solana') } };
  const app = express();
  if (plainJson) app.set('json replacer', (_key: string, value: unknown) => value);
  // As the services' base app: no ETag (a 402 with one, which depends on its bytes, is not learned by
  // the hot path); as the access log (pino-http) does: the request's id, echoed in its header.
  app.set('etag', false);
  app.use((req, res, next) => {
    res.setHeader('x-request-id', requestIdOf(req));
    next();
  });
  const route = (path: string, gateway: PaymentGateway, paid: PaidRoute) => {
    const options = { ...gateway, ...paid };
    app.get(
      path,
      (req, _res, next) => {
        const { offer, accepts } = requirementsForRequest(req, options, options);
        offered.set(requestIdOf(req), { offer, accepts });
        next();
      },
      requirePayment(options),
      (_req, res) => res.json({}),
    );
  };
  route('/gaps', full, { amountAtomic: 100_000n, description: 'Market gaps', discovery });
  route('/plain', full, { amountAtomic: 7n, description: 'Ünïcödé "quoted" \\ route' });
  route(
    '/abroad',
    { ...full, publicBaseUrl: 'https://dönüş.example/π/' },
    {
      amountAtomic: 50_000n,
      description: 'Abroad',
      discovery,
    },
  );
  route('/push', pushOnly, { amountAtomic: 100_000n, description: 'Push only', discovery });
  // Sign-in-with-x: every PAYMENT-REQUIRED declares a fresh challenge (compared but for its nonce and
  // times), on the request's origin or on a public base URL.
  const signInWithX = {
    records: new PrismaSignInRecords(db),
    accessWindowSeconds: { sync: 600, async: 600 },
    requiredForReplay: true,
    statement: 'Sign in "here" — ünïcödé \\ ok',
  };
  route('/signed', { ...full, signInWithX }, { amountAtomic: 100_000n, description: 'Signed', discovery });
  route(
    '/signed-abroad',
    { ...full, signInWithX, publicBaseUrl: 'https://dönüş.example/π/' },
    { amountAtomic: 50_000n, description: 'Signed abroad' },
  );
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  return app;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function get(base: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

let fast: { url: string; close: () => void };
let plain: { url: string; close: () => void };
// The hot path in front of the served app: the 402s of new URLs built from what each route's first
// 402 taught. The routes validate no query, so the hot path accepts every one, as they do.
const secret = 'a reference secret of at least thirty-two bytes';
const hotPath = createHotPath({
  routes: Object.fromEntries(
    ['/gaps', '/plain', '/abroad', '/push', '/signed', '/signed-abroad'].map((path) => [
      path,
      { endpoint: `GET ${path}`, validateQuery: () => undefined },
    ]),
  ),
  references: { secret },
});
let hot: { url: string; close: () => void };
let fullPathCalls = 0;

function listen(app: Express | RequestListener): Promise<{ url: string; close: () => void }> {
  return new Promise((resolve) => {
    const server = createServer(app);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      });
    });
  });
}

beforeAll(async () => {
  db = new PgSqlClient();
  fast = await listen(buildApp(false));
  plain = await listen(buildApp(true));
  const served = buildApp(false);
  hot = await listen(
    hotPath.wrap((req, res) => {
      fullPathCalls += 1;
      served(req, res);
    }),
  );
});

afterAll(async () => {
  fast?.close();
  plain?.close();
  hot?.close();
  await db?.close();
});

const v2Malformed = encodeBase64Json({ x402Version: 2, accepted: {}, payload: {} });
// Query strings of every length modulo 3 (the base64 of the fixed end is kept for each alignment),
// percent-encoded unicode, both networks, and a Host with Latin-1 letters.
const paths = [
  '/gaps?sector=fintech&limit=5',
  '/gaps?sector=fintech&limit=5&n=1',
  '/gaps?sector=fintech&limit=5&n=12',
  '/gaps?sector=fintech&limit=5&n=123',
  '/gaps?sector=fintech&network=devnet&n=%C3%A9%E2%82%AC%F0%9F%98%80',
  '/gaps?network=solana-devnet&q=%22%5C%3C%3E%26',
  '/gaps?network=mainnet&é=1',
  '/plain?n=1',
  '/plain?n=12&network=devnet',
  '/plain?n=123',
  '/abroad?n=1',
  '/abroad?n=12',
  '/abroad?n=123&network=devnet',
  '/push?n=1',
  '/push?n=12',
];
const requestHeaders: [string, Record<string, string>][] = [
  ['no payment', {}],
  ['a Latin-1 host', { host: 'hôte.exämple:8080' }],
  ['a request id with quotes', { 'x-request-id': 'id "quoted" \\ back' }],
  ['a malformed X-PAYMENT', { 'x-payment': 'not base64 at all!' }],
  ['a v2 PAYMENT-SIGNATURE of another network', { 'payment-signature': v2Malformed }],
];

describe('the 402 bytes', () => {
  it.each(paths.flatMap((path) => requestHeaders.map(([what, headers]) => [path, what, headers] as const)))(
    'When %s is asked with %s, then the body and PAYMENT-REQUIRED are those of the plain build',
    async (path, _what, headers) => {
      const id = `id-${Math.random().toString(36).slice(2)}`;
      const withId = { host: 'api.example', 'x-request-id': id, ...headers };
      const requestId = withId['x-request-id'];
      const a = await get(fast.url, path, withId);
      const fastOffer = offered.get(requestId);
      const b = await get(plain.url, path, withId);
      expect(a.status).toBe(402);
      expect(a.body.toString('utf8')).toBe(b.body.toString('utf8'));
      const { date: _da, ...aHeaders } = a.headers;
      const { date: _db, ...bHeaders } = b.headers;
      expect(aHeaders).toEqual(bHeaders);
      // The plain build of this very request's offer and body.
      const header = a.headers['payment-required'];
      if (path.startsWith('/push')) expect(header).toBeUndefined();
      else {
        expect(fastOffer?.offer).toBeDefined();
        const error = (
          JSON.parse(Buffer.from(String(header), 'base64').toString('utf8')) as { error: string }
        ).error;
        expect(header).toBe(encodeBase64Json(paymentRequiredOf(fastOffer!.offer!, error)));
        // The signed offer: the route's URL without its query, whatever the query.
        const [signed] = extractOffersFromPaymentRequired(
          JSON.parse(Buffer.from(String(header), 'base64').toString('utf8')) as PaymentRequired,
        );
        const terms = await verifyOfferSignatureJWS(signed as JWSSignedOffer, {
          ...receipts.keySet('https://api.example').keys[0]!,
        });
        expect(terms.resourceUrl).toBe(fastOffer!.offer!.resource.url.split('?')[0]);
      }
      if (Object.keys(headers).every((name) => name === 'host' || name === 'x-request-id'))
        expect(a.body.toString('utf8')).toBe(
          JSON.stringify(
            paymentRequiredBody(
              fastOffer!.accepts as Parameters<typeof paymentRequiredBody>[0],
              V1_MISSING,
              requestId,
            ),
          ),
        );
    },
  );

  it('When the paths above are asked, then every route with PAYMENT-REQUIRED meets each byte alignment', async () => {
    // The fixed end of a route's header is the same: its length modulo 3 varies with what precedes it
    // (the query, and the request's reference, whose base58 is 43 or 44 characters): query strings of
    // growing length meet every alignment, each header the plain build of its request's offer.
    const alignments = new Map<string, Set<number>>();
    for (const route of ['/gaps', '/plain', '/abroad']) {
      const seen = new Set<number>();
      for (let n = 1; n <= 30 && seen.size < 3; n++) {
        const id = `align-${route}-${n}`;
        const { headers } = await get(fast.url, `${route}?sector=ai&n=${'1'.repeat(n)}`, {
          host: 'api.example',
          'x-request-id': id,
        });
        const header = String(headers['payment-required']);
        const decoded = Buffer.from(header, 'base64');
        const { error } = JSON.parse(decoded.toString('utf8')) as { error: string };
        expect(header).toBe(encodeBase64Json(paymentRequiredOf(offered.get(id)!.offer!, error)));
        seen.add(decoded.length % 3);
      }
      alignments.set(route, seen);
    }
    for (const seen of alignments.values()) expect([...seen].sort()).toEqual([0, 1, 2]);
  });
});

/**
 * An answer's headers without `date`, and, in `PAYMENT-REQUIRED` with a sign-in challenge, its nonce,
 * `issuedAt` and `expirationTime` put as `*` in the decoded JSON (everything else byte for byte),
 * each checked: 32 hex digits, not `nonces`' (to which it is added), and an expiry 300 s after issue.
 */
function withoutFreshSignIn(headers: IncomingHttpHeaders, nonces: Set<string>): IncomingHttpHeaders {
  const { date: _date, ...rest } = headers;
  const header = rest['payment-required'];
  const decoded = typeof header === 'string' ? Buffer.from(header, 'base64').toString('utf8') : '';
  if (!decoded.includes('"sign-in-with-x"')) return rest;
  const fresh: Record<string, string> = {};
  const masked = decoded.replace(
    /"(nonce|issuedAt|expirationTime)":"([^"]*)"/g,
    (_all, name: string, value: string) => {
      fresh[name] = value;
      return `"${name}":"*"`;
    },
  );
  expect(fresh.nonce).toMatch(/^[0-9a-f]{32}$/);
  expect(nonces.has(fresh.nonce!)).toBe(false);
  nonces.add(fresh.nonce!);
  expect(Date.parse(fresh.expirationTime!) - Date.parse(fresh.issuedAt!)).toBe(300_000);
  return { ...rest, 'payment-required': masked };
}

describe('the 402 bytes of a new URL from the hot path', () => {
  // Without a payment header (the hot path leaves the others to the full path).
  const unpaid = requestHeaders.filter(([, headers]) =>
    Object.keys(headers).every((name) => name === 'host' || name === 'x-request-id'),
  );
  // With sign-in-with-x: the same queries on the routes declaring it.
  const signed = paths
    .filter((path) => path.startsWith('/gaps') || path.startsWith('/abroad'))
    .map((path) =>
      path.replace(/^\/(gaps|abroad)/, (_all, route: string) =>
        route === 'gaps' ? '/signed' : '/signed-abroad',
      ),
    );
  const nonces = new Set<string>();
  it.each(
    [...paths, ...signed].flatMap((path) => unpaid.map(([what, headers]) => [path, what, headers] as const)),
  )(
    'When a new URL like %s is asked with %s once its route taught the hot path, then its 402 is the plain build’s, without the full path',
    async (path, _what, headers) => {
      const withHost = { host: 'api.example', ...headers };
      // The first 402 of the route, network and host takes the full path (or was taken before).
      const first = await get(hot.url, `${path}&first=${Math.random()}`, withHost);
      expect(first.status).toBe(402);
      for (const n of ['1', '12', '123']) {
        const url = `${path}&new=${Math.random().toString(36).slice(2)}&m=${n}`;
        const id = `hot-${Math.random().toString(36).slice(2)}`;
        const calls = fullPathCalls;
        const a = await get(hot.url, url, { 'x-request-id': id, ...withHost });
        expect(fullPathCalls).toBe(calls);
        const b = await get(plain.url, url, { 'x-request-id': id, ...withHost });
        expect(a.status).toBe(402);
        expect(a.body.toString('utf8')).toBe(b.body.toString('utf8'));
        expect(withoutFreshSignIn(a.headers, nonces)).toEqual(withoutFreshSignIn(b.headers, nonces));
        // Asked again: remembered, with a challenge of its own.
        const again = await get(hot.url, url, { 'x-request-id': id, ...withHost });
        expect(fullPathCalls).toBe(calls);
        expect(withoutFreshSignIn(again.headers, nonces)).toEqual(withoutFreshSignIn(b.headers, new Set()));
      }
      if (path.startsWith('/signed')) expect(nonces.size).toBeGreaterThan(0);
    },
  );

  it('When a route answers the first 402 of a network, then that network’s new URLs are built from it and the other’s are not', async () => {
    const host = { host: 'one-network.example' };
    expect((await get(hot.url, '/plain?x=1', host)).status).toBe(402);
    const calls = fullPathCalls;
    expect((await get(hot.url, '/plain?x=2', host)).status).toBe(402);
    expect(fullPathCalls).toBe(calls);
    expect((await get(hot.url, '/plain?x=3&network=devnet', host)).status).toBe(402);
    expect(fullPathCalls).toBe(calls + 1);
    expect((await get(hot.url, '/plain?x=4&network=devnet', host)).status).toBe(402);
    expect(fullPathCalls).toBe(calls + 1);
  });
});

describe('compileJsonTemplate', () => {
  const build = (v: Readonly<Record<'a' | 'b', string>>) => ({
    x: v.a,
    list: [v.b, { y: v.a }],
    end: 'é'.repeat(5),
  });

  it.each(['', 'x', 'xy', 'ü', '€', '😀', '"\\\n\u0000\ud800', 'a'.repeat(1000)])(
    'When the slots are %j, then json and base64 equal the whole serialisation',
    (a) => {
      const template = compileJsonTemplate(['a', 'b'], build)!;
      for (const b of ['', 'q', 'qq', 'ß']) {
        expect(template.json({ a, b })).toBe(JSON.stringify(build({ a, b })));
        expect(template.base64({ a, b })).toBe(encodeBase64Json(build({ a, b })));
      }
    },
  );

  it('When the builder uses a value other than as a whole string, then there is no template', () => {
    expect(compileJsonTemplate(['a'], (v) => ({ x: `${v.a}!` }))).toBeUndefined();
    expect(compileJsonTemplate(['a'], (v) => ({ n: v.a.length }))).toBeUndefined();
    expect(
      compileJsonTemplate(['a'], () => {
        throw new Error('no');
      }),
    ).toBeUndefined();
  });
});
