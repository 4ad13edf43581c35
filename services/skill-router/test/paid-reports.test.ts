import { randomBytes } from 'node:crypto';
import { bs58, sendUsdcTransfer, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// README, "Reputation": a report that proves its call was paid weighs 1, whatever the
// key, checked on the local Solana ledger with the verifier of @repo/x402-solana.
jest.setTimeout(120_000);

let ledger: Localnet;
let h: Harness;
let owner: string;
let devnet: Localnet['networks']['solana-devnet'];
/** Distinct priority fees keep equal transfers of one payer distinct transactions. */
let fee = 1;

beforeAll(async () => {
  ledger = await spawnLocalnet();
  devnet = ledger.networks['solana-devnet'];
  h = await startHarness('skill_router_paid_reports_test', {
    SOLANA_DEVNET_RPC_URL: devnet.rpcUrl,
    USDC_MINT_DEVNET: devnet.mint,
    PAYMENT_PROOFS_PER_KEY_PER_HOUR: '5',
  });
  owner = await h.createKey('owner');
});
afterAll(async () => {
  await h?.close();
  await ledger?.close();
});

const PRICE_USD = 0.01;
const PRICE_ATOMIC = 10_000n;

async function activeSkill(word: string, payTo: string | null = devnet.merchantTokenAccount) {
  const skill = buildSkill({
    name: `${word} service`,
    description: `Answers questions about ${word} for agents.`,
    capabilities: [word],
    pricing: { model: 'per_call', price_usd: PRICE_USD, ...(payTo ? { pay_to: payTo } : {}) },
  });
  expect((await h.register(owner, skill)).status).toBe(201);
  await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = $1`, skill.skill_id);
  await h.reloadRouting();
  return { id: skill.skill_id, task: `${word} questions` };
}

/** A USDC payment on the devnet ledger from `payer` (the agent or the refund wallet) into `payTo`. */
const pay = (
  payer: 'agent' | 'refundWallet',
  amountAtomic = PRICE_ATOMIC,
  payTo = devnet.merchantTokenAccount,
) =>
  sendUsdcTransfer({
    rpcUrl: devnet.rpcUrl,
    payer: ledger[payer].keypair,
    mint: devnet.mint,
    destinationTokenAccount: payTo,
    amountAtomic,
    computeUnitPriceMicroLamports: fee++,
  });

const report = (key: string, body: Record<string, unknown>) =>
  h.call(
    'POST',
    '/api/discover/report',
    { caller: 'paying-agent', call_result: 'failure', ...body },
    { 'x-api-key': key },
  );

async function scoreOf(task: string, id: string, key: string): Promise<number> {
  const res = await h.call('POST', '/api/discover/route', { task }, { 'x-api-key': key });
  const match = (res.body.matches as { skill_id: string; match_score: number }[]).find(
    (m) => m.skill_id === id,
  );
  if (!match) throw new Error(`${id} not routed`);
  return match.match_score;
}

describe('paid call reports', () => {
  it('When fresh keys report failures with payments of the price from two wallets, then each counts at weight 1 and the score drops; the signature is recorded with its payer', async () => {
    const { id, task } = await activeSkill('orrery');
    const observer = await h.createKey('observer');
    const before = await scoreOf(task, id, observer);

    const first = await pay('agent');
    const a = await h.createKey('payer-a');
    const res = await report(a, { skill_id: id, payment: { network: 'solana-devnet', signature: first } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, counted: true, weight: 1 });
    expect(
      await h.sql(
        'SELECT status, payer, amount_atomic::text AS amount, skill_id FROM report_payments WHERE signature = $1',
        first,
      ),
    ).toEqual([{ status: 'verified', payer: ledger.agent.publicKey, amount: '10000', skill_id: id }]);
    expect(await h.sql('SELECT payment_signature, weight FROM call_reports WHERE skill_id = $1', id)).toEqual(
      [{ payment_signature: first, weight: 1 }],
    );

    const second = await pay('refundWallet');
    const b = await h.createKey('payer-b');
    expect(
      (await report(b, { skill_id: id, payment: { network: 'solana-devnet', signature: second } })).body,
    ).toEqual({
      ok: true,
      counted: true,
      weight: 1,
    });

    const [stats] = await h.sql<{ success_rate_24h: number; calls_30d: number }>(
      'SELECT success_rate_24h, calls_30d FROM skill_stats WHERE skill_id = $1',
      id,
    );
    expect(stats?.calls_30d).toBe(2);
    expect(stats?.success_rate_24h).toBeCloseTo(4.5 / 7, 4);
    const after = await scoreOf(task, id, observer);
    // reliability 0.9 → 0.643 at weight 0.15: 0.0386 lower.
    expect(before - after).toBeGreaterThan(0.035);
  });

  it('When a signature already proved a report, then another report with it is 400 payment_reused and nothing more counts', async () => {
    const { id } = await activeSkill('astrolabe');
    const signature = await pay('agent');
    const a = await h.createKey('reuse-a');
    expect(
      (await report(a, { skill_id: id, payment: { network: 'solana-devnet', signature } })).body.counted,
    ).toBe(true);
    const b = await h.createKey('reuse-b');
    const again = await report(b, { skill_id: id, payment: { network: 'solana-devnet', signature } });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ code: 'payment_reused', requestId: expect.any(String) });
    expect(await h.sql('SELECT count(*)::int AS n FROM call_reports WHERE skill_id = $1', id)).toEqual([
      { n: 1 },
    ]);
  });

  it('When one wallet pays for a second report about the skill within the hour, then the report is kept but does not count', async () => {
    const { id } = await activeSkill('sextant');
    const a = await h.createKey('wallet-once-a');
    const b = await h.createKey('wallet-once-b');
    expect(
      (
        await report(a, {
          skill_id: id,
          payment: { network: 'solana-devnet', signature: await pay('agent') },
        })
      ).body.counted,
    ).toBe(true);
    const second = await report(b, {
      skill_id: id,
      payment: { network: 'solana-devnet', signature: await pay('agent') },
    });
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ ok: true, counted: false, weight: 0 });
  });

  it('When the payment moves another amount, or the signature is on no chain, then 400 invalid_request naming body.payment.signature and the signature is not consumed', async () => {
    const { id } = await activeSkill('quadrant');
    const key = await h.createKey('bad-payer');
    const wrong = await pay('agent', PRICE_ATOMIC * 2n);
    const res = await report(key, { skill_id: id, payment: { network: 'solana-devnet', signature: wrong } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.details.issues).toEqual([
      expect.objectContaining({
        path: 'body.payment.signature',
        message: expect.stringMatching(/^amount_mismatch/),
      }),
    ]);
    const unknown = bs58.encode(randomBytes(64));
    const missing = await report(key, {
      skill_id: id,
      payment: { network: 'solana-devnet', signature: unknown },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.details.issues[0].message).toMatch(/^not_found/);
    expect(
      await h.sql('SELECT signature FROM report_payments WHERE signature = ANY($1)', [wrong, unknown]),
    ).toEqual([]);
    expect(await h.sql('SELECT 1 FROM call_reports WHERE skill_id = $1', id)).toEqual([]);
  });

  it.each([
    [
      'a network the service does not check',
      'body.payment.network',
      { network: 'solana', signature: bs58.encode(randomBytes(64)) },
    ],
    [
      'an unknown network',
      'body.payment.network',
      { network: 'ethereum', signature: bs58.encode(randomBytes(64)) },
    ],
    [
      'a signature that is not base58',
      'body.payment.signature',
      { network: 'solana-devnet', signature: '0OIl'.repeat(22) },
    ],
    [
      'a signature of 63 bytes',
      'body.payment.signature',
      { network: 'solana-devnet', signature: bs58.encode(randomBytes(63)) },
    ],
    [
      'a signature of 10 kB',
      'body.payment.signature',
      { network: 'solana-devnet', signature: '1'.repeat(10_000) },
    ],
    [
      'an extra field',
      'body.payment.amount',
      { network: 'solana-devnet', signature: bs58.encode(randomBytes(64)), amount: 1 },
    ],
    [
      'a base58 signature of 90 kB',
      'body.payment.signature',
      { network: 'solana-devnet', signature: 'z'.repeat(90_000) },
    ],
  ])(
    'When the payment has %s, then 400 invalid_request naming %s and nothing is stored',
    async (_what, path, payment) => {
      const { id } = await activeSkill(`armillary${Math.random().toString(36).slice(2, 6)}`);
      const key = await h.createKey('malformed');
      const res = await report(key, { skill_id: id, payment });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.issues.map((i: { path: string }) => i.path)).toContain(path);
      expect(await h.sql('SELECT 1 FROM call_reports WHERE skill_id = $1', id)).toEqual([]);
    },
  );

  it('When the skill declares no pay_to, then a payment proof is 400 naming body.payment.signature', async () => {
    const { id } = await activeSkill('planisphere', null);
    const key = await h.createKey('no-pay-to');
    const res = await report(key, {
      skill_id: id,
      payment: { network: 'solana-devnet', signature: await pay('agent') },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.issues[0]).toMatchObject({
      path: 'body.payment.signature',
      message: expect.stringMatching(/pay_to/),
    });
  });

  it('When one key offers more payment proofs in an hour than PAYMENT_PROOFS_PER_KEY_PER_HOUR, then 429 rate_limited before any RPC call', async () => {
    const { id } = await activeSkill('gnomon');
    const key = await h.createKey('prober');
    for (let i = 0; i < 5; i++) {
      const res = await report(key, {
        skill_id: id,
        payment: { network: 'solana-devnet', signature: bs58.encode(randomBytes(64)) },
      });
      expect(res.status).toBe(400);
    }
    const limited = await report(key, {
      skill_id: id,
      payment: { network: 'solana-devnet', signature: bs58.encode(randomBytes(64)) },
    });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('When a skill is registered with a pay_to that is not a 32-byte address, then 400 naming body.pricing.pay_to', async () => {
    const skill = buildSkill({
      pricing: { model: 'per_call', price_usd: 0.01, pay_to: bs58.encode(randomBytes(31)) },
    });
    const res = await h.register(owner, skill);
    expect(res.status).toBe(400);
    expect(res.body.details.issues.map((i: { path: string }) => i.path)).toContain('body.pricing.pay_to');
  });
});
