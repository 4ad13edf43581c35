import { createServer, request, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { buildPaymentRequirements, paymentRequiredBody } from '@repo/x402-core';
import { createHotPath, type AnswerStoredListener, type PaymentEvent } from '../src/index';
import { compileJsonTemplate, prepareBody, sendPaymentRequired } from '../src/request';

// The hot path's own rules, against a stand-in for the full path that counts what reaches it, sends
// its 402 with sendPaymentRequired as requirePayment does (from a route's template: the hot path
// remembers what it is told of) unless asked for a hand-written one (`?raw`), and tells
// `onAnswerStored` of its paid answers, as requirePayment does with that option.
let fullPathCalls = 0;
const requirement = buildPaymentRequirements({
  network: 'solana',
  asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
  payTo: 'GSTi7w36WTPCdWzMFKkxAs7xqkyVs6pSJAPdVc7hiRRR',
  amountAtomic: 1000n,
  resource: 'http://localhost/',
  description: 'Paid',
  mimeType: 'application/json',
});
const template = compileJsonTemplate(['requestId', 'error', 'url', 'reference'], (v) =>
  paymentRequiredBody([{ ...requirement, resource: v.url }], v.error, v.requestId),
)!;
const fullPath = (onAnswerStored: AnswerStoredListener, etag = false): RequestListener => {
  const app = express();
  // As the services' base app: no ETag, unless asked (one is computed from the bytes).
  app.set('etag', etag);
  app.use((req, res) => {
    fullPathCalls += 1;
    const id =
      typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : `id-${fullPathCalls}`;
    // As the access log (pino-http) does: the request's id, in its header and for the error envelope.
    (req as typeof req & { id?: string }).id = id;
    res.setHeader('x-request-id', id);
    res.setHeader('x-content-type-options', 'nosniff');
    if (req.headers['x-payment'] === undefined) {
      if (req.query.raw !== undefined) {
        res.status(402).json({ x402Version: 1, accepts: [{ network: 'solana' }], requestId: id });
        return;
      }
      const accepts = [{ ...requirement, resource: req.url }];
      prepareBody(accepts, template, { url: req.url, reference: '' });
      sendPaymentRequired(req, res, accepts, 'pay');
      return;
    }
    // As requirePayment does once the ledger stored the answer: tell onAnswerStored, then send it.
    const body = Buffer.from(
      'x'.repeat(Number(new URL(req.url ?? '/', 'http://h').searchParams.get('size') ?? 10)),
    );
    const headers = {
      'x-content-type-options': 'nosniff',
      'x-payment-response': 'v1',
      'payment-response': 'v2',
    };
    res.statusCode = 200;
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    onAnswerStored({ network: 'solana', status: 200, headers, body }, res);
    res.end(body);
  });
  return app;
};

async function serve(listener: RequestListener): Promise<{ url: string; server: Server }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('createHotPath', () => {
  const events: PaymentEvent[] = [];
  const hot = createHotPath({
    routes: { '/paid': 'GET /paid' },
    onPaymentEvent: (e) => events.push(e),
    maxChallenges: 2,
    maxReplayBytes: 2000,
  });
  let base: string;
  let server: Server;
  beforeAll(async () => {
    ({ url: base, server } = await serve(hot.wrap(fullPath(hot.onAnswerStored))));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('When 402s of more URLs than maxChallenges are remembered, then the oldest is forgotten and asked of the full path again', async () => {
    fullPathCalls = 0;
    for (const q of ['a', 'b', 'a', 'c', 'a']) expect((await fetch(`${base}/paid?q=${q}`)).status).toBe(402);
    // a, b: full path; a: memory; c: full path (b... a is the oldest and goes); a: full path again.
    expect(fullPathCalls).toBe(4);
    expect(hot.size().challenges).toBe(2);
    expect(events.filter((e) => e.type === 'challenged')).toHaveLength(1);
  });

  it('When a request is not a hot one (another path, a body, another method), then the full path answers it every time', async () => {
    fullPathCalls = 0;
    await fetch(`${base}/other`);
    await fetch(`${base}/other`);
    await fetch(`${base}/paid?q=body`, { method: 'POST', body: 'x' });
    await fetch(`${base}/paid?q=body`, { method: 'POST', body: 'x' });
    expect(fullPathCalls).toBe(4);
  });

  it('When stored answers exceed maxReplayBytes, then the oldest are forgotten and a too large one is never kept', async () => {
    fullPathCalls = 0;
    const pay = (size: number, sig: string) =>
      fetch(`${base}/paid?size=${size}`, { headers: { 'x-payment': sig } });
    await pay(800, 's1');
    await pay(800, 's1');
    expect(fullPathCalls).toBe(1);
    await pay(800, 's2');
    await pay(800, 's3');
    expect(hot.size().replays).toBe(2);
    expect(hot.size().replayBytes).toBeLessThanOrEqual(2000);
    await pay(5000, 's4');
    await pay(5000, 's4');
    expect(fullPathCalls).toBe(5);
    expect(events.filter((e) => e.type === 'replayed')).toHaveLength(1);
  });
});

describe('createHotPath challenges', () => {
  it('When a 402 is remembered, then the next one is the same bytes with its own request id', async () => {
    const hot = createHotPath({ routes: { '/paid': 'GET /paid' } });
    const { url: base, server } = await serve(hot.wrap(fullPath(hot.onAnswerStored)));
    fullPathCalls = 0;
    const ask = async (id: string) => {
      const res = await fetch(`${base}/paid?q=same`, { headers: { 'x-request-id': id } });
      const { date: _date, ...headers } = Object.fromEntries(res.headers);
      return { status: res.status, headers, body: await res.text() };
    };
    const first = await ask('first-id');
    const second = await ask('other-id');
    expect(fullPathCalls).toBe(1);
    expect(second.status).toBe(402);
    expect(second.body).toBe(first.body.replace('"first-id"', '"other-id"'));
    expect(second.headers).toEqual({ ...first.headers, 'x-request-id': 'other-id' });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('When a 402 carries an ETag (computed from its bytes), then it is not remembered', async () => {
    const hot = createHotPath({ routes: { '/paid': 'GET /paid' } });
    const { url: base, server } = await serve(hot.wrap(fullPath(hot.onAnswerStored, true)));
    fullPathCalls = 0;
    const first = await fetch(`${base}/paid?q=etag`);
    expect(first.headers.get('etag')).not.toBeNull();
    expect((await fetch(`${base}/paid?q=etag`)).status).toBe(402);
    expect(fullPathCalls).toBe(2);
    expect(hot.size().challenges).toBe(0);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('When a 402 was not sent by sendPaymentRequired, then it is not remembered', async () => {
    const hot = createHotPath({ routes: { '/paid': 'GET /paid' } });
    const { url: base, server } = await serve(hot.wrap(fullPath(hot.onAnswerStored)));
    fullPathCalls = 0;
    expect((await fetch(`${base}/paid?raw`)).status).toBe(402);
    expect((await fetch(`${base}/paid?raw`)).status).toBe(402);
    expect(fullPathCalls).toBe(2);
    expect(hot.size().challenges).toBe(0);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});

describe('createHotPath replays', () => {
  it('When a remembered payment comes again with a body, then the full path answers it (the body is part of the request paid for)', async () => {
    const hot = createHotPath({ routes: { '/paid': 'GET /paid' } });
    const { url, server } = await serve(hot.wrap(fullPath(hot.onAnswerStored)));
    try {
      fullPathCalls = 0;
      const pay = () => fetch(`${url}/paid?size=5`, { headers: { 'x-payment': 'sb' } });
      await pay();
      await pay();
      expect(fullPathCalls).toBe(1);
      await new Promise<void>((resolve, reject) => {
        const req = request(
          `${url}/paid?size=5`,
          { headers: { 'x-payment': 'sb', 'content-type': 'application/json', 'content-length': '2' } },
          (res) => {
            res.resume();
            res.on('end', resolve);
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
      expect(fullPathCalls).toBe(2);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
