import { Error402, GapsResponse } from '@repo/schemas';
import { waitFor } from '@repo/queue/testing';
import { decodePaymentResponse, encodePaymentHeader } from '@repo/x402-core';
import { spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { buildReport, startHarness, type Harness } from './support/harness';
import { signedProof } from './support/sign-in';
import { signInWithXEnabled } from '../src/config';

const PRICES: [string, string][] = [
  ['/api/v1/scout/gaps', '100000'],
  ['/api/v1/scout/pain-clusters', '100000'],
  ['/api/v1/scout/trends', '100000'],
  ['/api/v1/scout/brief', '200000'],
  ['/api/v1/scout/keywords', '50000'],
];

/**
 * The response headers that do not depend on the request (its id, date and connection), by name; a
 * `PAYMENT-REQUIRED` with a sign-in challenge decoded, its nonce and times (fresh in every 402) as `*`.
 */
function stableHeaders(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!['date', 'x-request-id', 'connection', 'keep-alive'].includes(name)) out[name] = value;
  });
  const required = out['payment-required'];
  if (required?.length && Buffer.from(required, 'base64').includes('"sign-in-with-x"'))
    out['payment-required'] = Buffer.from(required, 'base64')
      .toString('utf8')
      .replace(/"(nonce|issuedAt|expirationTime)":"[^"]*"/g, '"$1":"*"');
  return out;
}

// The six services below pay through one ledger (each payment is a transaction of its own, and each
// service has its own database and vhost): one ledger start instead of six.
let ledger: Localnet;
beforeAll(async () => {
  ledger = await spawnLocalnet();
}, 120_000);
afterAll(() => ledger.close());

// The same behaviour with every fast path of the Data API on (the defaults) and with each one off
// (docs/architecture.md, "Fast paths"): the full path alone gives the same answers and rows.
describe.each<[string, string, Record<string, string>]>([
  ['every fast path on', 'market_intel_data_api_test', {}],
  ['X402_HOT_PATH=false', 'market_intel_data_api_no_hot_path_test', { X402_HOT_PATH: 'false' }],
  [
    'X402_DEFER_VERIFIED_MARK=false',
    'market_intel_data_api_no_deferred_mark_test',
    { X402_DEFER_VERIFIED_MARK: 'false' },
  ],
  ['REPORT_CACHE=false', 'market_intel_data_api_no_report_cache_test', { REPORT_CACHE: 'false' }],
  // As production runs: every 402 declares a fresh sign-in challenge, a replay needs the payer's proof.
  ['X402_SIGN_IN_WITH_X=true', 'market_intel_data_api_sign_in_test', { X402_SIGN_IN_WITH_X: 'true' }],
  [
    'X402_SIGN_IN_WITH_X=true and X402_HOT_PATH=false',
    'market_intel_data_api_sign_in_no_hot_path_test',
    { X402_SIGN_IN_WITH_X: 'true', X402_HOT_PATH: 'false' },
  ],
])('Data API with %s', (_label, dbName, env) => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness(dbName, { env, ledger });
    await h.reports.importReport(buildReport(), 'import');
  }, 120_000);
  afterAll(() => h.close());

  it('When the service started, then each fast path is on or off as its switch says', async () => {
    expect(h.service.http === h.service.app).toBe(!h.config.X402_HOT_PATH);
    expect(h.service.loops.some((loop) => loop.name === 'report-watermark')).toBe(h.config.REPORT_CACHE);
    if (h.config.REPORT_CACHE)
      await waitFor('the report listener to start', async () => h.service.reports.cachingOn, 10_000);
    else expect(h.service.reports.cachingOn).toBe(false);
  });

  describe('Data API: the 402 challenge', () => {
    it('When the same URL is asked twice without payment, then the second 402 has the first one’s bytes but its own request id', async () => {
      const url = `${h.baseUrl}/api/v1/scout/trends?days=3&limit=2&sector=fintech`;
      const first = await fetch(url, { headers: { 'x-request-id': 'first-request' } });
      const second = await fetch(url, { headers: { 'x-request-id': 'second-request' } });
      expect([first.status, second.status]).toEqual([402, 402]);
      const [a, b] = [await first.text(), await second.text()];
      expect(b).toBe(a.replace('"first-request"', '"second-request"'));
      expect(second.headers.get('x-request-id')).toBe('second-request');
      const { ['content-length']: firstLength, ...firstHeaders } = stableHeaders(first);
      const { ['content-length']: secondLength, ...secondHeaders } = stableHeaders(second);
      expect(secondHeaders).toEqual(firstHeaders);
      expect([Number(firstLength), Number(secondLength)]).toEqual([
        Buffer.byteLength(a),
        Buffer.byteLength(b),
      ]);
    });

    it.each(PRICES)(
      'When %s is requested without X-PAYMENT, then 402 asks exactly %s atomic USDC',
      async (path, amount) => {
        const res = await fetch(h.baseUrl + path);
        expect(res.status).toBe(402);
        expect(res.headers.get('x402-version')).toBe('1');
        const body = Error402.parse(await res.json());
        expect(body.x402Version).toBe(1);
        expect(body.accepts).toEqual([
          {
            scheme: 'exact',
            network: 'solana',
            maxAmountRequired: amount,
            asset: h.ledger.networks.solana.mint,
            payTo: h.ledger.networks.solana.merchantTokenAccount,
            resource: h.baseUrl + path,
            description: expect.any(String),
            mimeType: 'application/json',
            // What is enforced for a push payment: PAYMENT_FRESHNESS_SECONDS.
            maxTimeoutSeconds: h.config.PAYMENT_FRESHNESS_SECONDS,
            outputSchema: {
              input: expect.objectContaining({ type: 'http', method: 'GET', discoverable: true }),
              output: expect.objectContaining({ type: 'object' }),
            },
          },
          // The official exact scheme in v1 form: a v1 exact SVM client pays it with payload.transaction.
          {
            scheme: 'exact',
            network: 'solana',
            maxAmountRequired: amount,
            asset: h.ledger.networks.solana.mint,
            payTo: h.ledger.networks.solana.merchantOwner,
            resource: h.baseUrl + path,
            description: expect.any(String),
            mimeType: 'application/json',
            maxTimeoutSeconds: h.config.PAYMENT_MAX_TIMEOUT_SECONDS,
            extra: expect.objectContaining({ feePayer: h.ledger.feePayer.publicKey }),
          },
        ]);
        expect(typeof body.error).toBe('string');
      },
    );

    it('When network=devnet, then the 402 advertises the devnet mint and merchant account', async () => {
      const res = await fetch(`${h.baseUrl}/api/v1/scout/gaps?network=devnet`);
      expect(res.status).toBe(402);
      const body = Error402.parse(await res.json());
      expect(body.accepts[0]).toMatchObject({
        network: 'solana-devnet',
        asset: h.ledger.networks['solana-devnet'].mint,
        payTo: h.ledger.networks['solana-devnet'].merchantTokenAccount,
      });
      expect(body.accepts[0]?.asset).not.toBe(h.ledger.networks.solana.mint);
    });

    it.each([
      ['/api/v1/scout/gaps?limit=0', 'query.limit'],
      ['/api/v1/scout/gaps?limit=101', 'query.limit'],
      ['/api/v1/scout/pain-clusters?limit=abc', 'query.limit'],
      ['/api/v1/scout/trends?days=31', 'query.days'],
      ['/api/v1/scout/trends?days=0', 'query.days'],
      ['/api/v1/scout/keywords?limit=201', 'query.limit'],
      ['/api/v1/scout/gaps?sector=Not%20A%20Tag!', 'query.sector'],
      ['/api/v1/scout/gaps?network=mars', 'query.network'],
    ])(
      'When %s is out of range, then 400 invalid_request names %s and asks no payment',
      async (path, field) => {
        const res = await fetch(h.baseUrl + path);
        expect(res.status).toBe(400);
        const body = (await res.json()) as {
          code: string;
          details: { issues: { path: string }[] };
          requestId: string;
        };
        expect(body.code).toBe('invalid_request');
        expect(body.details.issues.map((d) => d.path)).toContain(field);
        expect(typeof body.requestId).toBe('string');
      },
    );

    it('When new URLs of a route are asked without payment, then each 402 offers its own URL and reference, the rest the same', async () => {
      // The first 402 of the route may teach the hot path; the next ones are built from what it taught.
      const paths = ['limit=31&sector=ai', 'limit=32', 'sector=fin%74ech&limit=33', 'limit=034'].map(
        (q) => `/api/v1/scout/pain-clusters?${q}`,
      );
      const answers = [];
      for (const path of paths) {
        const res = await fetch(h.baseUrl + path, { headers: { 'x-request-id': 'same-id' } });
        expect(res.status).toBe(402);
        const offer = JSON.parse(
          Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8'),
        ) as { resource: { url: string }; accepts: { extra: { reference?: string; memo?: string } }[] };
        const text = await res.text();
        expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
        const body = Error402.parse(JSON.parse(text));
        expect(body.accepts.map((a) => a.resource)).toEqual([h.baseUrl + path, h.baseUrl + path]);
        expect(offer.resource.url).toBe(h.baseUrl + path);
        const reference = body.accepts[0]?.extra?.reference as string | undefined;
        expect(offer.accepts[0]?.extra.reference).toBe(reference);
        const { ['content-length']: _length, ['payment-required']: _offer, ...headers } = stableHeaders(res);
        answers.push({ headers, reference, text: text.split(h.baseUrl + path).join('URL') });
      }
      // With request-bound references (X402_REFERENCE_SECRET), each URL has its own.
      const referenced = Boolean(h.config.X402_REFERENCE_SECRET);
      expect(new Set(answers.map((a) => a.reference)).size).toBe(referenced ? paths.length : 1);
      const masked = ({ text, reference }: { text: string; reference?: string }) =>
        reference ? text.split(reference).join('REF') : text;
      for (const answer of answers.slice(1)) {
        expect(answer.headers).toEqual(answers[0]?.headers);
        expect(masked(answer)).toBe(masked(answers[0]!));
      }
    });

    it.each([
      ['an unknown parameter', '/api/v1/scout/gaps?limit=5&nonce=1', ['query.nonce']],
      ['a repeated parameter', '/api/v1/scout/gaps?limit=5&limit=6', ['query.limit']],
      ['a repeated network', '/api/v1/scout/trends?network=devnet&network=devnet', ['query.network']],
      ['encoded Unicode in a tag', '/api/v1/scout/keywords?sector=%E2%9C%93%F0%9F%98%80', ['query.sector']],
      ['an encoded NUL', '/api/v1/scout/gaps?sector=a%00b', ['query.sector']],
      ['a huge number', `/api/v1/scout/gaps?limit=${'9'.repeat(3000)}`, ['query.limit']],
      [
        'hundreds of unknown parameters',
        `/api/v1/scout/gaps?${Array.from({ length: 400 }, (_, i) => `p${i}=1`).join('&')}`,
        ['query'],
      ],
    ])(
      'When a query has %s, then every ask is the same 400 invalid_request naming it, with its own request id',
      async (_what, path, fields) => {
        const bodies: string[] = [];
        for (const id of ['bad-1', 'bad-2', 'bad-3']) {
          const res = await fetch(h.baseUrl + path, { headers: { 'x-request-id': id } });
          expect(res.status).toBe(400);
          expect(res.headers.get('x-request-id')).toBe(id);
          expect(res.headers.get('payment-required')).toBeNull();
          expect(res.headers.get('x-content-type-options')).toBe('nosniff');
          const text = await res.text();
          const body = JSON.parse(text) as {
            code: string;
            details: { issues: { path: string }[] };
            requestId: string;
          };
          expect(body.code).toBe('invalid_request');
          expect(body.requestId).toBe(id);
          for (const field of fields) expect(body.details.issues.map((d) => d.path)).toContain(field);
          bodies.push(text.replace(`"${id}"`, '"ID"'));
        }
        expect(new Set(bodies).size).toBe(1);
      },
    );

    it('When a paid request has a parameter out of range, then 400 and the signature is not consumed', async () => {
      const signature = await h.transfer({ amountAtomic: 100_000n });
      const bad = await h.getWithProof('/api/v1/scout/gaps?limit=500', signature);
      expect(bad.status).toBe(400);
      expect(await h.paymentRows(signature)).toEqual([]);
      const good = await h.getWithProof('/api/v1/scout/gaps?limit=5', signature);
      expect(good.status).toBe(200);
      expect(await h.paymentRows(signature)).toEqual([
        { status: 'completed', endpoint: 'GET /api/v1/scout/gaps' },
      ]);
    });
  });

  describe('Data API: paid answers', () => {
    it('When a paid answer is asked again with the same payment, then the same status, headers and bytes come back and the payment is charged once', async () => {
      const url = '/api/v1/scout/keywords?limit=7';
      const signature = await h.transfer({ amountAtomic: 50_000n });
      const paid = await h.getWithProof(url, signature);
      expect(paid.status).toBe(200);
      const paidBody = await paid.text();
      // With sign-in-with-x, only the payer signed in gets it again (a watcher: a 402).
      const signIn = signInWithXEnabled(h.config);
      if (signIn) expect((await h.getWithProof(url, signature)).status).toBe(402);
      for (let i = 0; i < 2; i++) {
        const again = signIn
          ? await fetch(h.baseUrl + url, {
              headers: {
                'X-PAYMENT': encodePaymentHeader('solana', signature),
                'SIGN-IN-WITH-X': await signedProof(h.agent, h.baseUrl + url),
              },
            })
          : await h.getWithProof(url, signature);
        expect(again.status).toBe(paid.status);
        expect(await again.text()).toBe(paidBody);
        expect(stableHeaders(again)).toEqual(stableHeaders(paid));
      }
      expect(await h.paymentRows(signature)).toEqual([
        { status: 'completed', endpoint: 'GET /api/v1/scout/keywords' },
      ]);
    });

    it('When gaps are paid for a sector, then that sector latest gaps come back with generatedFrom and the payment response', async () => {
      const { response, body, payment } = await h.pay('/api/v1/scout/gaps?sector=fintech&limit=1');
      expect(response.status).toBe(200);
      const gaps = GapsResponse.parse(body);
      expect(gaps).toMatchObject({ count: 1, sector: 'fintech' });
      expect(gaps.gaps[0]?.title).toBe('Reconciliation copilots');
      expect(gaps.generatedFrom).not.toBeNull();
      expect(payment?.requirements.maxAmountRequired).toBe('100000');
      const settled = decodePaymentResponse(response.headers.get('x-payment-response') ?? '');
      expect(settled).toEqual({
        success: true,
        transaction: payment?.signature,
        network: 'solana',
        payer: h.agent.publicKey.toBase58(),
        // The signed receipt (docs/payments.md, "Signed offers and receipts"; test/receipts.test.ts).
        extensions: {
          'offer-receipt': { info: { receipt: { format: 'jws', signature: expect.any(String) } } },
        },
      });
    });

    it('When gaps are paid without a sector, then every sector is merged by trend score', async () => {
      const { body } = await h.pay('/api/v1/scout/gaps');
      const gaps = GapsResponse.parse(body);
      expect(gaps.sector).toBeNull();
      expect(gaps.gaps.map((g) => g.title)).toEqual([
        'Reconciliation copilots',
        'Flaky test triage',
        'Stablecoin payroll',
      ]);
    });

    it('When a sector has no data, then the answer is an empty list and the payment is still taken', async () => {
      const { response, body, payment } = await h.pay('/api/v1/scout/pain-clusters?sector=biotech');
      expect(response.status).toBe(200);
      expect(body).toEqual({ painClusters: [], count: 0, generatedFrom: null, sector: 'biotech' });
      expect(await h.paymentRows(payment?.signature ?? '')).toEqual([
        { status: 'completed', endpoint: 'GET /api/v1/scout/pain-clusters' },
      ]);
    });

    it('When pain clusters are paid, then they are merged by mentions', async () => {
      const { body } = await h.pay('/api/v1/scout/pain-clusters?limit=2');
      expect(body).toMatchObject({
        count: 2,
        painClusters: [{ theme: 'flaky tests' }, { theme: 'manual reconciliation' }],
      });
    });

    it('When trends are paid with days, then only items dated inside the window come back, in the TrendItem shape', async () => {
      const week = await h.pay('/api/v1/scout/trends');
      expect(week.body).toMatchObject({ count: 2, days: 7, sector: null });
      expect((week.body as { trends: unknown[] }).trends[0]).toEqual({
        title: 'Instant payments',
        description: 'Volumes double',
        velocity: 'rising',
        source: 'news-a',
      });
      const month = await h.pay('/api/v1/scout/trends?sector=fintech&days=30');
      expect((month.body as { trends: { title: string }[] }).trends.map((t) => t.title)).toEqual([
        'Instant payments',
        'Old news',
      ]);
    });

    it('When keywords are paid without a sector, then counts are summed across sectors', async () => {
      const { body } = await h.pay('/api/v1/scout/keywords');
      expect(body).toMatchObject({
        keywords: [
          { keyword: 'reconciliation', count: 21 },
          { keyword: 'ci', count: 9 },
          { keyword: 'stablecoin', count: 7 },
        ],
        count: 3,
      });
    });

    it('When the brief is paid, then the latest brief comes back with its sectors', async () => {
      const { response, body } = await h.pay('/api/v1/scout/brief');
      expect(response.status).toBe(200);
      expect(body).toMatchObject({
        brief: { overview: 'Payments go instant' },
        sectors: ['dev-tools', 'fintech'],
      });
    });

    it('When a newer report is imported, then the Data API serves it', async () => {
      const newer = buildReport({ generatedAt: new Date(Date.now() + 1000).toISOString() });
      newer.sectors = newer.sectors.slice(0, 1).map((s) => ({ ...s, gaps: s.gaps.slice(1) }));
      const { id, created } = await h.reports.importReport(newer, 'import');
      expect(created).toBe(true);
      try {
        const { body } = await h.pay('/api/v1/scout/gaps?sector=fintech');
        expect(GapsResponse.parse(body)).toMatchObject({
          count: 1,
          generatedFrom: newer.generatedAt,
          gaps: [{ title: 'Stablecoin payroll' }],
        });
      } finally {
        // The other tests read the report imported in beforeAll as the latest one. Reports are only
        // ever added by the service: a deletion behind its back is announced to its cache.
        await h.db.scanReport.delete({ where: { id } });
        h.reports.invalidate();
      }
    });
  });

  describe('Free endpoints', () => {
    it('When sectors are listed, then counts follow the stored reports', async () => {
      const res = await fetch(`${h.baseUrl}/api/v1/sectors`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        sectors: { sector: string; report_count: number; gaps_count: number }[];
        total_reports: number;
      };
      expect(body.sectors.map((s) => s.sector).sort()).toEqual(['dev-tools', 'fintech']);
      expect(body.total_reports).toBe(body.sectors.reduce((n, s) => n + s.report_count, 0));
    });

    it('When health is asked while no pipeline runner is alive, then 503 upstream with Retry-After 30 and the health body { ok, llm, search, server_time, errorClass }', async () => {
      const res = await fetch(`${h.baseUrl}/api/v1/health`);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('30');
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        ok: false,
        llm: { ok: false, latency_ms: 0, error: expect.stringContaining('heartbeat') },
        search: null,
        errorClass: 'upstream',
      });
      expect(Number.isNaN(Date.parse(String(body.server_time)))).toBe(false);
    });

    it('When an unknown path is requested, then 404 not_found in the envelope', async () => {
      const res = await fetch(`${h.baseUrl}/api/v1/nope`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({
        code: 'not_found',
        error: expect.any(String),
        requestId: expect.any(String),
      });
    });
  });

  describe('OpenAPI', () => {
    it('When /openapi.json is read, then it is OpenAPI 3.1 with every endpoint and the prices the 402 asks', async () => {
      const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as {
        openapi: string;
        paths: Record<
          string,
          { get?: { 'x-max-amount-required'?: string }; post?: { 'x-max-amount-required'?: string } }
        >;
        components: { schemas: Record<string, unknown> };
      };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths).sort()).toEqual([
        '/.well-known/did.json',
        '/.well-known/jwks.json',
        '/api/v1/forge/ideate',
        '/api/v1/health',
        '/api/v1/jobs/{jobId}',
        '/api/v1/prove/debate',
        '/api/v1/scout/brief',
        '/api/v1/scout/gaps',
        '/api/v1/scout/keywords',
        '/api/v1/scout/pain-clusters',
        '/api/v1/scout/trends',
        '/api/v1/sectors',
      ]);
      for (const [path, amount] of PRICES)
        expect(doc.paths[path]?.get?.['x-max-amount-required']).toBe(amount);
      expect(doc.paths['/api/v1/forge/ideate']?.post?.['x-max-amount-required']).toBe('15000000');
      expect(doc.paths['/api/v1/prove/debate']?.post?.['x-max-amount-required']).toBe('25000000');
      expect(doc.components.schemas).toHaveProperty('Error402');
    });

    it('When /docs is opened, then it is the reference page of /openapi.json, with its renderer served by market-intel', async () => {
      const res = await fetch(`${h.baseUrl}/docs`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(await res.text()).toContain('data-openapi-url="/openapi.json"');
      const renderer = await fetch(`${h.baseUrl}/docs/assets/scalar.js`);
      expect(renderer.status).toBe(200);
      // Read to the end: an unread answer would hold the connection open and the server's close with it.
      expect((await renderer.arrayBuffer()).byteLength).toBeGreaterThan(0);
    });
  });
});
