import { apiSnapshotProblem } from '@repo/api-client/testing';
import { exampleCheck, INFRASTRUCTURE_ROUTES, mountedRoutes, routeCoverage } from '@repo/service-kit/testing';
import { COMPUTE_PRICES, DATA_PRICES } from '../src/domain/prices';
import { startHarness, type Harness } from './support/harness';

// Routes own their contracts: the document served at /openapi.json is generated from the routes'
// declarations, so it must name exactly the routes the app mounts. Checked on the app as production
// composes it (the harness runs the same compose() as main.ts), against the document it serves.

type Document = { paths: Record<string, Record<string, Record<string, unknown>>> };

let h: Harness;
let doc: Document;

beforeAll(async () => {
  h = await startHarness('market_intel_openapi_contract_test');
  doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as Document;
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('the OpenAPI document and the mounted routes', () => {
  it('When every example of the served document is checked against its schema, then all are valid, and every body has one (a real answer, or the envelope of an error)', () => {
    const check = exampleCheck(doc);
    expect(check.invalid).toEqual([]);
    expect(check.checked).toBeGreaterThan(0);
    expect(check.missing).toEqual([]);
  });

  it("When the served document is compared with the typed client's snapshot, then they are equal (else the client is stale)", () => {
    expect(apiSnapshotProblem('market-intel', doc)).toBeUndefined();
  });

  it('When the routes of the running app are compared with its /openapi.json, then no mounted route is undocumented and no documented route is unmounted', () => {
    expect(routeCoverage(h.service.app, doc, INFRASTRUCTURE_ROUTES)).toEqual({
      undocumented: [],
      unmounted: [],
    });
    // The ignore list names routes that exist: a stale entry would hide nothing but mislead.
    const mounted = mountedRoutes(h.service.app).map((r) => `${r.method} ${r.path}`);
    expect(mounted).toEqual(expect.arrayContaining(INFRASTRUCTURE_ROUTES));
  });

  it('When a paid route is documented, then its method, path and price are the endpoint and amount its payments are bound to', () => {
    for (const route of [...Object.values(DATA_PRICES), ...Object.values(COMPUTE_PRICES)]) {
      const [method = '', path = ''] = route.endpoint.split(' ');
      const operation = doc.paths[path]?.[method.toLowerCase()];
      expect({ endpoint: route.endpoint, price: operation?.['x-max-amount-required'] }).toEqual({
        endpoint: route.endpoint,
        price: route.amountAtomic.toString(),
      });
      expect(operation?.security).toEqual([{ x402: [] }, { x402v2: [] }]);
    }
  });
});
