import express from 'express';
import request from 'supertest';
import { Keypair } from '@solana/web3.js';
import { z } from 'zod';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import {
  extractDiscoveryInfo,
  extractDiscoveryInfoV1,
  validateDiscoveryExtension,
} from '@x402/extensions/bazaar';
import { errorHandler } from '@repo/errors';
import { Error402, toJsonSchema } from '@repo/schemas';
import type { ResourceDiscovery } from '@repo/x402-core';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import { requirePayment, type PaymentGateway } from '../src/index';

// x402 discovery metadata: what a catalogue (the official facilitator's bazaar) reads from our 402s.
// Only the unpaid challenge is exercised, so no ledger or RPC is reached.

const mint = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const merchant = Keypair.generate().publicKey.toBase58();
const rpcUrl = 'http://127.0.0.1:9';

const Query = z.object({ sector: z.string().regex(/^[a-z]+$/), limit: z.string().optional() });
const Answer = z.object({ items: z.array(z.object({ title: z.string() })), count: z.number().int() });
const Body = z.object({ idea: z.string().min(10) });

const getDiscovery: ResourceDiscovery = {
  method: 'GET',
  query: toJsonSchema(Query, 'input'),
  output: toJsonSchema(Answer),
  inputExample: { sector: 'ai' },
  outputExample: { items: [{ title: 'receipts' }], count: 1 },
};
const postDiscovery: ResourceDiscovery = {
  method: 'POST',
  body: toJsonSchema(Body, 'input'),
  output: toJsonSchema(Answer),
  inputExample: { idea: 'a receipt service for agents' },
  outputExample: { items: [], count: 0 },
};

let db: PgSqlClient;
let app: express.Express;

beforeAll(() => {
  db = new PgSqlClient();
  const gateway: PaymentGateway = {
    ledger: new PrismaPaymentLedger(db),
    verifiers: {
      solana: new SolanaPaymentVerifier({ network: 'solana', rpcUrl, asset: mint, payTo: merchant }),
    },
    settlers: {
      solana: new ExactSvmSettler({
        network: 'solana',
        rpcUrl,
        asset: mint,
        payTo: merchant,
        feePayerSecretKey: Keypair.generate().secretKey,
      }),
    },
  };
  app = express();
  const paid = { ...gateway, amountAtomic: 100_000n, description: 'Items' };
  app.get('/items', requirePayment({ ...paid, discovery: getDiscovery }), (_req, res) => res.json({}));
  app.post('/ideas', requirePayment({ ...paid, discovery: postDiscovery }), (_req, res) => res.json({}));
  app.get('/plain', requirePayment(paid), (_req, res) => res.json({}));
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
});

afterAll(async () => {
  await db.close();
});

function paymentRequired(res: request.Response): unknown {
  const header = res.headers['payment-required'];
  if (typeof header !== 'string') throw new Error('no PAYMENT-REQUIRED header');
  return JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
}

describe('x402 discovery metadata', () => {
  it('When a GET route with discovery answers 402, then the v1 outputSchema reads as its method, query parameters and answer schema', async () => {
    const res = await request(app).get('/items?sector=ai');
    expect(res.status).toBe(402);
    const body = Error402.parse(res.body);
    const requirement = body.accepts[0];
    if (!requirement) throw new Error('no requirement');
    expect(requirement.outputSchema).toEqual({
      input: {
        type: 'http',
        method: 'GET',
        discoverable: true,
        queryParams: {
          sector: { type: 'string', pattern: '^[a-z]+$' },
          limit: { type: 'string' },
        },
        required: ['sector'],
      },
      output: toJsonSchema(Answer),
    });
    // The v1 requirement as the official facilitator's v1 reader takes it (its network type is CAIP-2 only).
    const info = extractDiscoveryInfoV1(
      requirement as unknown as Parameters<typeof extractDiscoveryInfoV1>[0],
    );
    expect(info?.input).toMatchObject({
      type: 'http',
      method: 'GET',
      queryParams: { sector: { type: 'string' } },
    });
  });

  it('When a GET route with discovery answers 402, then PAYMENT-REQUIRED carries a bazaar extension the official validator accepts', async () => {
    const res = await request(app).get('/items?sector=ai');
    const required = PaymentRequiredV2Schema.parse(paymentRequired(res));
    const bazaar = required.extensions?.bazaar;
    expect(validateDiscoveryExtension(bazaar as Parameters<typeof validateDiscoveryExtension>[0])).toEqual({
      valid: true,
    });
    expect(bazaar).toMatchObject({
      info: {
        input: { type: 'http', method: 'GET', queryParams: { sector: 'ai' } },
        output: { type: 'json', example: { items: [{ title: 'receipts' }], count: 1 } },
      },
    });
    // What the facilitator sees: the client's payload echoes the accepted offer and the extensions.
    const payload = {
      x402Version: 2,
      resource: required.resource,
      accepted: required.accepts[0],
      payload: {},
      extensions: required.extensions,
    };
    const discovered = extractDiscoveryInfo(
      payload as Parameters<typeof extractDiscoveryInfo>[0],
      required.accepts[0] as Parameters<typeof extractDiscoveryInfo>[1],
    );
    expect(discovered && 'method' in discovered ? discovered.method : undefined).toBe('GET');
    // The catalogue files the resource under its URL without the query.
    expect(discovered?.resourceUrl).toBe(required.resource.url.split('?')[0]);
  });

  it('When a POST route with discovery answers 402, then both offers describe a JSON body', async () => {
    const res = await request(app).post('/ideas').send({ idea: 'a receipt service for agents' });
    expect(res.status).toBe(402);
    expect(Error402.parse(res.body).accepts[0]?.outputSchema).toMatchObject({
      input: {
        type: 'http',
        method: 'POST',
        bodyType: 'json',
        bodyFields: { idea: { type: 'string', minLength: 10 } },
      },
    });
    const bazaar = PaymentRequiredV2Schema.parse(paymentRequired(res)).extensions?.bazaar;
    expect(validateDiscoveryExtension(bazaar as Parameters<typeof validateDiscoveryExtension>[0])).toEqual({
      valid: true,
    });
    expect(bazaar).toMatchObject({
      info: { input: { method: 'POST', bodyType: 'json', body: postDiscovery.inputExample } },
    });
  });

  it('When a route declares no discovery, then its 402 has neither outputSchema nor extensions', async () => {
    const res = await request(app).get('/plain');
    expect(res.status).toBe(402);
    expect(res.body.accepts[0]).not.toHaveProperty('outputSchema');
    expect(paymentRequired(res)).toMatchObject({ extensions: {} });
  });
});
