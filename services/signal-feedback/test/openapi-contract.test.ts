import request from 'supertest';
import { apiSnapshotProblem } from '@repo/api-client/testing';
import { exampleCheck, INFRASTRUCTURE_ROUTES, routeCoverage } from '@repo/service-kit/testing';
import { createProduct, signUp, startHarness, type Harness } from './support/harness';

// Routes own their contracts (README, "Endpoints"): the document served at /openapi.json is generated
// from the routes' declarations, so it names every route the app answers and no other, and a bound it
// documents is the one the route enforces.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_openapi_contract_test');
});
afterAll(() => h?.close());

describe('The OpenAPI document and the mounted routes', () => {
  it('When every example of the served document is checked against its schema, then all are valid, and every body has one (a real answer, or the envelope of an error)', async () => {
    const check = exampleCheck((await request(h.baseUrl).get('/openapi.json')).body);
    expect(check.invalid).toEqual([]);
    expect(check.checked).toBeGreaterThan(0);
    expect(check.missing).toEqual([]);
  });

  it("When the served document is compared with the typed client's snapshot, then they are equal (else the client is stale)", async () => {
    expect(
      apiSnapshotProblem('signal-feedback', (await request(h.baseUrl).get('/openapi.json')).body),
    ).toBeUndefined();
  });

  it('When the served document is compared with the routes the app mounts, then neither has one the other lacks', async () => {
    const doc = (await request(h.baseUrl).get('/openapi.json')).body;
    expect(routeCoverage(h.service.http, doc, INFRASTRUCTURE_ROUTES)).toEqual({
      undocumented: [],
      unmounted: [],
    });
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/api/analysis/run',
      '/api/auth/login',
      '/api/auth/logout',
      '/api/auth/me',
      '/api/auth/signup',
      '/api/context',
      '/api/context/{id}/series',
      '/api/dashboard/analysis',
      '/api/dashboard/plans',
      '/api/dashboard/signals',
      '/api/dashboard/types',
      '/api/ingest',
      '/api/products',
      '/api/products/{id}',
      '/api/products/{id}/rotate-key',
      '/api/products/{id}/webhook',
      '/api/proposals',
      '/api/proposals/{id}',
      '/api/proposals/{id}/deployments',
      '/api/signals',
    ]);
  });

  it('When GET /api/proposals is asked for more proposals than its documented limit allows, then it answers 400, and at the limit 200', async () => {
    const doc = (await request(h.baseUrl).get('/openapi.json')).body;
    const params = doc.paths['/api/proposals'].get.parameters as { name: string; schema: unknown }[];
    expect(params.map((p) => p.name)).toEqual(['status', 'limit', 'product_id']);
    expect(params.find((p) => p.name === 'limit')?.schema).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 200,
      default: 50,
    });
    const product = await createProduct(await signUp(h));
    const list = (limit: number) =>
      request(h.baseUrl).get(`/api/proposals?limit=${limit}`).set('x-api-key', product.apiKey);
    // The documented bounds are the enforced ones.
    const over = await list(201);
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'query.limit' }] },
    });
    expect((await list(0)).status).toBe(400);
    expect((await list(200)).status).toBe(200);
    expect((await list(1)).status).toBe(200);
  });
});
