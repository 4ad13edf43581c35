import { Keypair } from '@solana/web3.js';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import { ExactSvmSettler } from '@repo/x402-solana';
import { paymentRequiredHeader, type OfferV2 } from '../src/requirements';

// PAYMENT-REQUIRED is assembled from a base64 part encoded once per route and the per-request values:
// it must decode to exactly the PaymentRequired a plain encoding gives, for any URL, error and reference.
const settler = new ExactSvmSettler({
  network: 'solana',
  rpcUrl: 'http://127.0.0.1:9',
  asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
  payTo: Keypair.generate().publicKey.toBase58(),
  feePayerSecretKey: Keypair.generate().secretKey,
});
const requirements = settler.requirements(100_000n, 60);

function offer(url: string, reference?: string, description = 'Market gaps'): OfferV2 {
  return {
    settler,
    requirements,
    resource: { url, description, mimeType: 'application/json' },
    extensions: { bazaar: { info: { input: { type: 'http', method: 'GET' } } } },
    ...(reference === undefined ? {} : { reference }),
  };
}

function decode(header: string): unknown {
  return JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
}

describe('paymentRequiredHeader', () => {
  it.each([
    ['https://api.example.com/api/v1/scout/gaps', undefined, 'X-PAYMENT header is required'],
    [
      'https://api.example.com/a?q="x"&é=ü',
      Keypair.generate().publicKey.toBase58(),
      'refused: "reason" — ünïcode',
    ],
    ['http://h/x', Keypair.generate().publicKey.toBase58(), ''],
  ])(
    'When the resource is %s, then the header decodes to the plain PaymentRequired',
    (url, reference, error) => {
      const header = paymentRequiredHeader(offer(url, reference), error);
      const expected = {
        x402Version: 2,
        error,
        resource: { url, description: 'Market gaps', mimeType: 'application/json' },
        accepts: [
          reference === undefined
            ? requirements
            : { ...requirements, extra: { ...requirements.extra, reference, memo: reference } },
        ],
        extensions: { bazaar: { info: { input: { type: 'http', method: 'GET' } } } },
      };
      expect(decode(header)).toEqual(expected);
      expect(PaymentRequiredV2Schema.parse(decode(header))).toBeDefined();
    },
  );

  it('When two routes share the offer but not the description, then each header carries its own', () => {
    const a = decode(paymentRequiredHeader(offer('https://x/a', undefined, 'first'), 'e'));
    const b = decode(paymentRequiredHeader(offer('https://x/b', undefined, 'second'), 'e'));
    expect(a).toMatchObject({ resource: { description: 'first', url: 'https://x/a' } });
    expect(b).toMatchObject({ resource: { description: 'second', url: 'https://x/b' } });
  });
});
