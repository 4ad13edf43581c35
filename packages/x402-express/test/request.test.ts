import express from 'express';
import request from 'supertest';
import { errorHandler } from '@repo/errors';
import { networkOfRequest, resourceUrlOf, sendPaymentRequired } from '../src/request';
import { buildRequirements as build } from '@repo/x402-core/testing';

describe('the 402 challenge', () => {
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

  it('When network is anything else, or repeated, then 400 invalid_request in words with details.issues', async () => {
    const res = await request(app).get('/n?network=testnet');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'invalid_request',
      error: 'query parameter `network` must be "devnet" or absent, not "testnet"',
      details: { issues: [{ path: 'query.network', code: 'invalid_value' }] },
    });
    const repeated = await request(app).get('/n?network=devnet&network=devnet');
    expect(repeated.status).toBe(400);
    expect(repeated.body.details).toEqual({
      issues: [{ path: 'query.network', code: 'invalid_type', message: 'must be given at most once' }],
    });
  });
});
