import { randomInt } from 'node:crypto';
import { createServer, request, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rawGet, type RawAnswer } from '@repo/service-kit/testing';
import { buildReport, startHarness, startReplica, type Harness, type Replica } from './support/harness';

// The x402 hot paths answered from memory (docs/architecture.md, "How a paid request flows"): the
// second identical 402 and every replay after the first are the full path's bytes with a fresh
// request id, and nothing a request could change is served from memory.
let h: Harness;

beforeAll(async () => {
  // References on, as production runs: the 402 carries a per-URL reference.
  h = await startHarness('market_intel_hot_path_test', {
    env: { X402_REFERENCE_SECRET: 'a hot path test reference secret of 32+ bytes' },
  });
  await h.reports.importReport(buildReport(), 'import');
}, 120_000);
afterAll(() => h.close());

/** The response headers that do not depend on the request (its id, and so the body's length), by name. */
function stableHeaders(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!['date', 'x-request-id', 'connection', 'keep-alive', 'content-length'].includes(name))
      out[name] = value;
  });
  return out;
}

interface Challenge402 {
  accepts: { resource: string; extra: { reference: string } }[];
}
const challengeOf = async (path: string) => (await (await fetch(h.baseUrl + path)).json()) as Challenge402;

const eventsOf = (type: string) => h.events.filter((e) => e.type === type).length;

describe('The 402 challenge from memory', () => {
  it('When the same URL is asked twice without payment, then the second 402 has the first one’s bytes but its own request id, and both count as challenges', async () => {
    const url = `${h.baseUrl}/api/v1/scout/trends?days=${randomInt(1, 30)}&limit=3&sector=fintech`;
    const before = h.service.hotPath.size().challenges;
    const challenged = eventsOf('challenged');
    const first = await fetch(url, { headers: { 'x-request-id': 'first-request' } });
    const second = await fetch(url, { headers: { 'x-request-id': 'second-request' } });
    const third = await fetch(url);
    expect([first.status, second.status, third.status]).toEqual([402, 402, 402]);
    // (At most 500 URLs are remembered: then the oldest made room.)
    expect(h.service.hotPath.size().challenges).toBe(Math.min(before + 1, 500));
    expect(eventsOf('challenged')).toBe(challenged + 3);

    const [a, b, c] = [await first.text(), await second.text(), await third.text()];
    expect(second.headers.get('x-request-id')).toBe('second-request');
    expect(JSON.parse(b).requestId).toBe('second-request');
    expect(b).toBe(a.replace('"first-request"', '"second-request"'));
    const generated = third.headers.get('x-request-id') ?? '';
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(c).requestId).toBe(generated);
    expect(stableHeaders(second)).toEqual(stableHeaders(first));
    expect(second.headers.get('payment-required')).toBe(first.headers.get('payment-required'));
    expect(Number(second.headers.get('content-length'))).toBe(Buffer.byteLength(b));
    // helmet's headers came with the bytes.
    expect(second.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('When another URL is asked, then its own 402 (its resource and reference) comes back, not a remembered one', async () => {
    const one = await challengeOf('/api/v1/scout/gaps?limit=2');
    const other = await challengeOf('/api/v1/scout/gaps?limit=3');
    const again = await challengeOf('/api/v1/scout/gaps?limit=2');
    expect(one.accepts[0]?.resource).toBe(`${h.baseUrl}/api/v1/scout/gaps?limit=2`);
    expect(other.accepts[0]?.resource).toBe(`${h.baseUrl}/api/v1/scout/gaps?limit=3`);
    expect(other.accepts[0]?.extra.reference).not.toBe(one.accepts[0]?.extra.reference);
    expect(again.accepts).toEqual(one.accepts);
  });

  it('When a query is invalid, then every ask is a 400 and nothing is remembered', async () => {
    const before = h.service.hotPath.size().challenges;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${h.baseUrl}/api/v1/scout/gaps?limit=500`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe('invalid_request');
    }
    expect(h.service.hotPath.size().challenges).toBe(before);
  });
});

describe('Replays from memory', () => {
  it('When a paid answer is replayed, then every replay has the paid answer’s bytes and counts as a replay, and the payment is charged once', async () => {
    const url = `/api/v1/scout/keywords?limit=${randomInt(1, 200)}`;
    const signature = await h.transfer({ amountAtomic: 50_000n });
    const before = h.service.hotPath.size().replays;
    const replayed = eventsOf('replayed');
    const paid = await h.getWithProof(url, signature);
    expect(paid.status).toBe(200);
    const paidBody = await paid.text();
    const replays = [await h.getWithProof(url, signature), await h.getWithProof(url, signature)];
    for (const replay of replays) {
      expect(replay.status).toBe(200);
      expect(await replay.text()).toBe(paidBody);
      expect(stableHeaders(replay)).toEqual(stableHeaders(paid));
    }
    expect(h.service.hotPath.size().replays).toBe(before + 1);
    expect(eventsOf('replayed')).toBe(replayed + 2);
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/keywords' },
    ]);
  });

  it('When a remembered payment is used on another endpoint or for another network, then the full path refuses it', async () => {
    const url = `/api/v1/scout/gaps?limit=${randomInt(1, 100)}`;
    const signature = await h.transfer({ amountAtomic: 100_000n });
    expect((await h.getWithProof(url, signature)).status).toBe(200);
    expect((await h.getWithProof(url, signature)).status).toBe(200);

    const elsewhere = await h.getWithProof('/api/v1/scout/pain-clusters', signature);
    expect(elsewhere.status).toBe(400);
    expect(((await elsewhere.json()) as { code: string }).code).toBe('payment_reused');
    // The same header asked on devnet names the wrong network: a 402, as the full path answers it.
    const devnet = await h.getWithProof(`${url}&network=devnet`, signature);
    expect(devnet.status).toBe(402);
  });
});

async function listen(listener: RequestListener): Promise<{ server: Server; port: number }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** The values of a sign-in challenge that differ per 402, each checked to be a valid one. */
const FRESH_SIGN_IN = /"(nonce|issuedAt|expirationTime)":"([^"]*)"/g;

/**
 * A `PAYMENT-REQUIRED` decoded, with its sign-in challenge's nonce, `issuedAt` and `expirationTime`
 * (each checked: 128 random bits in hex, a time of issue within the last minute, an expiry 300 s
 * later) put as `*`: everything else byte for byte.
 */
function withoutFreshSignIn(header: string): { text: string; nonce: string | undefined } {
  const fresh: Record<string, string> = {};
  const text = Buffer.from(header, 'base64')
    .toString('utf8')
    .replace(FRESH_SIGN_IN, (_all, name: string, value: string) => {
      fresh[name] = value;
      return `"${name}":"*"`;
    });
  if (fresh.nonce !== undefined) {
    expect(fresh.nonce).toMatch(/^[0-9a-f]{32}$/);
    const issued = Date.parse(fresh.issuedAt ?? '');
    expect(Math.abs(Date.now() - issued)).toBeLessThan(60_000);
    expect(Date.parse(fresh.expirationTime ?? '') - issued).toBe(300_000);
  }
  return { text, nonce: fresh.nonce };
}

/**
 * Everything of an answer that does not depend on when it was sent: with sign-in-with-x, its
 * `PAYMENT-REQUIRED` decoded without the challenge's fresh values ({@link withoutFreshSignIn}).
 */
function stable({ status, headers, body }: RawAnswer) {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
  const required = rest['payment-required'];
  if (typeof required === 'string') rest['payment-required'] = withoutFreshSignIn(required).text;
  return { status, headers: rest, body };
}

// The 402 of a URL never asked, and the 400 of a refused query, answered before Express: the same
// status, headers and bytes as the full path's (the app alone, as with X402_HOT_PATH=false), for the
// same Host and request id; with sign-in-with-x on (a replica configured so, as production runs), but
// for the fresh values of each 402's sign-in challenge.
describe.each([
  { signIn: false, name: 'sign-in-with-x off' },
  { signIn: true, name: 'sign-in-with-x on' },
])('The 402 of a new URL from the route template ($name)', ({ signIn }) => {
  let fullPathCalls = 0;
  let hot: { server: Server; port: number };
  let full: { server: Server; port: number };
  let replica: Replica | undefined;
  let service: Harness['service'];
  const host = 'market-intel.example';

  beforeAll(async () => {
    replica = signIn
      ? await startReplica({
          ...h.config,
          X402_SIGN_IN_WITH_X: true,
          INSTANCE_ID: `test-sign-in-${process.pid}`,
        })
      : undefined;
    service = replica?.service ?? h.service;
    hot = await listen(
      service.hotPath.wrap((req, res) => {
        fullPathCalls += 1;
        service.app(req, res);
      }),
    );
    full = await listen(service.app);
  }, 60_000);
  afterAll(async () => {
    for (const { server } of [hot, full]) await new Promise<void>((resolve) => server.close(() => resolve()));
    await replica?.close();
  });

  /** The same request to the hot path and to the full path alone. */
  const both = async (path: string, id: string) => {
    const headers = { host, 'x-request-id': id };
    return { hot: await rawGet(hot.port, path, headers), full: await rawGet(full.port, path, headers) };
  };

  it('When the first 402 of a route and network was sent, then the 402s of its new URLs and its 400s are the full path’s bytes without the full path', async () => {
    // The first 402 of each route and network takes the full path, which teaches the hot path.
    for (const path of ['/api/v1/scout/gaps', '/api/v1/scout/trends', '/api/v1/scout/keywords'])
      for (const network of ['', '?network=devnet']) {
        const first = await rawGet(hot.port, path + network, { host });
        expect(first.status).toBe(402);
      }
    const learned = service.hotPath.size().routes;
    expect(learned).toBeGreaterThanOrEqual(6);

    const longSector = 'a'.repeat(600);
    const urls: [string, number][] = [
      ['/api/v1/scout/gaps?sector=fintech&limit=7', 402],
      ['/api/v1/scout/gaps?limit=7&sector=fintech', 402],
      ['/api/v1/scout/gaps?network=devnet&limit=3', 402],
      ['/api/v1/scout/gaps?network=solana-devnet', 402],
      ['/api/v1/scout/gaps?network=mainnet&limit=100', 402],
      ['/api/v1/scout/gaps?', 402],
      ['/api/v1/scout/gaps?sector=fin%74ech', 402],
      ['/api/v1/scout/gaps?sector=fintech&&limit=2', 402],
      ['/api/v1/scout/trends?days=30&limit=1&sector=ai', 402],
      ['/api/v1/scout/keywords?limit=200', 402],
      [`/api/v1/scout/gaps?sector=${longSector}`, 400],
      [`/api/v1/scout/gaps?limit=${'0'.repeat(600)}5`, 402],
      // Refused queries: the full path's 400 envelope.
      ['/api/v1/scout/gaps?limit=0', 400],
      ['/api/v1/scout/gaps?limit=7&limit=8', 400],
      ['/api/v1/scout/gaps?sectr=fintech', 400],
      ['/api/v1/scout/gaps?network=mars', 400],
      ['/api/v1/scout/gaps?network=devnet&network=devnet', 400],
      ['/api/v1/scout/trends?days=31', 400],
      ['/api/v1/scout/keywords?limit=201&x=1&y=2', 400],
      ['/api/v1/scout/gaps?limit=%2B5', 400],
      ['/api/v1/scout/gaps?limit=+5', 400],
      ['/api/v1/scout/gaps?sector=%E2%9C%93', 400],
      ['/api/v1/scout/gaps?sector=a%00b', 400],
      ['/api/v1/scout/gaps?sector=%ZZ', 400],
      [`/api/v1/scout/gaps?${Array.from({ length: 300 }, (_, i) => `p${i}=${i}`).join('&')}`, 400],
      [`/api/v1/scout/gaps?limit=${'9'.repeat(4000)}`, 400],
      [`/api/v1/scout/gaps?${'limit=1&'.repeat(500)}`, 400],
    ];
    for (const [i, [url, status]] of urls.entries()) {
      const calls = fullPathCalls;
      const answers = await both(url, `request-${i}`);
      expect({ url, status: answers.hot.status }).toEqual({ url, status });
      expect(fullPathCalls).toBe(calls);
      expect({ url, ...stable(answers.hot) }).toEqual({ url, ...stable(answers.full) });
      // With sign-in on, each 402 has its own challenge, as the full path's has.
      const nonces = [answers.hot, answers.full].map(({ headers }) => {
        const header = headers['payment-required'];
        return typeof header === 'string' ? withoutFreshSignIn(header).nonce : undefined;
      });
      const challenged = signIn && status === 402;
      expect({
        url,
        challenged: nonces.map((nonce) => nonce !== undefined),
        distinct: nonces[0] !== nonces[1],
      }).toEqual({ url, challenged: [challenged, challenged], distinct: challenged });
    }
    // The 402 carries the URL's own resource and reference.
    const [a, b] = await Promise.all(
      ['/api/v1/scout/gaps?limit=11', '/api/v1/scout/gaps?limit=12'].map((url) =>
        rawGet(hot.port, url, { host }).then((r) => JSON.parse(r.body) as Challenge402),
      ),
    );
    expect(a?.accepts[0]?.resource).toBe(`http://${host}/api/v1/scout/gaps?limit=11`);
    expect(a?.accepts[0]?.extra.reference).not.toBe(b?.accepts[0]?.extra.reference);
    expect(service.hotPath.size().routes).toBe(learned);
  });

  it('When a request is one the hot path cannot decide, then the full path answers it, with its own bytes', async () => {
    await rawGet(hot.port, '/api/v1/scout/pain-clusters', { host });
    const undecided = [
      // Forms the router reads otherwise, or the query parser and URL parser might: a fragment,
      // another case, a trailing slash; and the brief, whose 402 needs a brief. (RawAnswer Unicode never
      // reaches a listener: Node's HTTP parser refuses it.)
      '/api/v1/scout/pain-clusters?sector=fintech#x',
      '/api/v1/scout/PAIN-clusters?limit=2',
      '/api/v1/scout/pain-clusters/?limit=2',
      '/api/v1/scout/brief?x=1',
    ];
    for (const [i, url] of undecided.entries()) {
      const calls = fullPathCalls;
      const answers = await both(url, `undecided-${i}`);
      expect({ url, calls: fullPathCalls }).toEqual({ url, calls: calls + 1 });
      expect({ url, ...stable(answers.hot) }).toEqual({ url, ...stable(answers.full) });
    }
    // A HEAD, a payment header, a body: the full path.
    const calls = fullPathCalls;
    const head = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: hot.port,
          path: '/api/v1/scout/pain-clusters?limit=4',
          method: 'HEAD',
          headers: { host },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(head).toBe(402);
    expect(
      (await rawGet(hot.port, '/api/v1/scout/pain-clusters?limit=5', { host, 'x-payment': 'e30=' })).status,
    ).toBe(402);
    // A sign-in proof (malformed here): the full path checks it.
    const proof = await rawGet(hot.port, '/api/v1/scout/pain-clusters?limit=4', {
      host,
      'sign-in-with-x': 'e30=',
    });
    expect(proof.status).toBe(402);
    expect((JSON.parse(proof.body) as { details?: { reason?: string } }).details?.reason).toBe(
      signIn ? 'invalid_siwx_header' : undefined,
    );
    expect(fullPathCalls).toBe(calls + 3);
  });

  it('When a host has not had its first 402 yet, then its new URLs take the full path, and a refused query too', async () => {
    const calls = fullPathCalls;
    const other = 'another-host.example';
    expect((await rawGet(hot.port, '/api/v1/scout/keywords?limit=0', { host: other })).status).toBe(400);
    expect((await rawGet(hot.port, '/api/v1/scout/keywords?limit=3', { host: other })).status).toBe(402);
    expect(fullPathCalls).toBe(calls + 2);
    const again = await rawGet(hot.port, '/api/v1/scout/keywords?limit=4', { host: other });
    const refused = await rawGet(hot.port, '/api/v1/scout/keywords?limit=0', { host: other });
    expect([again.status, refused.status]).toEqual([402, 400]);
    expect(fullPathCalls).toBe(calls + 2);
  });

  it('When a flood of distinct URLs is asked, then what is remembered stays within its bounds', async () => {
    expect((await rawGet(hot.port, '/api/v1/scout/gaps?limit=1', { host })).status).toBe(402);
    const before = service.hotPath.size();
    for (let i = 0; i < 600; i++) {
      const res = await rawGet(hot.port, `/api/v1/scout/gaps?limit=${(i % 100) + 1}&sector=s${i}`, { host });
      expect(res.status).toBe(402);
    }
    const after = service.hotPath.size();
    expect(after.challenges).toBeLessThanOrEqual(500);
    expect(after.routes).toBe(before.routes);
  });
});
