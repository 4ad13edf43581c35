import { Keypair } from '@solana/web3.js';
import type { PaymentPayload } from '@x402/core/types';
import { waitFor } from '@repo/service-kit/testing';
import { buildReport, startHarness, type Harness, type Replica } from './support/harness';
import {
  balances,
  fundedWallet,
  interceptedReplica,
  officialPayload,
  sendPayment as send,
} from './support/official-client';
import type { RpcInterceptor } from './support/rpc-interceptor';

// Official-scheme settlements cost the fee payer its fee even when the transaction then fails on
// chain, so their limits must count only what a payer really signed, and a payer settles one payment
// at a time (docs/payments.md, "Paying with an official x402 client").
jest.setTimeout(60_000);

let h: Harness;

beforeAll(async () => {
  h = await startHarness('market_intel_settlement_in_flight_test', {
    env: { X402_SETTLEMENTS_PER_MINUTE_PER_PAYER: '2', X402_SETTLEMENTS_PER_MINUTE_PER_CLIENT: '50' },
  });
  await h.reports.importReport(buildReport(), 'import');
});
afterAll(() => h?.close());

const wallet = () => fundedWallet(h);

/** What the official client pays `url` with, as `payer`. */
const payloadFor = (url: string, payer: Keypair) => officialPayload(h, url, payer);

/** `payload` with the payer's signature (the transaction's second one) replaced by `bytes`. */
function withPayerSignature(payload: PaymentPayload, bytes: (signature: Buffer) => Buffer): PaymentPayload {
  const wire = Buffer.from(String(payload.payload.transaction), 'base64');
  expect(wire[0]).toBe(2); // compact-u16 count of signatures: fee payer, payer
  bytes(wire.subarray(65, 129)).copy(wire, 65);
  return { ...payload, payload: { ...payload.payload, transaction: wire.toString('base64') } };
}

describe('Settlement limits count only what the payer signed', () => {
  it('When transactions naming a victim but not signed by it arrive, then each is refused before any limit is charged, and the victim still pays', async () => {
    const victim = await wallet();
    const url = `${h.baseUrl}/api/v1/scout/keywords`;
    const before = await balances(h, 'solana', victim);
    // More than the per-payer limit (2), with the signature missing or forged.
    const forged = [
      withPayerSignature(await payloadFor(url, victim), (s) => Buffer.alloc(s.length)),
      withPayerSignature(await payloadFor(url, victim), (s) =>
        Buffer.from(s.map((b, i) => (i === 0 ? b ^ 1 : b))),
      ),
      withPayerSignature(await payloadFor(url, victim), (s) => Buffer.alloc(s.length, 7)),
    ];
    for (const payload of forged) {
      const res = await send(url, payload);
      expect(res.status).toBe(402);
      expect(await res.json()).toMatchObject({
        code: 'payment_required',
        details: { reason: 'invalid_exact_svm_payload_signature_invalid' },
      });
    }
    const rows = await h.db.$queryRawUnsafe<{ n: number }[]>(
      'SELECT count(*)::int AS n FROM x402_payments WHERE payer = $1',
      victim.publicKey.toBase58(),
    );
    expect(rows).toEqual([{ n: 0 }]);

    const paid = await send(url, await payloadFor(url, victim));
    expect(paid.status).toBe(200);
    const after = await balances(h, 'solana', victim);
    expect(before.payerUsdc - after.payerUsdc).toBe(50_000n);
  });
});

describe('One settlement in flight per payer', () => {
  let intercepted: Awaited<ReturnType<typeof interceptedReplica>>;
  let rpc: RpcInterceptor;
  let replica: Replica;
  const sends = () => rpc.calls.filter((method) => method === 'sendTransaction').length;

  beforeAll(async () => {
    intercepted = await interceptedReplica(h, 'gated', { X402_SETTLEMENTS_PER_MINUTE_PER_PAYER: 10 });
    ({ rpc, replica } = intercepted);
  });
  afterAll(() => intercepted?.close());

  it('When one wallet sends four payments at once, then one is settled and the others are refused before anything is sent', async () => {
    const payer = await wallet();
    const url = `${replica.baseUrl}/api/v1/scout/keywords`;
    const payloads = await Promise.all([1, 2, 3, 4].map(() => payloadFor(url, payer)));
    const before = await balances(h, 'solana', payer);

    // The first settlement waits at the RPC's door until the test opens it.
    let open: () => void = () => undefined;
    const held = rpc.beforeNext('sendTransaction', () => new Promise<void>((resolve) => (open = resolve)));
    const answered: (number | undefined)[] = [];
    const answers = payloads.map((payload, i) =>
      send(url, payload).then((res) => {
        answered[i] = res.status;
        return res;
      }),
    );
    await waitFor('three refusals while one settlement is in flight', async () =>
      answered.filter((s) => s === 429).length === 3 && sends() === 1 ? true : undefined,
    );
    expect(answered.filter((s) => s !== undefined)).toHaveLength(3);
    open();
    await held;
    const statuses = await Promise.all(answers.map((a) => a.then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    for (const [i, answer] of answers.entries()) {
      if (statuses[i] !== 429) continue;
      const res = await answer;
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toMatchObject({ code: 'rate_limited', details: { limit: 'payer_in_flight' } });
    }
    expect(sends()).toBe(1);
    const after = await balances(h, 'solana', payer);
    expect(before.payerUsdc - after.payerUsdc).toBe(50_000n);
    const rows = await h.db.$queryRawUnsafe<{ status: string }[]>(
      'SELECT status FROM x402_payments WHERE payer = $1',
      payer.publicKey.toBase58(),
    );
    expect(rows).toEqual([{ status: 'completed' }]);

    // The slot was given back: the next payment settles.
    const next = await send(url, await payloadFor(url, payer));
    expect(next.status).toBe(200);
  });
});
