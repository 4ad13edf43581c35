import { Keypair } from '@solana/web3.js';
import { callRpc, createTestMint, fundWallet, mintTestTokens } from '@repo/solana-localnet';
import { Error402 } from '@repo/schemas';
import { buildReport, startHarness, type Harness } from './support/harness';

// The x402 payment rules (docs/payments.md, "Paying with our client"; services/market-intel/README.md,
// "Paying, in three steps"), each paid with a real signed transferChecked on the local ledger.
let h: Harness;

beforeAll(async () => {
  h = await startHarness('market_intel_payment_rules_test');
  await h.reports.importReport(buildReport(), 'import');
});
afterAll(() => h.close());

const GAPS = '/api/v1/scout/gaps?sector=fintech';
/** A refused payment is not consumed: its row only remembers when it was first seen, nothing holds it. */
const UNCONSUMED = { status: 'processing', endpoint: 'GET /api/v1/scout/gaps' };

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

async function merchantBalance(network: 'solana' | 'solana-devnet' = 'solana'): Promise<bigint> {
  const res = await fetch(h.rpcUrls[network], {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'getTokenAccountBalance',
      params: [h.ledger.networks[network].merchantTokenAccount],
    }),
  });
  const body = (await res.json()) as { result: { value: { amount: string } } };
  return BigInt(body.result.value.amount);
}

describe('x402 payment rules', () => {
  it('When the same signature is sent again to the same endpoint, then the stored answer is replayed and nothing is charged again', async () => {
    const signature = await h.transfer({ amountAtomic: 100_000n });
    h.events.length = 0;
    const first = await h.getWithProof(GAPS, signature);
    const firstBody = await first.text();
    expect(first.status).toBe(200);
    const again = await h.getWithProof(GAPS, signature);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get('x-payment-response')).toBe(first.headers.get('x-payment-response'));
    // Charged once: the payment was verified once, and the second request only replayed it.
    expect(h.events.filter((e) => e.type === 'verified')).toHaveLength(1);
    expect(h.events.filter((e) => e.type === 'replayed')).toHaveLength(1);
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/gaps' },
    ]);
  });

  it('When a used signature asks other parameters of the same endpoint, then 400 payment_reused: its answer goes only to the request it paid for', async () => {
    const signature = await h.transfer({ amountAtomic: 100_000n });
    const first = await (await h.getWithProof('/api/v1/scout/gaps?limit=1', signature)).text();
    const other = await h.getWithProof('/api/v1/scout/gaps?limit=2', signature);
    expect(other.status).toBe(400);
    expect(await json(other)).toMatchObject({ code: 'payment_reused' });
    expect(await (await h.getWithProof('/api/v1/scout/gaps?limit=1', signature)).text()).toBe(first);
  });

  it('When the signature was used on another endpoint, then 400 payment_reused', async () => {
    const signature = await h.transfer({ amountAtomic: 100_000n });
    expect((await h.getWithProof(GAPS, signature)).status).toBe(200);
    const res = await h.getWithProof('/api/v1/scout/trends', signature);
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({
      code: 'payment_reused',
      error: expect.any(String),
      requestId: expect.any(String),
    });
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/gaps' },
    ]);
  });

  it('When the amount differs from the price, then 400 amount_mismatch and nothing is consumed', async () => {
    const signature = await h.transfer({ amountAtomic: 99_999n });
    const res = await h.getWithProof(GAPS, signature);
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe('amount_mismatch');
    expect(await h.paymentRows(signature)).toEqual([UNCONSUMED]);
  });

  it('When the keywords price is paid to the gaps endpoint, then 400 amount_mismatch', async () => {
    const signature = await h.transfer({ amountAtomic: 50_000n });
    expect((await json(await h.getWithProof(GAPS, signature))).code).toBe('amount_mismatch');
  });

  it('When another mint is transferred to the merchant, then 400 mint_mismatch', async () => {
    const rpcUrl = h.rpcUrls.solana;
    const { mint, mintAuthority } = await createTestMint({ rpcUrl, decimals: 6 });
    await mintTestTokens({
      rpcUrl,
      mint,
      mintAuthority,
      owner: h.agent.publicKey.toBase58(),
      amountAtomic: 1_000_000n,
    });
    const merchant = await mintTestTokens({
      rpcUrl,
      mint,
      mintAuthority,
      owner: h.ledger.networks.solana.merchantOwner,
      amountAtomic: 0n,
    });
    const signature = await h.transfer({ amountAtomic: 100_000n, mint, to: merchant.tokenAccount });
    const res = await h.getWithProof(GAPS, signature);
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe('mint_mismatch');
    expect(await h.paymentRows(signature)).toEqual([UNCONSUMED]);
  });

  it('When the payment went to another account, then 402 with the requirements again and nothing is consumed', async () => {
    const stranger = Keypair.generate().publicKey.toBase58();
    const { tokenAccount } = await fundWallet({ rpcUrl: h.rpcUrls.solana, owner: stranger, usdcAtomic: 0n });
    const signature = await h.transfer({ amountAtomic: 100_000n, to: tokenAccount });
    const res = await h.getWithProof(GAPS, signature);
    expect(res.status).toBe(402);
    expect(res.headers.get('x402-version')).toBe('1');
    expect(await json(res)).toMatchObject({
      x402Version: 1,
      accepts: [
        expect.objectContaining({ payTo: h.ledger.networks.solana.merchantTokenAccount }),
        expect.objectContaining({ payTo: h.ledger.networks.solana.merchantOwner }),
      ],
    });
    expect(await h.paymentRows(signature)).toEqual([UNCONSUMED]);
  });

  it('When a payment landed longer ago than PAYMENT_FRESHNESS_SECONDS (600) before market-intel first saw it, then 402 stale and nothing is consumed; one inside the window is served', async () => {
    expect(h.config.PAYMENT_FRESHNESS_SECONDS).toBe(600);
    /** A gaps payment whose block time lies `offsetSeconds` from now (the ledger's clock is shifted). */
    const paidAt = async (offsetSeconds: number): Promise<string> => {
      await callRpc(h.rpcUrls.solana, 'localnet_setClockOffset', [offsetSeconds]);
      try {
        return await h.transfer({ amountAtomic: 100_000n });
      } finally {
        await callRpc(h.rpcUrls.solana, 'localnet_setClockOffset', [0]);
      }
    };
    const old = await paidAt(-700);
    const refused = await h.getWithProof(GAPS, old);
    expect(refused.status).toBe(402);
    expect(await json(refused)).toMatchObject({ x402Version: 1, details: { reason: 'stale' } });
    expect(await h.paymentRows(old)).toEqual([UNCONSUMED]);

    const recent = await paidAt(-500);
    expect((await h.getWithProof(GAPS, recent)).status).toBe(200);
    expect(await h.paymentRows(recent)).toEqual([
      { status: 'completed', endpoint: 'GET /api/v1/scout/gaps' },
    ]);
  });

  it('When the transaction failed on chain, then 402 and nothing is consumed', async () => {
    const signature = await h.transfer({ amountAtomic: 10n ** 15n, skipPreflight: true });
    const res = await h.getWithProof(GAPS, signature);
    expect(res.status).toBe(402);
    expect(await json(res)).toMatchObject({ x402Version: 1, error: expect.stringMatching(/fail/i) });
    expect(await h.paymentRows(signature)).toEqual([UNCONSUMED]);
  });

  it('When the signature is unknown, then 402 and the claim is released', async () => {
    const unknown = '5'.repeat(87);
    const res = await h.getWithProof(GAPS, unknown);
    expect(res.status).toBe(402);
    expect(await h.paymentRows(unknown)).toEqual([]);
  }, 60_000);

  it.each([
    ['not base64 nor JSON', '%%%'],
    [
      'JSON of the wrong version',
      JSON.stringify({ x402Version: 2, scheme: 'exact', network: 'solana', payload: { txSignature: '1' } }),
    ],
    [
      'a signature that is not 64 bytes',
      Buffer.from(
        JSON.stringify({
          x402Version: 1,
          scheme: 'exact',
          network: 'solana',
          payload: { txSignature: 'abc' },
        }),
      ).toString('base64'),
    ],
  ])(
    'When X-PAYMENT is %s, then 402 with the Error402 body naming the problem (docs/payments.md, "Paying with our client")',
    async (_name, header) => {
      const res = await fetch(h.baseUrl + GAPS, { headers: { 'X-PAYMENT': header } });
      expect(res.status).toBe(402);
      expect(res.headers.get('x402-version')).toBe('1');
      expect(Error402.parse(await json(res))).toMatchObject({
        x402Version: 1,
        accepts: [
          expect.objectContaining({ maxAmountRequired: '100000' }),
          expect.objectContaining({ maxAmountRequired: '100000' }),
        ],
        error: expect.stringMatching(/^Invalid X-PAYMENT header: /),
        details: { reason: 'invalid_payload' },
        requestId: expect.any(String),
      });
    },
  );

  it('When network=devnet, then a devnet payment is accepted and a main-network proof is refused', async () => {
    const devnetSig = await h.transfer({ amountAtomic: 100_000n, network: 'solana-devnet' });
    const ok = await h.getWithProof(`${GAPS}&network=devnet`, devnetSig, 'solana-devnet');
    expect(ok.status).toBe(200);
    const mainSig = await h.transfer({ amountAtomic: 100_000n });
    const refused = await h.getWithProof(`${GAPS}&network=devnet`, mainSig, 'solana-devnet');
    expect(refused.status).toBe(402);
    const mismatched = await h.getWithProof(`${GAPS}&network=devnet`, mainSig, 'solana');
    expect(mismatched.status).toBe(402);
    expect(await json(mismatched)).toMatchObject({ details: { reason: 'invalid_network' } });
  }, 60_000);

  it('Race: When 50 requests carry one new signature at once, then one is processed, 49 replay it, and one row exists', async () => {
    const before = await merchantBalance();
    const signature = await h.transfer({ amountAtomic: 100_000n });
    h.events.length = 0;
    const answers = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await h.getWithProof(GAPS, signature);
        return { status: res.status, body: await res.text() };
      }),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    const rows = await h.db.$queryRawUnsafe<{ n: bigint }[]>(
      'SELECT count(*) AS n FROM x402_payments WHERE signature = $1',
      signature,
    );
    expect(Number(rows[0]?.n)).toBe(1);
    expect(await merchantBalance()).toBe(before + 100_000n);
    expect(h.events.filter((e) => e.type === 'verified')).toHaveLength(1);
    expect(h.events.filter((e) => e.type === 'replayed')).toHaveLength(49);
  }, 60_000);
});
