import { Error402, PaymentRequirements } from '@repo/schemas';
import { paymentRequiredBody, v1OutputSchema } from '../src/index';
import { buildRequirements as build } from '../src/testing';

describe('buildPaymentRequirements', () => {
  it('When requirements are built, then they have the PaymentRequirements shape with the amount as an atomic string and 60 s', () => {
    const requirements = build();
    expect(requirements).toEqual({
      scheme: 'exact',
      network: 'solana',
      maxAmountRequired: '100000',
      asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      payTo: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
      resource: 'https://api.example.com/api/v1/scout/gaps?sector=ai',
      description: 'Market gaps',
      mimeType: 'application/json',
      maxTimeoutSeconds: 60,
    });
    expect(PaymentRequirements.parse(requirements)).toEqual(requirements);
  });

  it('When a large price and a timeout are given, then they are kept exactly', () => {
    const requirements = build({
      amountAtomic: 25_000_000n,
      maxTimeoutSeconds: 120,
      network: 'solana-devnet',
    });
    expect(requirements.maxAmountRequired).toBe('25000000');
    expect(requirements.maxTimeoutSeconds).toBe(120);
    expect(requirements.network).toBe('solana-devnet');
  });

  it('When the amount is zero or the resource is not a URL, then it throws', () => {
    expect(() => build({ amountAtomic: 0n })).toThrow(/positive/);
    expect(() => build({ resource: '/relative' })).toThrow();
  });
});

describe('the 402 challenge', () => {
  it('When the body is built, then it is an Error402 with code payment_required and the request id', () => {
    const body = paymentRequiredBody([build()], 'X-PAYMENT header is required', 'req-1');
    expect(body).toEqual({
      x402Version: 1,
      accepts: [build()],
      error: 'X-PAYMENT header is required',
      code: 'payment_required',
      requestId: 'req-1',
    });
    expect(Error402.parse(body)).toEqual(body);
  });
});

describe('discovery metadata', () => {
  it('When outputSchema and extra are given, then they are kept and the requirements still parse', () => {
    const outputSchema = v1OutputSchema({
      method: 'GET',
      query: { type: 'object', properties: { sector: { type: 'string' } }, required: ['sector'] },
      output: { type: 'object' },
      outputExample: {},
    });
    const requirements = build({ outputSchema, extra: { reference: 'x' } });
    expect(requirements.outputSchema).toEqual({
      input: {
        type: 'http',
        method: 'GET',
        discoverable: true,
        queryParams: { sector: { type: 'string' } },
        required: ['sector'],
      },
      output: { type: 'object' },
    });
    expect(requirements.extra).toEqual({ reference: 'x' });
    expect(PaymentRequirements.parse(requirements)).toEqual(requirements);
  });
});
