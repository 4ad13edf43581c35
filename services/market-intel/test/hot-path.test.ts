import { randomInt } from 'node:crypto';
import { buildReport, startHarness, type Harness } from './support/harness';

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
});
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
    expect(h.service.hotPath.size().challenges).toBe(before + 1);
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

  it('When a query is invalid, then every ask is a 400 from the full path and nothing is remembered', async () => {
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
