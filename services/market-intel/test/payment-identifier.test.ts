import { Connection, Keypair, VersionedTransaction } from '@solana/web3.js';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import {
  appendPaymentIdentifierToExtensions,
  generatePaymentId,
  PAYMENT_IDENTIFIER,
} from '@x402/extensions/payment-identifier';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import { waitFor } from '@repo/service-kit/testing';
import { encodeBase64Json } from '@repo/x402-core';
import { buildReport, startHarness, startReplica, type Harness, type Replica } from './support/harness';
import { balances, officialClient } from './support/official-client';
import { RpcInterceptor } from './support/rpc-interceptor';
import { startScriptedRunner, type ScriptedRunner } from './support/runner';

// The x402 payment-identifier extension (docs/payments.md, "Retrying safely: payment identifiers"):
// an agent paying with the official client (@x402/fetch + @x402/svm) and an identifier retries after
// a lost answer with a NEW signed transaction under the same identifier, and is charged once.
jest.setTimeout(120_000);

let h: Harness;
let rpc: RpcInterceptor;
let replica: Replica;
let compute: ScriptedRunner | undefined;
const sends = () => rpc.calls.filter((method) => method === 'sendTransaction').length;

beforeAll(async () => {
  h = await startHarness('market_intel_payment_identifier_test');
  await h.reports.importReport(buildReport(), 'import');
  // A replica whose settlements go through an RPC hop the test can hold at sendTransaction.
  rpc = await RpcInterceptor.start(h.rpcUrls.solana);
  replica = await startReplica({
    ...h.config,
    SOLANA_RPC_URL: rpc.url,
    INSTANCE_ID: `test-identifier-${process.pid}`,
  });
}, 180_000);

afterAll(async () => {
  await compute?.close();
  await replica?.close();
  await rpc?.close();
  await h?.close();
});

/** A fresh wallet funded by the ledger with USDC (and SOL, which the official scheme never spends). */
async function wallet(): Promise<Keypair> {
  const payer = Keypair.generate();
  await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana' });
  return payer;
}

/** What an agent sent: the decoded `PAYMENT-SIGNATURE` of each paid request, in order. */
interface Sent {
  payloads: PaymentPayload[];
}

/**
 * `fetch` paying with the official client as `payer` under the payment identifier `id`, as the
 * extension's documentation shows (`onBeforePaymentCreation` + `appendPaymentIdentifierToExtensions`);
 * `sent` records every payment it sends.
 */
async function identifiedFetch(
  payer: Keypair,
  id: string,
  sent: Sent = { payloads: [] },
): Promise<typeof fetch> {
  const client = await officialClient(h, payer);
  client.onBeforePaymentCreation(async ({ paymentRequired }) => {
    if (paymentRequired.extensions) appendPaymentIdentifierToExtensions(paymentRequired.extensions, id);
  });
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const header = request.headers.get('payment-signature');
    if (header)
      sent.payloads.push(JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as PaymentPayload);
    return fetch(request);
  };
  return wrapFetchWithPayment(recording, client);
}

/** The payer's signature of a payload's transaction (the fee payer's, first, is added by the server). */
function payerSignatureOf(payload: PaymentPayload): string {
  const tx = VersionedTransaction.deserialize(Buffer.from(String(payload.payload.transaction), 'base64'));
  return Buffer.from(tx.signatures[1] ?? new Uint8Array()).toString('base64');
}

async function rowsOf(payer: Keypair): Promise<{ signature: string; status: string; endpoint: string }[]> {
  return h.db.$queryRawUnsafe(
    'SELECT signature, status, endpoint FROM x402_payments WHERE payer = $1',
    payer.publicKey.toBase58(),
  );
}

async function paymentRequired(url: string): Promise<PaymentRequired> {
  const res = await fetch(url);
  expect(res.status).toBe(402);
  return JSON.parse(
    Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8'),
  ) as PaymentRequired;
}

describe('Payment identifiers (x402 payment-identifier extension)', () => {
  it('When a paid route answers 402, then PAYMENT-REQUIRED declares the extension (optional), beside bazaar', async () => {
    const required = await paymentRequired(`${h.baseUrl}/api/v1/scout/gaps`);
    expect(required.extensions?.[PAYMENT_IDENTIFIER]).toMatchObject({
      info: { required: false },
      schema: { properties: { id: { minLength: 16, maxLength: 128 } } },
    });
    expect(required.extensions?.bazaar).toBeDefined();
  });

  it('When the agent aborts its request mid-settlement and retries with the same identifier, then the retry (a new transaction) gets the one answer: one settlement, one row, the same PAYMENT-RESPONSE', async () => {
    const payer = await wallet();
    const id = generatePaymentId();
    const url = `${replica.baseUrl}/api/v1/scout/keywords`;
    const before = await balances(h, 'solana', payer);
    const sent: Sent = { payloads: [] };
    const pay = await identifiedFetch(payer, id, sent);
    const sendsBefore = sends();

    // The first settlement waits at the RPC's door while the agent gives up on its request.
    let open: () => void = () => undefined;
    let reached = false;
    const held = rpc.beforeNext('sendTransaction', () => {
      reached = true;
      return new Promise<void>((resolve) => (open = resolve));
    });
    const abort = new AbortController();
    const first = pay(url, { signal: abort.signal });
    await waitFor('the first settlement to reach sendTransaction', async () => (reached ? true : undefined));
    abort.abort();
    await expect(first).rejects.toThrow();
    open();
    await held;
    // The server finishes the aborted request on its own: its answer is stored.
    await waitFor('the aborted payment to be answered', async () =>
      (await rowsOf(payer)).some((r) => r.status === 'completed') ? true : undefined,
    );

    const retry = await pay(url);
    expect(retry.status).toBe(200);
    const again = await pay(url);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(await retry.text());
    // Each retry signed a new transaction; none of them was sent.
    expect(sent.payloads).toHaveLength(3);
    expect(new Set(sent.payloads.map(payerSignatureOf)).size).toBe(3);
    expect(sends() - sendsBefore).toBe(1);

    const rows = await rowsOf(payer);
    expect(rows).toEqual([
      { signature: expect.any(String), status: 'completed', endpoint: 'GET /api/v1/scout/keywords' },
    ]);
    const settlement = decodePaymentResponseHeader(retry.headers.get('payment-response') ?? '');
    expect(settlement).toMatchObject({
      success: true,
      transaction: rows[0]!.signature,
      payer: payer.publicKey.toBase58(),
    });
    expect(again.headers.get('payment-response')).toBe(retry.headers.get('payment-response'));
    const stored = await h.db.$queryRawUnsafe<{ headers: Record<string, string> }[]>(
      'SELECT response_headers AS headers FROM x402_payments WHERE signature = $1',
      rows[0]!.signature,
    );
    expect(stored[0]?.headers['payment-response']).toBe(retry.headers.get('payment-response'));
    const after = await balances(h, 'solana', payer);
    expect(before.payerUsdc - after.payerUsdc).toBe(50_000n);
  });

  it('When a retry arrives while the first settlement is still pending, then it waits for it and gets the same answer; nothing is sent twice', async () => {
    const payer = await wallet();
    const id = generatePaymentId();
    const url = `${replica.baseUrl}/api/v1/scout/trends`;
    const before = await balances(h, 'solana', payer);
    const sent: Sent = { payloads: [] };
    const pay = await identifiedFetch(payer, id, sent);
    const sendsBefore = sends();

    let open: () => void = () => undefined;
    let reached = false;
    const held = rpc.beforeNext('sendTransaction', () => {
      reached = true;
      return new Promise<void>((resolve) => (open = resolve));
    });
    const first = pay(url);
    await waitFor('the first settlement to reach sendTransaction', async () => (reached ? true : undefined));
    let retried: number | undefined;
    const retry = pay(url).then((res) => {
      retried = res.status;
      return res;
    });
    await waitFor('the retry to be sent', async () => (sent.payloads.length === 2 ? true : undefined));
    expect(retried).toBeUndefined();
    open();
    await held;
    const [a, b] = await Promise.all([first, retry]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.headers.get('payment-response')).toBe(a.headers.get('payment-response'));
    expect(await b.text()).toBe(await a.text());
    expect(sends() - sendsBefore).toBe(1);
    expect(await rowsOf(payer)).toHaveLength(1);
    const after = await balances(h, 'solana', payer);
    expect(before.payerUsdc - after.payerUsdc).toBe(100_000n);
  });

  it('When the first settlement outlives its RPC call and a retry reaches another replica, then the retry gets 503 settlement_pending (never a second settlement), and once the first lands a retry gets its answer', async () => {
    const payer = await wallet();
    const id = generatePaymentId();
    const url = '/api/v1/scout/gaps?sector=fintech';
    const before = await balances(h, 'solana', payer);
    const pay = await identifiedFetch(payer, id);
    const sendsBefore = sends();

    // The first settlement's sendTransaction is held past the settler's RPC timeout (10 s): its
    // outcome is unknown to market-intel, and the transaction may still land.
    let open: () => void = () => undefined;
    let reached = false;
    const held = rpc.beforeNext('sendTransaction', () => {
      reached = true;
      return new Promise<void>((resolve) => (open = resolve));
    });
    const first = pay(replica.baseUrl + url);
    await waitFor('the first settlement to reach sendTransaction', async () => (reached ? true : undefined));
    const pending = await pay(h.baseUrl + url);
    expect(pending.status).toBe(503);
    expect(Number(pending.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await pending.json()).toMatchObject({ code: 'service_unavailable' });
    const [row] = await h.db.$queryRawUnsafe<{ signature: string }[]>(
      'SELECT signature FROM x402_payment_identifiers WHERE payer = $1',
      payer.publicKey.toBase58(),
    );
    expect(row).toBeDefined();
    expect(decodePaymentResponseHeader(pending.headers.get('payment-response') ?? '')).toMatchObject({
      success: false,
      errorReason: 'settlement_pending',
      transaction: row!.signature,
      payer: payer.publicKey.toBase58(),
    });
    expect((await first).status).toBeGreaterThanOrEqual(400);

    // The held transaction reaches the chain after all.
    open();
    await held;
    const connection = new Connection(h.rpcUrls.solana, 'confirmed');
    await waitFor(
      'the first transaction to land',
      async () => ((await connection.getSignatureStatuses([row!.signature])).value[0] ? true : undefined),
      15_000,
    );
    // A retry within the not-found cache's 2 s may still be told settlement_pending: the agent retries.
    const answered = await waitFor(
      'a retry to get the answer of the first payment',
      async () => {
        const res = await pay(h.baseUrl + url);
        if (res.status === 503) return undefined;
        return res;
      },
      20_000,
      1_000,
    );
    expect(answered.status).toBe(200);
    expect(decodePaymentResponseHeader(answered.headers.get('payment-response') ?? '')).toMatchObject({
      success: true,
      transaction: row!.signature,
    });
    const again = await pay(replica.baseUrl + url);
    expect(again.headers.get('payment-response')).toBe(answered.headers.get('payment-response'));
    expect(sends() - sendsBefore).toBe(1);
    expect(await rowsOf(payer)).toEqual([
      { signature: row!.signature, status: 'completed', endpoint: 'GET /api/v1/scout/gaps' },
    ]);
    const after = await balances(h, 'solana', payer);
    expect(before.payerUsdc - after.payerUsdc).toBe(100_000n);
  });

  it('When the first payment under an identifier was refused (funds short), then the retry settles its own transaction once', async () => {
    const payer = Keypair.generate();
    await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana', usdcAtomic: 10_000n });
    const id = generatePaymentId();
    const pay = await identifiedFetch(payer, id);
    const url = `${h.baseUrl}/api/v1/scout/keywords?sector=fintech`;
    const refused = await pay(url);
    expect(refused.status).toBe(402);
    // Refused before anything was sent: the attempt leaves no identifier and no payment row behind.
    expect(
      await h.db.$queryRawUnsafe(
        'SELECT 1 FROM x402_payment_identifiers WHERE payer = $1',
        payer.publicKey.toBase58(),
      ),
    ).toEqual([]);
    await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana', usdcAtomic: 100_000n });
    const before = await balances(h, 'solana', payer);
    const retry = await pay(url);
    expect(retry.status).toBe(200);
    const settlement = decodePaymentResponseHeader(retry.headers.get('payment-response') ?? '');
    expect(await rowsOf(payer)).toEqual([
      { signature: settlement.transaction, status: 'completed', endpoint: 'GET /api/v1/scout/keywords' },
    ]);
    const again = await pay(url);
    expect(again.headers.get('payment-response')).toBe(retry.headers.get('payment-response'));
    const after = await balances(h, 'solana', payer);
    expect(before.payerUsdc - after.payerUsdc).toBe(50_000n);
  });

  it('When four retries with one identifier arrive at once, on two replicas, then one settlement answers all four', async () => {
    const payer = await wallet();
    const id = generatePaymentId();
    const before = await balances(h, 'solana', payer);
    const pays = await Promise.all([1, 2, 3, 4].map(() => identifiedFetch(payer, id)));
    const answers = await Promise.all(
      pays.map((pay, i) => pay(`${i % 2 === 0 ? h.baseUrl : replica.baseUrl}/api/v1/scout/pain-clusters`)),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const settlements = new Set(answers.map((r) => r.headers.get('payment-response')));
    expect(settlements.size).toBe(1);
    const bodies = new Set(await Promise.all(answers.map((r) => r.text())));
    expect(bodies.size).toBe(1);
    const rows = await rowsOf(payer);
    expect(rows).toHaveLength(1);
    const after = await balances(h, 'solana', payer);
    expect(before.payerUsdc - after.payerUsdc).toBe(100_000n);
    expect(after.merchantUsdc - before.merchantUsdc).toBe(100_000n);
  });

  it('When the identifier is used again for another request, then 409 payment_identifier_conflict in the error envelope and nothing is charged', async () => {
    const payer = await wallet();
    const id = generatePaymentId();
    const pay = await identifiedFetch(payer, id);
    const paid = await pay(`${h.baseUrl}/api/v1/scout/gaps?limit=5`);
    expect(paid.status).toBe(200);
    const before = await balances(h, 'solana', payer);
    for (const other of ['/api/v1/scout/gaps?limit=6', '/api/v1/scout/trends']) {
      const res = await pay(h.baseUrl + other);
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({
        error: expect.stringContaining('identifier'),
        code: 'payment_identifier_conflict',
        requestId: expect.any(String),
      });
    }
    const after = await balances(h, 'solana', payer);
    expect(after.payerUsdc).toBe(before.payerUsdc);
    expect(await rowsOf(payer)).toHaveLength(1);
    // Another payer may use the same identifier for its own request.
    const other = await identifiedFetch(await wallet(), id);
    expect((await other(`${h.baseUrl}/api/v1/scout/trends`)).status).toBe(200);
  });

  it('When a compute job paid under an identifier is asked again with the same identifier (a lost 202), then the retry is the 409 payment_conflict naming the job, and nothing is charged again', async () => {
    compute = await startScriptedRunner(h, 'identifier');
    const payer = await wallet();
    const id = generatePaymentId();
    const pay = await identifiedFetch(payer, id);
    const ask = () =>
      pay(`${h.baseUrl}/api/v1/prove/debate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ idea: 'A reconciliation copilot for mid-size fintechs' }),
      });
    const before = await balances(h, 'solana', payer);
    const accepted = await ask();
    expect(accepted.status).toBe(202);
    const { jobId } = (await accepted.json()) as { jobId: string };
    const retry = await ask();
    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({ code: 'payment_conflict', details: { jobId } });
    const after = await balances(h, 'solana', payer);
    expect(before.payerUsdc - after.payerUsdc).toBe(25_000_000n);
    expect(await rowsOf(payer)).toHaveLength(1);
  });

  it.each<[string, unknown]>([
    ['an id too short', { info: { required: false, id: 'pay_short' } }],
    ['an id with other characters', { info: { required: false, id: 'pay_7d5d747be160e2 80504c0!' } }],
    ['an id that is not a string', { info: { required: false, id: 1234567890123456 } }],
    ['no info', { schema: {} }],
    ['required not a boolean', { info: { required: 'no', id: generatePaymentId() } }],
    ['a string', 'pay_7d5d747be160e280504c099d984bcfe0'],
  ])(
    'When the payment-identifier extension has %s, then 400 invalid_payment_header before anything is claimed or sent',
    async (_, extension) => {
      const payer = await wallet();
      const url = `${h.baseUrl}/api/v1/scout/keywords`;
      const payload = await (await officialClient(h, payer)).createPaymentPayload(await paymentRequired(url));
      const res = await fetch(url, {
        headers: {
          'PAYMENT-SIGNATURE': encodeBase64Json({
            ...payload,
            extensions: { ...payload.extensions, [PAYMENT_IDENTIFIER]: extension },
          }),
        },
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: 'invalid_payment_header',
        details: { reason: 'invalid_payment_identifier', errors: [expect.any(String)] },
      });
      expect(
        await h.db.$queryRawUnsafe(
          'SELECT 1 FROM x402_payment_identifiers WHERE payer = $1',
          payer.publicKey.toBase58(),
        ),
      ).toEqual([]);
      expect(await rowsOf(payer)).toEqual([]);
    },
  );

  it('When a payment carries no identifier, then it is taken as before and leaves no identifier', async () => {
    const payer = await wallet();
    const pay = wrapFetchWithPayment(fetch, await officialClient(h, payer));
    expect((await pay(`${h.baseUrl}/api/v1/scout/brief`)).status).toBe(200);
    expect(
      await h.db.$queryRawUnsafe(
        'SELECT 1 FROM x402_payment_identifiers WHERE payer = $1',
        payer.publicKey.toBase58(),
      ),
    ).toEqual([]);
  });
});
