import express from 'express';
import request from 'supertest';
import { errorHandler } from '@repo/errors';
import { Error402, PaymentRequirements } from '@repo/schemas';
import {
  buildPaymentRequirements,
  networkOfRequest,
  paymentRequiredBody,
  resourceUrlOf,
  sendPaymentRequired,
} from '../src/index';

const mint = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const payTo = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';

function build(overrides: Partial<Parameters<typeof buildPaymentRequirements>[0]> = {}) {
  return buildPaymentRequirements({
    network: 'solana',
    asset: mint,
    payTo,
    amountAtomic: 100000n,
    resource: 'https://api.example.com/api/v1/scout/gaps?sector=ai',
    description: 'Market gaps',
    mimeType: 'application/json',
    ...overrides,
  });
}

describe('buildPaymentRequirements', () => {
  it('When requirements are built, then they have the spec shape with the amount as an atomic string and 60 s', () => {
    const requirements = build();
    expect(requirements).toEqual({
      scheme: 'exact',
      network: 'solana',
      maxAmountRequired: '100000',
      asset: mint,
      payTo,
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

  it('When it is sent, then the status is 402 with header x402-version: 1', async () => {
    const app = express();
    app.get('/paid', (req, res) =>
      sendPaymentRequired(req, res, [build({ resource: resourceUrlOf(req) })], 'pay first', {
        reason: 'missing',
      }),
    );
    const res = await request(app).get('/paid?x=1').set('x-request-id', 'r-9');
    expect(res.status).toBe(402);
    expect(res.headers['x402-version']).toBe('1');
    expect(res.body.requestId).toBe('r-9');
    expect(res.body.details).toEqual({ reason: 'missing' });
    expect(res.body.accepts[0].resource).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/paid\?x=1$/);
  });
});

describe('networkOfRequest', () => {
  const app = express();
  app.get('/n', (req, res) => {
    res.json({ network: networkOfRequest(req) });
  });
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));

  it('When network is absent or devnet, then solana or solana-devnet', async () => {
    expect((await request(app).get('/n')).body.network).toBe('solana');
    expect((await request(app).get('/n?network=devnet')).body.network).toBe('solana-devnet');
  });

  it('When network is anything else, then 400 invalid_request', async () => {
    const res = await request(app).get('/n?network=testnet');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect((await request(app).get('/n?network=devnet&network=devnet')).status).toBe(400);
  });
});
