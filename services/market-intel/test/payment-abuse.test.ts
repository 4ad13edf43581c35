import { Keypair } from '@solana/web3.js';
import { metricValue, scrape } from '@repo/service-kit/testing';
import { Error402 } from '@repo/schemas';
import { payUsdc } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { buildSignature } from '@repo/x402-core/testing';
import { buildReport, startHarness, type Harness } from './support/harness';

// The RPC cost of payments that do not verify is bounded per client address across replicas, and a
// payment buys the request it was offered for (docs/payments.md, "Paying for data (x402)").
jest.setTimeout(60_000);

const LIMIT = 4;
let h: Harness;

beforeAll(async () => {
  h = await startHarness('market_intel_payment_abuse_test', {
    env: {
      X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT: String(LIMIT),
      X402_REFERENCE_SECRET: 'a reference secret for the abuse tests',
      TRUST_PROXY: '1',
    },
  });
  await h.reports.importReport(buildReport(), 'import');
});
afterAll(() => h?.close());

function present(path: string, signature: string, ip: string): Promise<Response> {
  return fetch(`${h.baseUrl}${path}`, {
    headers: { 'X-PAYMENT': encodePaymentHeader('solana', signature), 'x-forwarded-for': ip },
  });
}

async function rpcCalls(outcome: string): Promise<number> {
  return (
    metricValue(await scrape(h.metricsUrl), 'x402_rpc_calls_total', {
      network: 'solana',
      method: 'getTransaction',
      outcome,
    }) ?? 0
  );
}

describe('a flood of random signatures', () => {
  it('When one address floods random signatures, then it gets 429s after the limit, RPC calls stay bounded, and another address still pays', async () => {
    const before = await rpcCalls('not_found');
    const flood = await Promise.all(
      Array.from({ length: 12 }, () => present('/api/v1/scout/gaps', buildSignature(), '203.0.113.66')),
    );
    // Each attempt is counted before it is checked on chain, so concurrent ones cannot overrun it.
    const statuses = flood.map((r) => r.status);
    expect(statuses.filter((s) => s === 402)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(12 - LIMIT);
    const refused = flood.find((r) => r.status === 429);
    expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused?.json()).toMatchObject({ code: 'rate_limited' });
    // Four getTransaction attempts per verified signature, none for a refused one.
    expect((await rpcCalls('not_found')) - before).toBeLessThanOrEqual(LIMIT * 4);

    // The flooder stays refused, even with a real payment; another client pays.
    const signature = await payUsdc(h.ledger, 'solana', 100_000n);
    expect((await present('/api/v1/scout/gaps', buildSignature(), '203.0.113.66')).status).toBe(429);
    const other = await present('/api/v1/scout/gaps', signature, '198.51.100.7');
    expect(other.status).toBe(200);
  });

  it('When the flood comes from many addresses of one IPv6 /64, then they share one limit', async () => {
    for (let i = 1; i <= LIMIT; i++) {
      expect((await present('/api/v1/scout/keywords', buildSignature(), `2001:db8:5:6::${i}`)).status).toBe(
        402,
      );
    }
    const sameNetwork = await present('/api/v1/scout/keywords', buildSignature(), '2001:db8:5:6:ffff::1');
    expect(sameNetwork.status).toBe(429);
    const otherNetwork = await present('/api/v1/scout/keywords', buildSignature(), '2001:db8:5:7::1');
    expect(otherNetwork.status).toBe(402);
  });
});

describe('one limit for every attempt of a client', () => {
  it('When a compute preflight has sighted payments of a client, then they count against the limit its paid requests are counted against', async () => {
    const ip = '203.0.113.77';
    for (let i = 0; i < LIMIT; i++) {
      const res = await fetch(`${h.baseUrl}/api/v1/forge/ideate`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'X-PAYMENT': encodePaymentHeader('solana', buildSignature()),
          'x-forwarded-for': ip,
        },
        body: JSON.stringify({}),
      });
      expect(res.status).toBe(503);
    }
    expect((await present('/api/v1/scout/gaps', buildSignature(), ip)).status).toBe(429);
  });

  it('When one client pays more often than its limit, then every payment is served: each verified payment gives its attempt back', async () => {
    for (let i = 0; i <= LIMIT; i++) {
      const signature = await payUsdc(h.ledger, 'solana', 100_000n);
      expect((await present('/api/v1/scout/gaps', signature, '198.51.100.77')).status).toBe(200);
    }
  });
});

describe('the hourly clean-up', () => {
  it('When the payment-sighting pruner runs, then rate-limit counters expired for an hour are deleted and live ones kept', async () => {
    const [old, live] = ['x402_verify_client:solana:192.0.2.10', 'x402_verify_client:solana:192.0.2.11'];
    await h.db.$executeRawUnsafe(
      'INSERT INTO rate_limits (key, points, expire) VALUES ($1, 3, $2::bigint), ($3, 3, $4::bigint)',
      old,
      String(Date.now() - 2 * 3_600_000),
      live,
      String(Date.now() + 60_000),
    );
    const pruner = h.service.loops.find((loop) => loop.name === 'payment-sighting-pruner');
    if (!pruner) throw new Error('no payment-sighting-pruner loop');
    await pruner.kick();
    const rows = await h.db.$queryRawUnsafe<{ key: string }[]>(
      'SELECT key FROM rate_limits WHERE key = ANY($1::text[]) ORDER BY key',
      [old, live],
    );
    expect(rows).toEqual([{ key: live }]);
  });
});

describe('request-bound payments', () => {
  it('When every 402 is read, then its requirement and its PAYMENT-REQUIRED offer carry the same request reference', async () => {
    const res = await fetch(`${h.baseUrl}/api/v1/scout/gaps?limit=2`);
    const reference = Error402.parse(await res.json()).accepts[0]?.extra?.reference;
    expect(typeof reference).toBe('string');
    const header = JSON.parse(
      Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8'),
    );
    expect(header.accepts[0].extra).toMatchObject({ reference, feePayer: expect.any(String) });
  });

  it('When a watcher presents a victim payment on another endpoint, then 402 reference_mismatch, and the victim is then served', async () => {
    const victimPath = '/api/v1/scout/gaps?limit=3';
    const reference = Error402.parse(await (await fetch(`${h.baseUrl}${victimPath}`)).json()).accepts[0]
      ?.extra?.reference as string;
    const signature = await payUsdc(h.ledger, 'solana', 100_000n, { references: [reference] });
    const stolen = await present('/api/v1/scout/pain-clusters', signature, '203.0.113.99');
    expect(stolen.status).toBe(402);
    expect(Error402.parse(await stolen.json()).details).toMatchObject({ reason: 'reference_mismatch' });
    const served = await present(victimPath, signature, '198.51.100.8');
    expect(served.status).toBe(200);
    const payer = Keypair.fromSecretKey(h.agent.secretKey).publicKey.toBase58();
    const rows = await h.db.$queryRawUnsafe<{ status: string; endpoint: string; payer: string }[]>(
      'SELECT status, endpoint, payer FROM x402_payments WHERE signature = $1',
      signature,
    );
    expect(rows).toEqual([{ status: 'completed', endpoint: 'GET /api/v1/scout/gaps', payer }]);
  });
});
