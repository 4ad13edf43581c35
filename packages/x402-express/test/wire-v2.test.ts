import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { decodePaymentResponseHeader, x402Client } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { ExactSvmSchemeV1 } from '@x402/svm/exact/v1/client';
import { Error402 } from '@repo/schemas';
import {
  getAssociatedTokenAddressSync,
  spawnLocalnet,
  waitForSignature,
  type Localnet,
} from '@repo/solana-localnet';
import { CAIP2_NETWORKS, encodeBase64Json } from '@repo/x402-core';
import { buildSignature } from '@repo/x402-core/testing';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import { type PaymentGateway } from '../src/index';
import { buildPaidApp, listen, type HandlerRuns } from './support/app';

// The x402 v2 wire as the official packages read it: PaymentRequired.error carries the reason's code,
// a failed or pending settlement answers PAYMENT-RESPONSE with success false, `accepted` must be the
// offer itself, and an official-scheme payment is bound to its request on chain by extra.memo.
jest.setTimeout(60_000);

const DEVNET = CAIP2_NETWORKS['solana-devnet'] as `${string}:${string}`;
const SECRET = 'a reference secret of at least thirty-two bytes';
let localnet: Localnet;
let db: PgSqlClient;
let server: { url: string; close: () => Promise<void> };
const runs: HandlerRuns = { gaps: 0, keywords: 0, flaky: 0 };
const feePayer = Keypair.generate();
let settler: ExactSvmSettler;
let ledger: PrismaPaymentLedger;

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  db = new PgSqlClient();
  const info = localnet.networks['solana-devnet'];
  const connection = new Connection(info.rpcUrl, 'confirmed');
  await waitForSignature(connection, await connection.requestAirdrop(feePayer.publicKey, LAMPORTS_PER_SOL));
  settler = new ExactSvmSettler({
    network: 'solana-devnet',
    rpcUrl: info.rpcUrl,
    asset: info.mint,
    payTo: info.merchantOwner,
    feePayerSecretKey: feePayer.secretKey,
  });
  // A short wait, so that a payment another replica is settling is answered at once.
  ledger = new PrismaPaymentLedger(db, { waitTimeoutMs: 200 });
  const gateway: PaymentGateway = {
    ledger,
    verifiers: {
      'solana-devnet': new SolanaPaymentVerifier(
        { network: 'solana-devnet', rpcUrl: info.rpcUrl, asset: info.mint, payTo: info.merchantTokenAccount },
        { fetchAttempts: 4, fetchDelayMs: 100, rpcTimeoutMs: 5_000 },
      ),
    },
    settlers: { 'solana-devnet': settler },
    references: { secret: SECRET },
  };
  server = await listen(buildPaidApp(gateway, runs));
});

afterAll(async () => {
  await server?.close();
  await db?.close();
  await localnet?.close();
});

async function paymentRequired(url: string): Promise<PaymentRequired> {
  const res = await fetch(url);
  expect(res.status).toBe(402);
  return PaymentRequiredV2Schema.parse(
    JSON.parse(Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8')),
  ) as PaymentRequired;
}

async function pay(required: PaymentRequired): Promise<PaymentPayload> {
  const client = new x402Client();
  client.register(
    DEVNET,
    new ExactSvmScheme(await createKeyPairSignerFromBytes(localnet.agent.keypair.secretKey), {
      rpcUrl: localnet.networks['solana-devnet'].rpcUrl,
    }),
  );
  client.setSpendControls({
    allowedAssets: [
      { network: DEVNET, asset: localnet.networks['solana-devnet'].mint, maxAmountPerPayment: '1000000' },
    ],
  });
  return client.createPaymentPayload(required);
}

function send(url: string, payload: PaymentPayload): Promise<Response> {
  return fetch(url, { headers: { 'PAYMENT-SIGNATURE': encodeBase64Json(payload) } });
}

async function agentUsdc(): Promise<bigint> {
  const info = localnet.networks['solana-devnet'];
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const ata = getAssociatedTokenAddressSync(new PublicKey(info.mint), localnet.agent.keypair.publicKey, true);
  return BigInt((await connection.getTokenAccountBalance(ata)).value.amount);
}

function requiredOf(res: Response): PaymentRequired {
  return JSON.parse(
    Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8'),
  ) as PaymentRequired;
}

describe('x402 v2 wire', () => {
  it('When a request is offered the official scheme, then its memo is its reference, and a payment made for another request is refused by the facilitator on the memo', async () => {
    const paidFor = `${server.url}/api/v1/scout/gaps?network=devnet&limit=1`;
    const other = `${server.url}/api/v1/scout/gaps?network=devnet&limit=2`;
    const required = await paymentRequired(paidFor);
    const extra = required.accepts[0]?.extra as Record<string, unknown>;
    expect(typeof extra.reference).toBe('string');
    expect(extra.memo).toBe(extra.reference);
    const payload = await pay(required);
    const before = await agentUsdc();

    // Honest about what it accepted: the other request's offer is not the one it paid.
    const declared = await send(other, payload);
    expect(declared.status).toBe(402);
    expect(await declared.json()).toMatchObject({ details: { reason: 'invalid_payment_requirements' } });
    expect(requiredOf(declared).error).toBe('invalid_payment_requirements');

    // Claiming to accept the other request's offer: the transaction's memo gives it away.
    const otherOffer = (await paymentRequired(other)).accepts[0];
    const disguised = await send(other, { ...payload, accepted: otherOffer } as PaymentPayload);
    expect(disguised.status).toBe(402);
    expect(await disguised.json()).toMatchObject({
      details: { reason: 'invalid_exact_svm_payload_memo_mismatch' },
    });
    expect(requiredOf(disguised).error).toBe('invalid_exact_svm_payload_memo_mismatch');
    const settlement = decodePaymentResponseHeader(disguised.headers.get('payment-response') ?? '');
    expect(settlement).toMatchObject({
      success: false,
      errorReason: 'invalid_exact_svm_payload_memo_mismatch',
      network: DEVNET,
      payer: localnet.agent.publicKey,
    });
    expect(typeof settlement.transaction).toBe('string');
    expect(await agentUsdc()).toBe(before);

    const paid = await send(paidFor, payload);
    expect(paid.status).toBe(200);
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response') ?? '')).toMatchObject({
      success: true,
      payer: localnet.agent.publicKey,
    });
    expect(await agentUsdc()).toBe(before - 100_000n);
  });

  it('When a v1 exact SVM client reads the body, then its second requirement is the official scheme in v1 form, and paying it is served', async () => {
    const url = `${server.url}/api/v1/scout/gaps?network=devnet&limit=4`;
    const res = await fetch(url);
    expect(res.status).toBe(402);
    const body = Error402.parse(await res.json());
    const info = localnet.networks['solana-devnet'];
    expect(body.accepts).toHaveLength(2);
    expect(body.accepts[0]).toMatchObject({ payTo: info.merchantTokenAccount });
    const reference = body.accepts[0]?.extra?.reference;
    expect(body.accepts[1]).toEqual({
      scheme: 'exact',
      network: 'solana-devnet',
      maxAmountRequired: '100000',
      asset: info.mint,
      payTo: info.merchantOwner,
      resource: url,
      description: 'Market gaps',
      mimeType: 'application/json',
      maxTimeoutSeconds: 60,
      extra: { feePayer: feePayer.publicKey.toBase58(), reference, memo: reference },
    });
    const v1Client = new ExactSvmSchemeV1(
      await createKeyPairSignerFromBytes(localnet.agent.keypair.secretKey),
      { rpcUrl: info.rpcUrl },
    );
    // The v1 types name the v1 fields; the official v1 client reads maxAmountRequired and payTo.
    const payment = await v1Client.createPaymentPayload(
      1,
      body.accepts[1] as unknown as Parameters<ExactSvmSchemeV1['createPaymentPayload']>[1],
    );
    expect(payment).toMatchObject({ x402Version: 1, scheme: 'exact', network: 'solana-devnet' });
    const before = await agentUsdc();
    const paid = await fetch(url, { headers: { 'X-PAYMENT': encodeBase64Json(payment) } });
    expect(paid.status).toBe(200);
    expect(await agentUsdc()).toBe(before - 100_000n);
  });

  it('When another replica is still settling the payment, then 503 with PAYMENT-RESPONSE success false, settlement_pending', async () => {
    const url = `${server.url}/api/v1/scout/gaps?network=devnet&limit=3`;
    const payload = await pay(await paymentRequired(url));
    const { signature } = await settler.signatureOf(String(payload.payload.transaction));
    // Another replica holds the claim (its lease is fresh).
    const holder = await new PrismaPaymentLedger(db).claim({
      signature,
      network: 'solana-devnet',
      endpoint: 'GET /api/v1/scout/gaps',
      kind: 'sync',
    });
    expect(holder.outcome).toBe('claimed');
    const res = await send(url, payload);
    expect(res.status).toBe(503);
    expect(decodePaymentResponseHeader(res.headers.get('payment-response') ?? '')).toMatchObject({
      success: false,
      errorReason: 'settlement_pending',
      transaction: signature,
      network: DEVNET,
      payer: localnet.agent.publicKey,
    });
    expect(requiredOf(res).error).toBe('service_unavailable');
    expect(await res.json()).toMatchObject({ code: 'service_unavailable' });
  });

  it('When a payment header is malformed or of another version, scheme or network, then PaymentRequired.error is the specification code', async () => {
    const url = `${server.url}/api/v1/scout/gaps?network=devnet`;
    const cases: [unknown, string][] = [
      [{ x402Version: 3 }, 'invalid_x402_version'],
      [{ x402Version: 1, scheme: 'upto', network: 'solana-devnet', payload: {} }, 'unsupported_scheme'],
      [
        { x402Version: 1, scheme: 'exact', network: 'solana', payload: { txSignature: buildSignature() } },
        'invalid_network',
      ],
      [[1, 2, 3], 'invalid_payload'],
    ];
    for (const [payment, reason] of cases) {
      const res = await fetch(url, { headers: { 'X-PAYMENT': encodeBase64Json(payment) } });
      expect(res.status).toBe(402);
      expect(await res.json()).toMatchObject({ details: { reason } });
      expect(requiredOf(res).error).toBe(reason);
      expect(res.headers.get('payment-response')).toBeNull();
    }
  });
});
