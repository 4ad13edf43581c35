import { createHash } from 'node:crypto';
import {
  createJWS,
  decodeSignedOffers,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureJWS,
} from '@x402/extensions/offer-receipt';
import { didWebOf, ReceiptIssuer, verifyReceipt, type ReceiptPayload } from '../src/receipts';
import { receiptRefusal as refusal } from '../src/testing';

const origin = 'https://api.example.com';

function payload(overrides: Partial<ReceiptPayload> = {}): ReceiptPayload {
  return {
    version: 1,
    network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
    resourceUrl: `${origin}/api/v1/scout/gaps?limit=2`,
    payer: 'payer1111111111111111111111111111111111111',
    issuedAt: 1_700_000_000,
    transaction: '5'.repeat(88),
    amount: '100000',
    asset: 'mint111111111111111111111111111111111111111',
    requestHash: 'a'.repeat(64),
    responseSha256: createHash('sha256').update('{"gaps":[]}').digest('hex'),
    ...overrides,
  };
}

describe('ReceiptIssuer', () => {
  it('When an offer is signed, then it is the JWS createJWS makes and verifies with the extension', async () => {
    const issuer = new ReceiptIssuer({ signingKey: ReceiptIssuer.generateKey() });
    const terms = {
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' as const,
      resourceUrl: `${origin}/api/v1/scout/gaps`,
      scheme: 'exact',
      asset: 'mint',
      payTo: 'wallet',
      amount: '100000',
    };
    const offer = issuer.offer(origin, terms);
    expect(offer.signature).toBe(await createJWS({ version: 1, ...terms }, issuer.signerFor(origin)));
    const key = issuer.keySet(origin).keys[0]!;
    expect(await verifyOfferSignatureJWS(offer, { ...key })).toEqual({ version: 1, ...terms });
    const [decoded] = decodeSignedOffers([offer]);
    expect(
      findAcceptsObjectFromSignedOffer(decoded!, [{ ...terms, maxTimeoutSeconds: 60, extra: {} }]),
    ).toBeDefined();
    expect(key.kid).toBe(`${didWebOf(origin)}#${key.kid.split('#')[1]}`);
  });

  it('When a receipt is verified against the key set, then tampering, a wrong body or an unknown key is refused', async () => {
    const previous = new ReceiptIssuer({ signingKey: ReceiptIssuer.generateKey() });
    const previousPem = ReceiptIssuer.generateKey();
    const old = new ReceiptIssuer({ signingKey: previousPem });
    const issuer = new ReceiptIssuer({ signingKey: ReceiptIssuer.generateKey(), publishedKeys: previousPem });
    const keys = issuer.keySet(origin);
    expect(keys.keys).toHaveLength(2);

    const receipt = await issuer.receipt(origin, payload());
    const ok = await verifyReceipt(receipt, { keys, body: '{"gaps":[]}', requestHash: 'a'.repeat(64) });
    expect(ok.payload.amount).toBe('100000');

    // Signed by the previous key: still verifies.
    expect((await verifyReceipt(await old.receipt(origin, payload()), { keys })).key.kid).toBe(
      keys.keys[1]!.kid,
    );
    // A key not published.
    expect(await refusal(verifyReceipt(await previous.receipt(origin, payload()), { keys }))).toBe(
      'unknown_key',
    );
    // The payload changed after signing.
    const [h, , s] = receipt.signature.split('.');
    const forged = Buffer.from(JSON.stringify({ ...payload(), amount: '1' })).toString('base64url');
    expect(await refusal(verifyReceipt({ format: 'jws', signature: `${h}.${forged}.${s}` }, { keys }))).toBe(
      'bad_signature',
    );
    expect(await refusal(verifyReceipt(receipt, { keys, body: '{"gaps":[1]}' }))).toBe('body_mismatch');
    expect(await refusal(verifyReceipt(receipt, { keys, requestHash: 'b'.repeat(64) }))).toBe(
      'request_mismatch',
    );
    // Our key, another host's resource.
    const foreign = await issuer.receipt(origin, payload({ resourceUrl: 'https://evil.example/x' }));
    expect(await refusal(verifyReceipt(foreign, { keys }))).toBe('key_not_for_resource');
    expect(await refusal(verifyReceipt({ format: 'jws', signature: 'x.y' }, { keys }))).toBe(
      'invalid_receipt',
    );
  });

  it('When keys are given as JWK, JWKS or PEM, then they are read; anything else is refused by name', () => {
    const pem = ReceiptIssuer.generateKey();
    const issuer = new ReceiptIssuer({ signingKey: pem });
    const jwks = JSON.stringify(issuer.keySet(origin));
    const other = ReceiptIssuer.generateKey();
    const both = new ReceiptIssuer({ signingKey: other, publishedKeys: jwks });
    expect(both.keySet(origin).keys).toHaveLength(2);
    expect(() => new ReceiptIssuer({ signingKey: 'nope' })).toThrow(/signing key/);
    expect(() => new ReceiptIssuer({ signingKey: jwks })).toThrow(/signing key/);
    expect(() => new ReceiptIssuer({ signingKey: pem, publishedKeys: '[{"kty":"EC"}]' })).toThrow(
      /published key 1/,
    );
    expect(didWebOf('http://127.0.0.1:3001')).toBe('did:web:127.0.0.1%3A3001');
  });
});
