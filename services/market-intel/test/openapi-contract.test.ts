import { readFileSync } from 'node:fs';
import path from 'node:path';
import { apiSnapshotProblem } from '@repo/api-client/testing';
import {
  exampleCheck,
  expectDocsRender,
  INFRASTRUCTURE_ROUTES,
  markdownAnchors,
  mountedRoutes,
  routeCoverage,
  screenshotPath,
} from '@repo/service-kit/testing';
import {
  decodePaymentResponse,
  parsePaymentHeader,
  parsePaymentProof,
  PaymentRequiredV2,
  SettleResponseV2,
  SignInWithXProof,
} from '@repo/x402-core';
import { COMPUTE_PRICES, DATA_PRICES } from '../src/domain/prices';
import { PAYING_README_LINK, SIGN_IN_DOCS_LINK, usdc } from '../src/entry-points/http/contract-parts';
import { startHarness, type Harness } from './support/harness';

// Routes own their contracts: the document served at /openapi.json is generated from the routes'
// declarations, so it must name exactly the routes the app mounts. Checked on the app as production
// composes it (the harness runs the same compose() as main.ts), against the document it serves.

type Header = { example?: unknown };
type Operation = {
  description?: string;
  parameters?: { name: string; in: string; example?: unknown; description?: string }[];
  responses: Record<string, { headers?: Record<string, Header> }>;
  [key: string]: unknown;
};
type Document = { info: { description: string }; paths: Record<string, Record<string, Operation>> };

let h: Harness;
let doc: Document;

const PAID_ROUTES = [...Object.values(DATA_PRICES), ...Object.values(COMPUTE_PRICES)];
/** The documented operation of a paid route (`METHOD /path`). */
const operationOf = (endpoint: string): Operation => {
  const [method = '', route = ''] = endpoint.split(' ');
  const operation = doc.paths[route]?.[method.toLowerCase()];
  if (!operation) throw new Error(`${endpoint} is not documented`);
  return operation;
};
const decode = (value: unknown): unknown => JSON.parse(Buffer.from(String(value), 'base64').toString('utf8'));

beforeAll(async () => {
  h = await startHarness('market_intel_openapi_contract_test');
  doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as Document;
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('the OpenAPI document and the mounted routes', () => {
  it('When every example of the served document is checked against its schema, then all are valid, and every body and header has one (a real answer, or the envelope of an error) but the Retry-After of a 429', () => {
    const check = exampleCheck(doc);
    expect(check.invalid).toEqual([]);
    expect(check.checked).toBeGreaterThan(0);
    expect(check.missing).toEqual([]);
    // The capture never spends a client's verification budget.
    expect(check.missingHeaders.filter((where) => !/ 429 header Retry-After$/.test(where))).toEqual([]);
  });

  it("When the x402 header examples are decoded, then they are the protocol's payloads for the route's price: a v2 offer, a v1 push payment, a v2 payment, a sign-in proof for the offer's network and the settlements of that push payment", () => {
    for (const route of PAID_ROUTES) {
      const operation = operationOf(route.endpoint);
      const paid = route.kind === 'sync' ? '200' : '202';
      const header = (status: string, name: string) => operation.responses[status]?.headers?.[name]?.example;
      const parameter = (name: string) => operation.parameters?.find((p) => p.name === name)?.example;

      const offer = PaymentRequiredV2.parse(decode(header('402', 'PAYMENT-REQUIRED')));
      expect(offer.accepts[0]?.amount).toBe(route.amountAtomic.toString());
      const push = parsePaymentHeader(String(parameter('X-PAYMENT')));
      expect(push).toMatchObject({ x402Version: 1, scheme: 'exact', network: 'solana' });
      expect(
        parsePaymentProof(String(parameter('PAYMENT-SIGNATURE')), 'solana', 'PAYMENT-SIGNATURE'),
      ).toMatchObject({
        kind: 'transaction',
        x402Version: 2,
        accepted: { amount: route.amountAtomic.toString() },
      });
      expect(SignInWithXProof.parse(decode(parameter('SIGN-IN-WITH-X')))).toMatchObject({
        chainId: offer.accepts[0]?.network,
        type: 'ed25519',
        uri: expect.stringContaining(route.endpoint.split(' ')[1]!),
      });
      // The answer's settlement names the very transfer the X-PAYMENT example presented.
      expect(decodePaymentResponse(String(header(paid, 'X-PAYMENT-RESPONSE')))).toMatchObject({
        success: true,
        transaction: push.payload.txSignature,
      });
      expect(SettleResponseV2.parse(decode(header(paid, 'PAYMENT-RESPONSE')))).toMatchObject({
        success: true,
        transaction: push.payload.txSignature,
        network: offer.accepts[0]?.network,
      });
    }
  });

  it('When a paid operation is described, then its description gives the price of its price table in atomic units and USDC and the three payment steps, and links a README section that exists', () => {
    for (const route of PAID_ROUTES) {
      const description = operationOf(route.endpoint).description ?? '';
      expect(description).toContain(
        `**Price: ${route.amountAtomic} atomic USDC units (${usdc(route)} USDC) per call**`,
      );
      expect(description).toMatch(
        /1\. \*\*Call\*\*[^]*PAYMENT-REQUIRED[^]*2\. \*\*Pay\*\*[^]*transferChecked[^]*3\. \*\*Retry\*\*[^]*X-PAYMENT[^]*PAYMENT-SIGNATURE/,
      );
      expect(description).toContain(PAYING_README_LINK);
      expect(doc.info.description).toContain(
        `\`${route.endpoint}\`: ${route.amountAtomic} (${usdc(route)} USDC)`,
      );
    }
    for (const route of PAID_ROUTES) {
      const header = operationOf(route.endpoint).parameters?.find((p) => p.name === 'SIGN-IN-WITH-X');
      expect(header?.description).toContain(SIGN_IN_DOCS_LINK);
    }
    const [, docsAnchor = ''] = /\]\(docs\/payments\.md#([^)]+)\)$/.exec(SIGN_IN_DOCS_LINK) ?? [];
    expect(
      markdownAnchors(readFileSync(path.join(__dirname, '../../../docs/payments.md'), 'utf8')),
    ).toContain(docsAnchor);
    expect(doc.info.description).toContain(PAYING_README_LINK);
    const [, file = '', anchor = ''] =
      /\]\(services\/market-intel\/(README\.md)#([^)]+)\)$/.exec(PAYING_README_LINK) ?? [];
    expect(markdownAnchors(readFileSync(path.join(__dirname, '..', file), 'utf8'))).toContain(anchor);
  });

  it('When Chromium opens /docs of the running service, then the Scalar reference shows every operation with its search and no console error or CSP violation (UPDATE_SCREENSHOT=1 refreshes docs/market-intel-docs.png)', async () => {
    const render = await expectDocsRender(h.baseUrl, {
      expand: 'getGaps',
      screenshot: screenshotPath(path.resolve(__dirname, '../../../docs/market-intel-docs.png')),
    });
    expect(render.operations).toHaveLength(Object.values(doc.paths).flatMap((p) => Object.keys(p)).length);
  }, 90_000);

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
    for (const route of PAID_ROUTES) {
      const [method = '', template = ''] = route.endpoint.split(' ');
      const operation = doc.paths[template]?.[method.toLowerCase()];
      expect({ endpoint: route.endpoint, price: operation?.['x-max-amount-required'] }).toEqual({
        endpoint: route.endpoint,
        price: route.amountAtomic.toString(),
      });
      expect(operation?.security).toEqual([{ x402: [] }, { x402v2: [] }, { siwx: [] }]);
    }
  });
});
