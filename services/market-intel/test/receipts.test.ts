import { createHash } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import type { PaymentRequired } from '@x402/core/types';
import {
  decodeSignedOffers,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureJWS,
  verifyReceiptSignatureJWS,
  type JWSSignedOffer,
  type JWSSignedReceipt,
} from '@x402/extensions/offer-receipt';
import { decodePaymentResponseHeader } from '@x402/fetch';
import { canonicalRequestText, CAIP2_NETWORKS, requestHash, sha256Hex } from '@repo/x402-core';
import {
  ReceiptIssuer,
  receiptOfSettlement,
  verifyReceipt,
  type ReceiptKeySet,
} from '@repo/x402-core/receipts';
import { buildReport, startHarness, startReplica, type Harness, type Replica } from './support/harness';
import { officialFetch } from './support/official-client';
import { receiptRefusal as refusal } from '@repo/x402-core/testing';

// Signed offers and receipts (x402 offer-receipt; docs/payments.md, "Signed offers and receipts"):
// the 402's offer and the paid answer's receipt are JWS signed with X402_RECEIPT_SIGNING_KEY, and the
// keys (with X402_RECEIPT_PREVIOUS_KEYS) are published at /.well-known/jwks.json and did.json. Paid
// with the official client and in push mode on the local ledger; checked with @x402/extensions.
jest.setTimeout(120_000);

const previousKey = ReceiptIssuer.generateKey();
const currentKey = ReceiptIssuer.generateKey();
let h: Harness;
let old: Replica | undefined;

beforeAll(async () => {
  h = await startHarness('market_intel_receipts_test', {
    env: { X402_RECEIPT_SIGNING_KEY: currentKey, X402_RECEIPT_PREVIOUS_KEYS: previousKey },
  });
  await h.reports.importReport(buildReport(), 'import');
}, 180_000);

afterAll(async () => {
  await old?.close();
  await h?.close();
});

async function keySet(): Promise<ReceiptKeySet> {
  const res = await fetch(`${h.baseUrl}/.well-known/jwks.json`);
  expect(res.status).toBe(200);
  return (await res.json()) as ReceiptKeySet;
}

function decoded(header: string | null): Record<string, unknown> {
  return JSON.parse(Buffer.from(header ?? '', 'base64').toString('utf8')) as Record<string, unknown>;
}

/** The request hash a payer computes for a GET without a body (docs/payments.md, "Request-bound payments"). */
function getHash(pathAndQuery: string): string {
  const url = new URL(pathAndQuery, 'http://x');
  return requestHash(
    canonicalRequestText({
      method: 'GET',
      path: url.pathname,
      query: url.searchParams,
      bodySha256: sha256Hex(JSON.stringify(null)),
    }),
  );
}

describe('Signed offers and receipts (x402 offer-receipt)', () => {
  it('When a paid route answers 402, then PAYMENT-REQUIRED carries the offer of its requirement, signed, which the extension verifies through did:web and matches to accepts[0]; another query gets the same offer', async () => {
    const path = '/api/v1/scout/gaps';
    const first = await fetch(`${h.baseUrl}${path}?limit=2`);
    const second = await fetch(`${h.baseUrl}${path}?limit=3&sector=fintech`);
    expect(first.status).toBe(402);
    const required = decoded(first.headers.get('payment-required')) as unknown as PaymentRequired;
    const offers = extractOffersFromPaymentRequired(required);
    expect(offers).toHaveLength(1);
    expect(
      extractOffersFromPaymentRequired(decoded(second.headers.get('payment-required')) as never),
    ).toEqual(offers);
    // No key given: the extension resolves the kid's did:web document from this service.
    const terms = await verifyOfferSignatureJWS(offers[0] as JWSSignedOffer);
    expect(terms).toEqual({
      version: 1,
      resourceUrl: `${h.baseUrl}${path}`,
      scheme: 'exact',
      network: CAIP2_NETWORKS.solana,
      asset: h.ledger.networks.solana.mint,
      payTo: h.ledger.networks.solana.merchantOwner,
      amount: '100000',
    });
    const [offer] = decodeSignedOffers(offers);
    expect(findAcceptsObjectFromSignedOffer(offer!, required.accepts)).toBe(required.accepts[0]);
  });

  it('When the official client pays, then the answer carries a receipt the extension verifies and that states the transaction, payer, amount, request and body', async () => {
    const payer = Keypair.generate();
    await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana' });
    const pay = await officialFetch(h, payer);
    const path = '/api/v1/scout/keywords?limit=3';
    const res = await pay(`${h.baseUrl}${path}`);
    expect(res.status).toBe(200);
    const body = Buffer.from(await res.arrayBuffer());
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    const receipt = extractReceiptFromResponse(res) as JWSSignedReceipt;
    expect(receipt.format).toBe('jws');
    // The extension's own check, the key resolved through did:web.
    const signed = await verifyReceiptSignatureJWS(receipt);
    expect(signed).toMatchObject({
      version: 1,
      network: CAIP2_NETWORKS.solana,
      resourceUrl: `${h.baseUrl}${path}`,
      payer: payer.publicKey.toBase58(),
      transaction: settlement.transaction,
    });
    // Ours, against the published key set, with the body and the request.
    const keys = await keySet();
    const { payload, key } = await verifyReceipt(receipt, { keys, body, requestHash: getHash(path) });
    expect(key.kid).toBe(keys.keys[0]!.kid);
    expect(payload).toMatchObject({
      amount: '50000',
      asset: h.ledger.networks.solana.mint,
      responseSha256: createHash('sha256').update(body).digest('hex'),
    });
    expect(Math.abs(payload.issuedAt - Date.now() / 1000)).toBeLessThan(60);
    // The v1 settlement header carries the same receipt.
    expect(receiptOfSettlement(decoded(res.headers.get('x-payment-response')))).toEqual(receipt);
  });

  it('When a receipt or the body is tampered with, then it is refused', async () => {
    const signature = await h.transfer({ amountAtomic: 100_000n });
    const path = '/api/v1/scout/gaps?limit=1';
    const res = await h.getWithProof(path, signature);
    expect(res.status).toBe(200);
    const body = await res.text();
    const receipt = receiptOfSettlement(decoded(res.headers.get('x-payment-response'))) as JWSSignedReceipt;
    const keys = await keySet();
    expect((await verifyReceipt(receipt, { keys, body })).payload.transaction).toBe(signature);

    const [header, payload, sig] = receipt.signature.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, amount: '1000000000' })).toString('base64url');
    const tampered = { format: 'jws' as const, signature: `${header}.${forged}.${sig}` };
    expect(await refusal(verifyReceipt(tampered, { keys, body }))).toBe('bad_signature');
    await expect(verifyReceiptSignatureJWS(tampered)).rejects.toThrow();
    expect(await refusal(verifyReceipt(receipt, { keys, body: body.replace('[', '[ ') }))).toBe(
      'body_mismatch',
    );
    expect(
      await refusal(verifyReceipt(receipt, { keys, body, requestHash: getHash('/api/v1/scout/gaps') })),
    ).toBe('request_mismatch');
  });

  it('When a paid answer is replayed, then it carries the very receipt stored with it', async () => {
    const signature = await h.transfer({ amountAtomic: 100_000n });
    const path = '/api/v1/scout/pain-clusters?limit=2';
    const first = await h.getWithProof(path, signature);
    expect(first.status).toBe(200);
    const again = await h.getWithProof(path, signature);
    expect(again.status).toBe(200);
    for (const name of ['x-payment-response', 'payment-response'])
      expect(again.headers.get(name)).toBe(first.headers.get(name));
    const [row] = await h.db.$queryRawUnsafe<{ response_headers: Record<string, string> }[]>(
      'SELECT response_headers FROM x402_payments WHERE signature = $1',
      signature,
    );
    expect(row!.response_headers['payment-response']).toBe(first.headers.get('payment-response'));
    expect(receiptOfSettlement(decoded(first.headers.get('payment-response')))).toBeDefined();
  });

  it('When the keys are asked, then the JWKS and the did:web document list the signing key and the previous one; an unknown parameter is a 400', async () => {
    const keys = await keySet();
    const current = new ReceiptIssuer({ signingKey: currentKey }).keySet(h.baseUrl).keys[0]!;
    const previous = new ReceiptIssuer({ signingKey: previousKey }).keySet(h.baseUrl).keys[0]!;
    expect(keys).toEqual({ keys: [current, previous] });
    expect(current.kid).toBe(`did:web:127.0.0.1%3A${new URL(h.baseUrl).port}#${current.kid.split('#')[1]}`);
    const jwks = await fetch(`${h.baseUrl}/.well-known/jwks.json`);
    expect(jwks.headers.get('content-type')).toMatch(/^application\/jwk-set\+json/);
    const did = await fetch(`${h.baseUrl}/.well-known/did.json`);
    expect(did.headers.get('content-type')).toMatch(/^application\/did\+json/);
    const document = (await did.json()) as { id: string; assertionMethod: string[] };
    expect(document.id).toBe(current.kid.split('#')[0]);
    expect(document.assertionMethod).toEqual([current.kid, previous.kid]);
    const bad = await fetch(`${h.baseUrl}/.well-known/jwks.json?x=1`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'invalid_request' });
  });

  it('When the key is rotated, then a receipt signed by the previous key still verifies against the published keys', async () => {
    // A replica still running the previous key, behind the same public origin.
    old = await startReplica({
      ...h.config,
      X402_RECEIPT_SIGNING_KEY: previousKey,
      X402_RECEIPT_PREVIOUS_KEYS: undefined,
      PUBLIC_BASE_URL: h.baseUrl,
      INSTANCE_ID: `test-receipts-old-${process.pid}`,
    });
    const signature = await h.transfer({ amountAtomic: 50_000n });
    const res = await fetch(`${old.baseUrl}/api/v1/scout/keywords`, {
      headers: {
        'X-PAYMENT': Buffer.from(
          JSON.stringify({
            x402Version: 1,
            scheme: 'exact',
            network: 'solana',
            payload: { txSignature: signature },
          }),
        ).toString('base64'),
      },
    });
    expect(res.status).toBe(200);
    const body = await res.text();
    const receipt = receiptOfSettlement(decoded(res.headers.get('x-payment-response'))) as JWSSignedReceipt;
    const keys = await keySet();
    const { key } = await verifyReceipt(receipt, { keys, body });
    expect(key.kid).toBe(keys.keys[1]!.kid);
    // The extension resolves the same kid through the current replica's did:web document.
    expect(await verifyReceiptSignatureJWS(receipt)).toMatchObject({ transaction: signature });
    // A key nobody publishes any more is refused.
    expect(await refusal(verifyReceipt(receipt, { keys: keys.keys.slice(0, 1) }))).toBe('unknown_key');
  });
});
