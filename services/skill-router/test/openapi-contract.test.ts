import type { Application } from 'express';
import { apiSnapshotProblem } from '@repo/api-client/testing';
import { exampleCheck, INFRASTRUCTURE_ROUTES, routeCoverage } from '@repo/service-kit/testing';
import { startHarness, type Harness } from './support/harness';

// Routes own their contracts (docs/architecture.md, "Routes own their contracts"): the document
// served at /openapi.json is generated from the routes' declarations, so it names every route the
// app answers and no other.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('skill_router_openapi_contract_test');
});
afterAll(() => h?.close());

/**
 * Bodies the document shows without an example: the health report of a replica whose database is down
 * (the capture runs against a working one). Every other body has a real answer or an envelope.
 */
const STILL_WITHOUT_EXAMPLES = ['GET /api/health 503'];

describe('The OpenAPI document and the mounted routes', () => {
  it('When every example of the served document is checked against its schema, then all are valid, and the bodies without one are the known ones', async () => {
    const check = exampleCheck((await h.call('GET', '/openapi.json')).body);
    expect(check.invalid).toEqual([]);
    expect(check.checked).toBeGreaterThan(0);
    expect(check.missing.sort()).toEqual([...STILL_WITHOUT_EXAMPLES].sort());
  });

  it("When the served document is compared with the typed client's snapshot, then they are equal (else the client is stale)", async () => {
    expect(apiSnapshotProblem('skill-router', (await h.call('GET', '/openapi.json')).body)).toBeUndefined();
  });

  it('When the served document is compared with the routes the app mounts, then neither has one the other lacks', async () => {
    const doc = (await h.call('GET', '/openapi.json')).body;
    expect(routeCoverage(h.service.http as Application, doc, INFRASTRUCTURE_ROUTES)).toEqual({
      undocumented: [],
      unmounted: [],
    });
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/api/auth/key',
      '/api/discover/register',
      '/api/discover/report',
      '/api/discover/route',
      '/api/discover/skills',
      '/api/discover/skills/{id}',
      '/api/health',
    ]);
  });

  it('When a route validates a query, then the document lists the same parameters with their bounds', async () => {
    const doc = (await h.call('GET', '/openapi.json')).body;
    const params = doc.paths['/api/discover/skills'].get.parameters as { name: string; schema: unknown }[];
    expect(params.map((p) => p.name)).toEqual(['category', 'chain', 'search', 'sort', 'limit', 'offset']);
    expect(params.find((p) => p.name === 'limit')?.schema).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 20,
    });
    // The documented bound is the enforced one.
    expect((await h.call('GET', '/api/discover/skills?limit=101')).status).toBe(400);
    expect((await h.call('GET', '/api/discover/skills?limit=100')).status).toBe(200);
  });
});
