import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Application } from 'express';
import { apiSnapshotProblem } from '@repo/api-client/testing';
import {
  exampleCheck,
  expectDocsRender,
  INFRASTRUCTURE_ROUTES,
  markdownAnchors,
  routeCoverage,
} from '@repo/service-kit/testing';
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
const STILL_WITHOUT_EXAMPLES: string[] = [];

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
      '/api/discover/register/mcp',
      '/api/discover/report',
      '/api/discover/route',
      '/api/discover/skills',
      '/api/discover/skills/{id}',
      '/api/discover/skills/{id}/versions',
      '/api/health',
    ]);
  });

  it('When the document and its key scheme are read, then both say how to get a key (the endpoint, its body, the answer, the header, the limit) and link a README section that exists', async () => {
    const doc = (await h.call('GET', '/openapi.json')).body;
    for (const text of [
      doc.info.description,
      doc.components.securitySchemes.apiKey.description,
    ] as string[]) {
      expect(text).toContain('`POST /api/auth/key` with `{"name": "my-agent"}`');
      expect(text).toContain('`api_key`, an `sk_router_` key shown only this once');
      expect(text).toContain('`x-api-key` header');
      expect(text).toContain('`KEY_CREATION_LIMIT_PER_MINUTE`');
      const [, anchor = ''] = /\]\(services\/skill-router\/README\.md#([^)]+)\)/.exec(text) ?? [];
      expect(markdownAnchors(readFileSync(path.join(__dirname, '../README.md'), 'utf8'))).toContain(anchor);
    }
    // The key the description promises is what the endpoint answers, and the header it names works.
    const created = await h.call('POST', '/api/auth/key', { name: 'my-agent' });
    expect(created.status).toBe(201);
    expect(created.body.api_key).toMatch(/^sk_router_/);
    const routed = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'translate a text' },
      { 'x-api-key': created.body.api_key },
    );
    expect(routed.status).toBe(200);
  });

  it('When Chromium opens /docs of the running service, then the Scalar reference shows every operation with its search and no console error or CSP violation', async () => {
    const doc = (await h.call('GET', '/openapi.json')).body as { paths: Record<string, object> };
    const render = await expectDocsRender(h.baseUrl);
    expect(render.operations).toHaveLength(Object.values(doc.paths).flatMap((p) => Object.keys(p)).length);
  }, 90_000);

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
