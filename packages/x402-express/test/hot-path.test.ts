import { createServer, request, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHotPath, type AnswerStoredListener, type PaymentEvent } from '../src/index';

// The hot path's own rules, against a stand-in for the full path that counts what reaches it and
// tells `onAnswerStored` of its paid answers, as requirePayment does with that option.
let fullPathCalls = 0;
const fullPath =
  (onAnswerStored: AnswerStoredListener): RequestListener =>
  (req, res) => {
    fullPathCalls += 1;
    const id =
      typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : `id-${fullPathCalls}`;
    res.setHeader('x-request-id', id);
    res.setHeader('x-content-type-options', 'nosniff');
    if (req.headers['x-payment'] === undefined) {
      res.statusCode = 402;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(
        JSON.stringify({
          x402Version: 1,
          accepts: [{ network: 'solana', resource: req.url }],
          requestId: id,
        }),
      );
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
