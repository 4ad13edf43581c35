import { Error402, PaymentResponse } from '@repo/schemas';
import { waitFor } from '@repo/service-kit/testing';
import { payUsdc, signedPayment, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { decodePaymentResponse, encodePaymentHeader } from '@repo/x402-core';
import { buildSignature } from '@repo/x402-core/testing';
import { type PaymentEvent, type PaymentGateway } from '../src/index';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { SolanaPaymentVerifier } from '@repo/x402-solana';
import { buildPaidApp, listen, type HandlerRuns } from './support/app';

let localnet: Localnet;
let db: PgSqlClient;
let server: { url: string; close: () => Promise<void> };
let events: PaymentEvent[];
let runs: HandlerRuns;
const flaky = { failing: false };

function gatewayFor(rpcUrls?: { solana?: string }): PaymentGateway {
  const verifier = (network: 'solana' | 'solana-devnet', rpcUrl = localnet.networks[network].rpcUrl) =>
    new SolanaPaymentVerifier(
      {
        network,
        rpcUrl,
        asset: localnet.networks[network].mint,
        payTo: localnet.networks[network].merchantTokenAccount,
      },
      { fetchAttempts: 2, fetchDelayMs: 50, rpcTimeoutMs: 2_000 },
    );
  return {
    ledger: new PrismaPaymentLedger(db),
    verifiers: { solana: verifier('solana', rpcUrls?.solana), 'solana-devnet': verifier('solana-devnet') },
    onPaymentEvent: (event) => events.push(event),
  };
}

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  db = new PgSqlClient();
});

afterAll(async () => {
  await db?.close();
  await localnet?.close();
});

beforeEach(() => {
  events = [];
});

function get(path: string, header?: string): Promise<Response> {
  return fetch(`${server.url}${path}`, header === undefined ? {} : { headers: { 'X-PAYMENT': header } });
}

async function rowsOf(signature: string): Promise<Record<string, unknown>[]> {
  return db.$queryRawUnsafe(
    'SELECT status, endpoint, payer, amount_atomic::text AS amount FROM x402_payments WHERE signature = $1',
    signature,
  );
}

// The same behaviour with the verified mark folded into the stored answer and written on its own
// (docs/architecture.md, "Fast paths").
describe.each([true, false])('requirePayment (deferVerifiedMark: %s)', (deferVerifiedMark) => {
  beforeAll(async () => {
    runs = { gaps: 0, keywords: 0, flaky: 0 };
    server = await listen(buildPaidApp({ ...gatewayFor(), deferVerifiedMark }, runs, flaky));
  });
  afterAll(() => server?.close());

  it('When X-PAYMENT is missing, then 402 with the Error402 body, the requirements of the route and x402-version: 1', async () => {
    const res = await get('/api/v1/scout/gaps?limit=5');
    expect(res.status).toBe(402);
    expect(res.headers.get('x402-version')).toBe('1');
    const body = Error402.parse(await res.json());
    expect(body).toMatchObject({
      x402Version: 1,
      code: 'payment_required',
      error: 'X-PAYMENT header is required',
    });
    expect(body.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'solana',
        maxAmountRequired: '100000',
        asset: localnet.networks.solana.mint,
        payTo: localnet.networks.solana.merchantTokenAccount,
        resource: `${server.url}/api/v1/scout/gaps?limit=5`,
        description: 'Market gaps',
        mimeType: 'application/json',
        // What the verifier enforces: its freshness window (300 s by default).
        maxTimeoutSeconds: 300,
      },
    ]);
    expect(events).toEqual([{ type: 'challenged', network: 'solana', endpoint: 'GET /api/v1/scout/gaps' }]);
  });

  it('When the query is invalid, then 400 before any payment is asked or taken', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const res = await get('/api/v1/scout/gaps?limit=0', encodePaymentHeader('solana', signature));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_request' });
    expect(await rowsOf(signature)).toEqual([]);
  });

  it('When ?network=devnet, then the 402 advertises the devnet mint and merchant account', async () => {
    const body = Error402.parse(await (await get('/api/v1/scout/keywords?network=devnet')).json());
    expect(body.accepts[0]).toMatchObject({
      network: 'solana-devnet',
      maxAmountRequired: '50000',
      asset: localnet.networks['solana-devnet'].mint,
      payTo: localnet.networks['solana-devnet'].merchantTokenAccount,
    });
    expect((await get('/api/v1/scout/keywords?network=mars')).status).toBe(400);
  });

  it('When a valid payment is presented, then the handler runs once, X-PAYMENT-RESPONSE names the payer, and a repeat replays the identical answer', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const header = encodePaymentHeader('solana', signature);
    const before = runs.gaps;
    const first = await get('/api/v1/scout/gaps', header);
    expect(first.status).toBe(200);
    expect(first.headers.get('x402-version')).toBe('1');
    const paymentResponse = PaymentResponse.parse(
      decodePaymentResponse(first.headers.get('x-payment-response') ?? ''),
    );
    expect(paymentResponse).toEqual({
      success: true,
      transaction: signature,
      network: 'solana',
      payer: localnet.agent.publicKey,
    });
    const firstBody = await first.text();
    expect(JSON.parse(firstBody).payer).toBe(localnet.agent.publicKey);

    const again = await get('/api/v1/scout/gaps', header);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(firstBody);
    for (const name of ['content-type', 'content-length', 'etag', 'x-payment-response', 'x402-version']) {
      expect(again.headers.get(name)).toBe(first.headers.get(name));
    }
    expect(runs.gaps - before).toBe(1);
    expect(events.map((e) => e.type)).toEqual(['verified', 'replayed']);
    expect(events[0]?.rpcMs).toBeGreaterThan(0);
    expect(await rowsOf(signature)).toEqual([
      {
        status: 'completed',
        endpoint: 'GET /api/v1/scout/gaps',
        payer: localnet.agent.publicKey,
        amount: '100000',
      },
    ]);
  });

  it('When a used signature is presented on another endpoint, then 400 payment_reused', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const header = encodePaymentHeader('solana', signature);
    expect((await get('/api/v1/scout/gaps', header)).status).toBe(200);
    const res = await get('/api/v1/scout/flaky', header);
    expect(res.status).toBe(400);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ code: 'payment_reused' });
    expect(body).not.toHaveProperty('details');
  });

  it('When the amount is wrong, then 400 amount_mismatch and the signature is not consumed', async () => {
    const signature = await payUsdc(localnet, 'solana', 50_000n);
    const header = encodePaymentHeader('solana', signature);
    const res = await get('/api/v1/scout/gaps', header);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: 'amount_mismatch',
      details: { reason: 'amount_mismatch', expected: '100000', actual: '50000' },
    });
    // Not consumed: the row only remembers when the signature was first seen, nothing holds it.
    expect(await rowsOf(signature)).toEqual([
      { status: 'processing', endpoint: 'GET /api/v1/scout/gaps', payer: null, amount: null },
    ]);
    // The same 0.05 USDC pays the 0.05 USDC endpoint.
    expect((await get('/api/v1/scout/keywords', header)).status).toBe(200);
  });

  it('When the transaction has not landed, then 402 not_found and the claim is released; once it lands the same signature pays', async () => {
    const pending = await signedPayment(localnet, 'solana', 100_000n);
    const header = encodePaymentHeader('solana', pending.signature);
    const res = await get('/api/v1/scout/gaps', header);
    expect(res.status).toBe(402);
    expect(res.headers.get('x402-version')).toBe('1');
    const body = Error402.parse(await res.json());
    expect(body.details).toMatchObject({ reason: 'not_found' });
    expect(body.accepts).toHaveLength(1);
    expect(await rowsOf(pending.signature)).toEqual([]);
    await pending.send();
    // A client retrying: "not found" is remembered for a few seconds, then the landed payment pays.
    const runsBefore = runs.gaps;
    await waitFor(
      'the landed payment to be accepted',
      async () => (await get('/api/v1/scout/gaps', header)).status === 200,
      10_000,
      250,
    );
    expect(runs.gaps).toBe(runsBefore + 1);
  });

  it('When a mainnet signature is presented for devnet, then 402 not_found; a header for the wrong network is a 402 naming both networks', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const onDevnet = await get(
      '/api/v1/scout/gaps?network=devnet',
      encodePaymentHeader('solana-devnet', signature),
    );
    expect(onDevnet.status).toBe(402);
    expect(Error402.parse(await onDevnet.json()).details).toMatchObject({ reason: 'not_found' });
    const mismatch = await get('/api/v1/scout/gaps?network=devnet', encodePaymentHeader('solana', signature));
    expect(mismatch.status).toBe(402);
    expect(mismatch.headers.get('x402-version')).toBe('1');
    expect(Error402.parse(await mismatch.json())).toMatchObject({
      code: 'payment_required',
      error: expect.stringContaining('solana-devnet'),
      details: { reason: 'invalid_network', expected: 'solana-devnet', got: 'solana' },
    });
  });

  it('When a devnet payment is presented with ?network=devnet, then it is accepted', async () => {
    const signature = await payUsdc(localnet, 'solana-devnet', 100_000n);
    const res = await get(
      '/api/v1/scout/gaps?network=devnet',
      encodePaymentHeader('solana-devnet', signature),
    );
    expect(res.status).toBe(200);
    expect(decodePaymentResponse(res.headers.get('x-payment-response') ?? '').network).toBe('solana-devnet');
  });

  it('When the header is malformed, then 402 with the Error402 body, the requirements and the problem (payment not acceptable)', async () => {
    const res = await get('/api/v1/scout/gaps', 'bm90IGpzb24=');
    expect(res.status).toBe(402);
    expect(res.headers.get('x402-version')).toBe('1');
    const body = Error402.parse(await res.json());
    expect(body).toMatchObject({
      x402Version: 1,
      error: 'Invalid X-PAYMENT header: the decoded value is not JSON',
      details: { reason: 'invalid_payload' },
    });
    expect(body.accepts[0]).toMatchObject({ maxAmountRequired: '100000' });
    expect(events).toEqual([
      {
        type: 'rejected',
        reason: 'invalid_payment_header',
        network: 'solana',
        endpoint: 'GET /api/v1/scout/gaps',
      },
    ]);
  });

  it('When the handler fails with a 5xx, then the payment stays verified and a retry re-runs the handler without verifying again', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const header = encodePaymentHeader('solana', signature);
    flaky.failing = true;
    const failed = await get('/api/v1/scout/flaky', header);
    expect(failed.status).toBe(500);
    expect((await rowsOf(signature))[0]).toMatchObject({ status: 'verified' });
    flaky.failing = false;
    const retried = await get('/api/v1/scout/flaky', header);
    expect(retried.status).toBe(200);
    expect(await retried.json()).toMatchObject({ ok: true });
    expect(events.filter((e) => e.type === 'verified')).toHaveLength(1);
    expect((await rowsOf(signature))[0]).toMatchObject({ status: 'completed' });
    const replay = await get('/api/v1/scout/flaky', header);
    expect(replay.status).toBe(200);
  });

  it('When 50 concurrent requests carry one new signature, then one verification and one handler run, 49 identical replays, one row', async () => {
    const signature = await payUsdc(localnet, 'solana', 100_000n);
    const header = encodePaymentHeader('solana', signature);
    const before = runs.gaps;
    const responses = await Promise.all(Array.from({ length: 50 }, () => get('/api/v1/scout/gaps', header)));
    const bodies = await Promise.all(responses.map((r) => r.text()));
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(new Set(bodies).size).toBe(1);
    expect(runs.gaps - before).toBe(1);
    expect(events.filter((e) => e.type === 'verified')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'replayed')).toHaveLength(49);
    expect(await rowsOf(signature)).toHaveLength(1);
  });

  it('When the RPC endpoint is unreachable, then 503 service_unavailable with Retry-After and nothing is consumed', async () => {
    const down = await listen(
      buildPaidApp(
        { ...gatewayFor({ solana: 'http://127.0.0.1:1' }), deferVerifiedMark },
        {
          gaps: 0,
          keywords: 0,
          flaky: 0,
        },
      ),
    );
    try {
      const signature = buildSignature();
      const res = await fetch(`${down.url}/api/v1/scout/gaps`, {
        headers: { 'X-PAYMENT': encodePaymentHeader('solana', signature) },
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toMatchObject({
        code: 'service_unavailable',
        details: { reason: 'rpc_unavailable' },
      });
      // Nothing consumed; the first sighting is kept for the retry.
      expect(await rowsOf(signature)).toEqual([
        { status: 'processing', endpoint: 'GET /api/v1/scout/gaps', payer: null, amount: null },
      ]);
    } finally {
      await down.close();
    }
  });
});
