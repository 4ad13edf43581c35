import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { CAPTURE_EXAMPLES, writeExamples } from '@repo/service-kit/testing';
import request from 'supertest';
import { startHarness } from './support/harness';

// The generator of src/entry-points/http/examples.json: every operation called for real against the
// service as production composes it (a user signs up, creates a product and its contexts, sends
// signals, runs the analysis, approves its proposal, records its deployment, renames and finally
// deletes the product), and its answers written down, arrays cut to
// two items (writeExamples). Runs only with UPDATE_OPENAPI_EXAMPLES=1; openapi-contract.test.ts checks the examples
// against their schemas.
const EXAMPLES_FILE = path.join(__dirname, '../src/entry-points/http/examples.json');
const run = CAPTURE_EXAMPLES ? it : it.skip;
jest.setTimeout(120_000);

describe('The OpenAPI examples', () => {
  run('When every operation is called for real, then its answers are written to examples.json', async () => {
    // The webhook example's host is allowlisted, so its check needs no DNS.
    const h = await startHarness('signal_feedback_openapi_examples_test', {
      env: { SSRF_ALLOWLIST: 'hooks.example.com' },
    });
    try {
      const out: Record<string, unknown> = {};
      const agent = h.agent();
      const account = { email: 'owner@example.com', password: 'correct horse battery staple' };
      out['signup request'] = account;
      const signedUp = await agent.post('/api/auth/signup').send(account).expect(201);
      out['signup 201'] = signedUp.body;
      const csrf = (signedUp.body as { csrf_token: string }).csrf_token;
      out['me 200'] = (await agent.get('/api/auth/me').expect(200)).body;

      const productRequest = { name: 'Checkout app' };
      out['createProduct request'] = productRequest;
      const product = (
        await agent.post('/api/products').set('x-csrf-token', csrf).send(productRequest).expect(200)
      ).body as { id: string; api_key: string };
      out['createProduct 200'] = product;

      const contextRequest = {
        product_id: product.id,
        name: 'Checkout',
        content: 'Cart to payment confirmation: card entry, 3-D Secure, receipt',
        positive_signals: ['checkout_completed'],
        negative_signals: ['payment_failed', 'checkout_abandoned'],
      };
      out['createContext request'] = contextRequest;
      const context = (
        await agent.post('/api/context').set('x-csrf-token', csrf).send(contextRequest).expect(201)
      ).body as { id: string };
      out['createContext 201'] = context;
      const updateRequest = { id: context.id, content: 'Cart to payment confirmation, including 3-D Secure' };
      out['updateContext request'] = updateRequest;
      out['updateContext 200'] = (
        await agent.patch('/api/context').set('x-csrf-token', csrf).send(updateRequest).expect(200)
      ).body;

      // Each with the client's time and an idempotency key, as Segment- or PostHog-style clients send them.
      const sentAt = Date.now();
      const signals = [
        ...Array.from({ length: 6 }, (_, i) => ({
          type: 'payment_failed',
          context_id: context.id,
          payload: { error_code: 'card_declined', step: 'payment', attempt: i },
        })),
        ...Array.from({ length: 4 }, () => ({
          type: 'checkout_completed',
          context_id: context.id,
          payload: { step: 'confirm' },
        })),
      ].map((s, i) => ({
        ...s,
        timestamp: new Date(sentAt - (10 - i) * 1000).toISOString(),
        messageId: randomUUID(),
      }));
      out['sendSignals request'] = signals;
      out['sendSignals 200'] = (
        await request(h.baseUrl)
          .post('/api/signals')
          .set('x-api-key', product.api_key)
          .send(signals)
          .expect(200)
      ).body;
      const ingest = [
        { event: 'payment_failed', properties: { error_code: 'card_declined', step: 'payment' } },
      ];
      out['ingest request'] = ingest;
      out['ingest 200'] = (
        await request(h.baseUrl).post(`/api/ingest?key=${product.api_key}`).send(ingest).expect(200)
      ).body;

      const analysis = (await agent.post('/api/analysis/run').set('x-csrf-token', csrf).expect(200)).body as {
        proposals: { id: string }[];
      };
      out['runAnalysis 200'] = analysis;
      const change = { status: 'approved' };
      out['changeProposalStatus request'] = change;
      out['changeProposalStatus 200'] = (
        await request(h.baseUrl)
          .patch(`/api/proposals/${analysis.proposals[0]!.id}`)
          .set('x-api-key', product.api_key)
          .send(change)
          .expect(200)
      ).body;

      // The change shipped two days ago. Its day after, the same weekday a week earlier (before) and two
      // weeks earlier (the placebo's before), in the checkout context and in a search context that
      // serves as its control, are written into the table (the API accepts timestamps at most 7 days old).
      const search = (
        await agent
          .post('/api/context')
          .set('x-csrf-token', csrf)
          .send({ ...contextRequest, name: 'Search', content: 'Product search and filters' })
          .expect(201)
      ).body as { id: string };
      const day = 24 * 3_600_000;
      const week = 7 * day;
      const deployedAt = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 2 * day);
      for (const [contextId, from, total, failing] of [
        [context.id, deployedAt.getTime() - 2 * week, 236, 60],
        [context.id, deployedAt.getTime() - week, 240, 62],
        [context.id, deployedAt.getTime(), 226, 21],
        [search.id, deployedAt.getTime() - 2 * week, 180, 18],
        [search.id, deployedAt.getTime() - week, 190, 20],
        [search.id, deployedAt.getTime(), 185, 19],
      ] as const) {
        await h.db.$executeRawUnsafe(
          `INSERT INTO signals (product_id, context_id, type, sentiment, created_at)
           SELECT $1::uuid, $2::uuid, CASE WHEN g * $4 / $3 > (g - 1) * $4 / $3 THEN 'payment_failed' ELSE 'checkout_completed' END,
                  (CASE WHEN g * $4 / $3 > (g - 1) * $4 / $3 THEN 'negative' ELSE 'positive' END)::"Sentiment",
                  $5::timestamptz + (g - 1) * interval '1 day' / $3::int
             FROM generate_series(1, $3::int) AS g`,
          product.id,
          contextId,
          total,
          failing,
          new Date(from),
        );
      }
      const deployment = {
        deployed_at: deployedAt.toISOString(),
        version: 'v2.4.0',
        note: 'Offer another payment method after a card decline',
        control_contexts: [search.id],
      };
      out['recordDeployment request'] = deployment;
      out['recordDeployment 201'] = (
        await request(h.baseUrl)
          .post(`/api/proposals/${analysis.proposals[0]!.id}/deployments`)
          .set('x-api-key', product.api_key)
          .send(deployment)
          .expect(201)
      ).body;
      out['listDeployments 200'] = (
        await agent.get(`/api/proposals/${analysis.proposals[0]!.id}/deployments`).expect(200)
      ).body;
      // Listed after its deployment, the approved proposal carries the deployment's summary.
      out['listProposals 200'] = (
        await request(h.baseUrl).get('/api/proposals').set('x-api-key', product.api_key).expect(200)
      ).body;
      out['contextSeries 200'] = (
        await request(h.baseUrl)
          .get(`/api/context/${context.id}/series`)
          .query({ from: new Date(deployedAt.getTime() - day).toISOString(), bucket: 'day' })
          .set('x-api-key', product.api_key)
          .expect(200)
      ).body;
      // The dashboard's reads (README, "Dashboard").
      out['dashboardTypes 200'] = (
        await agent.get(`/api/dashboard/types?context_id=${context.id}`).expect(200)
      ).body;
      out['dashboardLatestSignals 200'] = (
        await agent.get('/api/dashboard/signals?limit=2').expect(200)
      ).body;
      out['dashboardAnalysis 200'] = (await agent.get('/api/dashboard/analysis').expect(200)).body;
      out['dashboardPlans 200'] = (await agent.get('/api/dashboard/plans').expect(200)).body;

      out['listProducts 200'] = (await agent.get('/api/products').expect(200)).body;
      out['getProduct 200'] = (await agent.get(`/api/products/${product.id}`).expect(200)).body;
      // The product's webhook (README, "Webhooks (signal-feedback)"): the secret is shown on the first set only.
      const webhookRequest = { url: 'https://hooks.example.com/signal-feedback' };
      out['setProductWebhook request'] = webhookRequest;
      out['setProductWebhook 200'] = (
        await agent
          .put(`/api/products/${product.id}/webhook`)
          .set('x-csrf-token', csrf)
          .send(webhookRequest)
          .expect(200)
      ).body;
      out['getProductWebhook 200'] = (
        await agent.get(`/api/products/${product.id}/webhook`).expect(200)
      ).body;
      out['deleteProductWebhook 200'] = (
        await agent.delete(`/api/products/${product.id}/webhook`).set('x-csrf-token', csrf).expect(200)
      ).body;
      const rename = { name: 'Checkout app (web)' };
      out['renameProduct request'] = rename;
      out['renameProduct 200'] = (
        await agent.patch(`/api/products/${product.id}`).set('x-csrf-token', csrf).send(rename).expect(200)
      ).body;
      out['listContexts 200'] = (await agent.get('/api/context').expect(200)).body;
      out['rotateProductKey 200'] = (
        await agent.post(`/api/products/${product.id}/rotate-key`).set('x-csrf-token', csrf).expect(200)
      ).body;
      const spare = (
        await agent
          .post('/api/context')
          .set('x-csrf-token', csrf)
          .send({ ...contextRequest, name: 'Onboarding' })
          .expect(201)
      ).body as { id: string };
      out['deleteContext 200'] = (
        await agent.delete(`/api/context?id=${spare.id}`).set('x-csrf-token', csrf).expect(200)
      ).body;
      const loginAgent = h.agent();
      out['login request'] = account;
      out['login 200'] = (await loginAgent.post('/api/auth/login').send(account).expect(200)).body;
      out['deleteProduct 200'] = (
        await agent.delete(`/api/products/${product.id}`).set('x-csrf-token', csrf).expect(200)
      ).body;
      writeExamples(EXAMPLES_FILE, out);
    } finally {
      await h.close();
    }
  });
});
