import { randomBytes } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { getBase58Decoder } from '@solana/kit';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import {
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  wrapFetchWithSIWx,
  type SIWxExtension,
} from '@x402/extensions/sign-in-with-x';
import { buildReport, startHarness, startReplica, type Harness, type Replica } from './support/harness';
import { officialFetch } from './support/official-client';
import { signedProof, siwxSignerOf } from './support/sign-in';

// Sign-in proofs are limited per client and per claimed wallet, across replicas, before any is
// checked (docs/payments.md, "Signing in instead of paying again": the limits). Real PostgreSQL (the
// rate_limits table), real ledger; behind one trusted proxy, each test's client is its
// X-Forwarded-For address.
jest.setTimeout(120_000);

const PER_CLIENT = 4;
const PER_ADDRESS = 3;
const PATH = '/api/v1/scout/gaps?limit=2';
let h: Harness;
let replica: Replica;

beforeAll(async () => {
  h = await startHarness('market_intel_sign_in_limits_test', {
    env: {
      X402_SIGN_IN_WITH_X: 'true',
      TRUST_PROXY: '1',
      X402_SIGN_INS_PER_MINUTE_PER_CLIENT: String(PER_CLIENT),
      X402_SIGN_INS_PER_MINUTE_PER_ADDRESS: String(PER_ADDRESS),
    },
  });
  await h.reports.importReport(buildReport(), 'import');
  replica = await startReplica({ ...h.config, INSTANCE_ID: `test-siwx-limits-${process.pid}` });
}, 180_000);

afterAll(async () => {
  await replica?.close();
  await h?.close();
});

/**
 * A proof of `baseUrl`'s fresh challenge claiming `address`, with a well-formed signature that is
 * not the wallet's: checked, it is refused as `invalid_siwx_signature`.
 */
async function forgedProof(baseUrl: string, address: string): Promise<string> {
  const header = (await fetch(baseUrl + PATH)).headers.get('payment-required');
  const challenge = decodePaymentRequiredHeader(header!).extensions?.[SIGN_IN_WITH_X] as SIWxExtension;
  const chain = challenge.supportedChains[0]!;
  return encodeSIWxHeader({
    ...challenge.info,
    chainId: chain.chainId,
    type: chain.type,
    signatureScheme: 'siws',
    address,
    signature: getBase58Decoder().decode(randomBytes(64)),
  });
}

async function signIn(baseUrl: string, client: string, proof: string): Promise<Response> {
  return fetch(baseUrl + PATH, { headers: { 'sign-in-with-x': proof, 'x-forwarded-for': client } });
}

type Envelope = { error?: unknown; code?: unknown; requestId?: unknown; details?: Record<string, unknown> };

describe('Sign-in limits', () => {
  it('When a client sends more proofs in a minute than its limit, then the next is a 429 in the error envelope with Retry-After, before its signature is checked, even a valid one', async () => {
    const client = '203.0.113.10';
    for (let i = 0; i < PER_CLIENT; i++) {
      const res = await signIn(
        h.baseUrl,
        client,
        await forgedProof(h.baseUrl, Keypair.generate().publicKey.toBase58()),
      );
      expect(res.status).toBe(402);
      expect(((await res.json()) as Envelope).details?.reason).toBe('invalid_siwx_signature');
    }

    const payer = Keypair.generate();
    const valid = await signedProof(payer, h.baseUrl + PATH);
    const refused = await signIn(h.baseUrl, client, valid);

    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    const body = (await refused.json()) as Envelope;
    expect(body).toMatchObject({
      code: 'rate_limited',
      details: { reason: 'siwx_rate_limited', limit: 'client' },
    });
    expect(typeof body.error).toBe('string');
    expect(typeof body.requestId).toBe('string');
    expect(decodePaymentRequiredHeader(refused.headers.get('payment-required')!).error).toBe(
      'siwx_rate_limited',
    );
    // Not checked: its nonce was never used.
    const nonces = await h.db.$queryRawUnsafe<{ n: number }[]>(
      'SELECT count(*)::int AS n FROM x402_siwx_nonces WHERE address = $1',
      payer.publicKey.toBase58(),
    );
    expect(nonces).toEqual([{ n: 0 }]);
  });

  it('When proofs claiming one wallet come from several clients through two replicas, then past the per-wallet limit the next is a 429 naming the address limit', async () => {
    const claimed = Keypair.generate().publicKey.toBase58();
    const origins = [h.baseUrl, replica.baseUrl, h.baseUrl];
    for (const [i, baseUrl] of origins.entries()) {
      const res = await signIn(baseUrl, `198.51.100.${i + 1}`, await forgedProof(baseUrl, claimed));
      expect(res.status).toBe(402);
    }

    const refused = await signIn(
      replica.baseUrl,
      '198.51.100.9',
      await forgedProof(replica.baseUrl, claimed),
    );

    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toMatchObject({
      code: 'rate_limited',
      details: { reason: 'siwx_rate_limited', limit: 'address' },
    });
  });

  it('When a proof names no Solana address, then it is a 402 invalid_siwx_address and counts toward no limit', async () => {
    const client = '203.0.113.20';
    for (let i = 0; i < PER_CLIENT + 1; i++) {
      const res = await signIn(h.baseUrl, client, await forgedProof(h.baseUrl, 'x'.repeat(300)));
      expect(res.status).toBe(402);
      expect(((await res.json()) as Envelope).details?.reason).toBe('invalid_siwx_address');
    }
  });

  it('When the payer signs in under the limits, then it gets what it paid for again without paying', async () => {
    const payer = Keypair.generate();
    await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana' });
    const paid = await (await officialFetch(h, payer))(h.baseUrl + PATH);
    expect(paid.status).toBe(200);
    const paidBody = await paid.text();

    const again = await wrapFetchWithSIWx(fetch, await siwxSignerOf(payer))(h.baseUrl + PATH);

    expect(again.status).toBe(200);
    expect(await again.text()).toBe(paidBody);
    expect(again.headers.get('payment-response')).toBeNull();
  });
});
