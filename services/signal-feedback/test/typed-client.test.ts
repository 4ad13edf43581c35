import { signalFeedbackClient } from '@repo/api-client';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';

// The typed client of @repo/api-client (generated from the OpenAPI document this service serves)
// against the running service: its calls compile against the document and get what the API answers.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_typed_client_test');
});
afterAll(() => h?.close());

describe('The typed signal-feedback client', () => {
  it('When it sends signals with a product key and lists proposals, then it gets the typed answers and the signals are stored', async () => {
    const user = await signUp(h);
    const product = await createProduct(user);
    const context = await createContext(user, product.id);
    const client = signalFeedbackClient(h.baseUrl, product.apiKey);
    const sent = await client.POST('/api/signals', {
      body: [
        { type: 'payment_failed', context_id: context.id, payload: { step: 'card' } },
        { type: 'checkout_completed', context_id: context.id },
      ],
    });
    expect(sent.response.status).toBe(200);
    expect(sent.data).toEqual({ received: 2 });
    expect(await h.db.signal.count({ where: { contextId: context.id } })).toBe(2);
    const proposals = await client.GET('/api/proposals', { params: { query: { limit: 5 } } });
    expect(proposals.response.status).toBe(200);
    expect(proposals.data).toEqual([]);
  });

  it('When it calls without a key, then the error is the typed envelope', async () => {
    const anonymous = signalFeedbackClient(h.baseUrl);
    const { data, error, response } = await anonymous.POST('/api/signals', { body: { type: 'x' } });
    expect(response.status).toBe(401);
    expect(data).toBeUndefined();
    expect(error).toMatchObject({ code: 'unauthorized', requestId: expect.any(String) });
  });
});
