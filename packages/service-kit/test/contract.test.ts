import express from 'express';
import pino from 'pino';
import request from 'supertest';
import { z } from 'zod';
import { AppError, errorHandler, ErrorEnvelope, notFoundHandler } from '@repo/errors';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument } from '@repo/schemas';
import {
  contractRouter,
  createBaseApp,
  createLogger,
  errorResponse,
  openApiRoutes,
  RETRY_AFTER_HEADER,
  withExamples,
} from '../src/index';
import {
  exampleCheck,
  expectDocsRender,
  headerExamples,
  markdownAnchors,
  mountedRoutes,
  routeCoverage,
} from '../src/testing';

const logger = createLogger({ name: 'contract-test', level: 'silent' });
const Item = z.object({ id: z.string(), qty: z.number().int() });
const ItemQuery = z.object({
  limit: z.coerce.number().int().min(1).max(50).default(10).meta({ description: 'items per page' }),
  tag: z.string().max(8).optional(),
});

function buildApp() {
  const api = contractRouter()
    .route(
      {
        method: 'get',
        path: '/api/items/{itemId}',
        operationId: 'getItem',
        summary: 'One item',
        request: { params: z.object({ itemId: z.string().regex(/^i_\d+$/) }), query: ItemQuery },
        responses: {
          '200': { description: 'the item', body: Item },
          '400': { description: 'bad id or query', body: ErrorEnvelope },
        },
      },
      (_req, res) => {
        const { params, query } = res.locals.valid;
        res.json({ id: params.itemId, qty: query.limit });
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/items',
        operationId: 'createItem',
        summary: 'Create an item',
        request: { body: Item },
        validation: { bodyStatus: 422 },
        before: [
          (req, _res, next) => {
            if (req.headers['x-api-key'] !== 'k') next(new AppError('unauthorized', 'no key'));
            else next();
          },
        ],
        responses: { '201': { description: 'created', body: Item } },
      },
      (req, res) => {
        res.status(201).json(req.body);
      },
    );
  const doc = buildOpenApiDocument({
    info: { title: 'items', version: '1' },
    components: { ErrorEnvelope, Item },
    operations: [...api.operations],
  });
  const app = createBaseApp({ logger });
  app.use(openApiRoutes(doc));
  app.use(api.router);
  const extra = express.Router();
  extra.get('/hidden/:x', (_req, res) => {
    res.end();
  });
  app.use('/v2', extra);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return { app, doc };
}

describe('contractRouter', () => {
  it('When a route is declared, then its parameters, body and responses are in the document, components as $refs', () => {
    const { doc } = buildApp();
    const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>;
    const get = paths['/api/items/{itemId}']?.get;
    expect(get?.operationId).toBe('getItem');
    expect(get?.parameters).toEqual([
      { name: 'itemId', in: 'path', required: true, schema: { type: 'string', pattern: '^i_\\d+$' } },
      {
        name: 'limit',
        in: 'query',
        description: 'items per page',
        schema: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
      },
      { name: 'tag', in: 'query', schema: { type: 'string', maxLength: 8 } },
    ]);
    expect(get?.responses).toEqual({
      '200': {
        description: 'the item',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } },
      },
      '400': {
        description: 'bad id or query',
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/ErrorEnvelope' },
            // Every error answer without an example of its own gets an envelope.
            example: { error: 'bad id or query', code: 'invalid_request', requestId: expect.any(String) },
          },
        },
      },
    });
    const post = paths['/api/items']?.post;
    expect(post?.requestBody).toMatchObject({ required: true });
  });

  it('When a request breaks the declared schemas, then the route answers 400 (422 for the body when asked) and the handler gets parsed values', async () => {
    const { app } = buildApp();
    expect((await request(app).get('/api/items/i_7?limit=3')).body).toEqual({ id: 'i_7', qty: 3 });
    expect((await request(app).get('/api/items/i_7')).body).toEqual({ id: 'i_7', qty: 10 });
    const badId = await request(app).get('/api/items/x?limit=99');
    expect(badId.status).toBe(400);
    expect(badId.body.code).toBe('invalid_request');
    expect(badId.body.details.issues.map((d: { path: string }) => d.path).sort()).toEqual([
      'params.itemId',
      'query.limit',
    ]);
    const badBody = await request(app).post('/api/items').set('x-api-key', 'k').send({ id: 'a', qty: 1.5 });
    expect(badBody.status).toBe(422);
    const created = await request(app).post('/api/items').set('x-api-key', 'k').send({ id: 'a', qty: 2 });
    expect(created.status).toBe(201);
  });

  it('When middleware is declared before validation, then it runs first', async () => {
    const { app } = buildApp();
    // The key check fails before the invalid body would be refused with 422.
    const refused = await request(app).post('/api/items').send({ id: 1 });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('unauthorized');
  });

  it('When the handler parses the body itself, then the body is documented and no validation step refuses it', async () => {
    const api = contractRouter().route(
      {
        method: 'post',
        path: '/raw',
        operationId: 'raw',
        summary: 'raw',
        request: { body: Item, bodyParsedByHandler: true },
        responses: { '200': { description: 'echo' } },
      },
      (req, res) => {
        res.json({ got: req.body });
      },
    );
    expect(api.operations[0]?.requestBody).toEqual({ body: Item, required: true });
    const app = express().use(express.json()).use(api.router);
    expect((await request(app).post('/raw').send({ anything: 1 })).body).toEqual({ got: { anything: 1 } });
  });

  it('When middleware runs before logging, then the access log sees the request it rewrote', async () => {
    const lines: string[] = [];
    const app = createBaseApp({
      logger: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }),
      beforeLogging: [
        (req, _res, next) => {
          req.url = req.url.replace(/([?&])key=[^&]*/, '$1key=[redacted]');
          req.originalUrl = req.originalUrl.replace(/([?&])key=[^&]*/, '$1key=[redacted]');
          next();
        },
      ],
    });
    app.get('/ingest', (_req, res) => {
      res.end();
    });
    await request(app).get('/ingest?key=secret-value');
    expect(lines.join('')).toContain('key=[redacted]');
    expect(lines.join('')).not.toContain('secret-value');
  });

  it('When the same operation is declared twice, then declaring it throws', () => {
    const api = contractRouter();
    const contract = {
      method: 'get' as const,
      path: '/a',
      operationId: 'a',
      summary: 'a',
      responses: { '200': { description: 'ok' } },
    };
    api.route(contract, (_req, res) => res.end());
    expect(() => api.route({ ...contract, operationId: 'b' }, (_req, res) => res.end())).toThrow(/twice/);
    expect(() => api.route({ ...contract, path: '/b' }, (_req, res) => res.end())).toThrow(/twice/);
    // A path parameter without its schema, or a schema naming another one, is a declaration error.
    expect(() =>
      api.route({ ...contract, operationId: 'c', path: '/c/{id}' }, (_req, res) => res.end()),
    ).toThrow(/differ/);
    expect(() =>
      api.route(
        {
          ...contract,
          operationId: 'd',
          path: '/d/{id}',
          request: { params: z.object({ key: z.string() }) },
        },
        (_req, res) => res.end(),
      ),
    ).toThrow(/differ/);
  });

  it('When routes are listed, then routers mounted under a prefix and infrastructure routes appear, and coverage names the differences', async () => {
    const { app, doc } = buildApp();
    expect(mountedRoutes(app)).toEqual(
      expect.arrayContaining([
        { method: 'get', path: '/livez' },
        { method: 'get', path: '/openapi.json' },
        { method: 'get', path: '/api/items/{itemId}' },
        { method: 'post', path: '/api/items' },
        { method: 'get', path: '/v2/hidden/{x}' },
      ]),
    );
    expect(
      routeCoverage(app, doc, [
        'get /livez',
        'get /readyz',
        'get /openapi.json',
        'get /docs',
        'get /docs/assets/{file}',
      ]),
    ).toEqual({
      undocumented: ['get /v2/hidden/{x}'],
      unmounted: [],
    });
    const served = await request(app).get('/openapi.json');
    expect(served.body).toEqual(doc);
  });

  it("When /docs is asked, then it is Scalar's reference of /openapi.json under a policy that reaches no other host, its assets are served from the service, and nothing else under them", async () => {
    const { app } = buildApp();
    const page = await request(app).get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-openapi-url="/openapi.json"');
    expect(page.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(page.headers['content-security-policy']).toContain("font-src 'self' data:");
    for (const asset of ['/docs/assets/scalar.js', '/docs/assets/docs-init.js']) {
      expect(page.text).toContain(asset);
      const res = await request(app).get(asset);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=86400');
    }
    expect((await request(app).get('/docs/assets/index.html')).status).toBe(404);
    expect((await request(app).get('/docs/assets/standalone.js')).status).toBe(404);
    expect((await request(app).get('/docs/assets/../package.json')).status).toBe(404);
  });
});

describe('Examples in the document', () => {
  it('When an error answer has no example, then the document shows an envelope with the code its description names, and exampleCheck finds a wrong example', () => {
    const router = contractRouter().route(
      {
        method: 'get',
        path: '/api/things',
        operationId: 'listThings',
        summary: 'Things',
        responses: {
          '200': { description: 'the things', body: z.object({ n: z.int() }), example: { n: 'two' } },
          '429': errorResponse('too many requests from this key (`rate_limited`)'),
          '404': errorResponse('nothing here'),
        },
      },
      (_req, res) => {
        res.json({ n: 2 });
      },
    );
    const doc = buildOpenApiDocument({
      info: { title: 'Things', version: '1.0.0' },
      components: { ErrorEnvelope },
      operations: [...router.operations],
    });
    const media = (status: string) =>
      (
        doc.paths as Record<
          string,
          Record<string, { responses: Record<string, { content: Record<string, { example?: unknown }> }> }>
        >
      )['/api/things']?.get?.responses[status]?.content['application/json'];
    expect(media('429')?.example).toEqual({
      error: 'too many requests from this key',
      code: 'rate_limited',
      requestId: expect.any(String),
    });
    expect(media('404')?.example).toMatchObject({ code: 'not_found' });
    const check = exampleCheck(doc as Parameters<typeof exampleCheck>[0]);
    // 200, 404, 429 and the 400 (an unknown or invalid parameter) every operation is given.
    expect(check.checked).toBe(4);
    expect(check.invalid).toEqual([expect.stringMatching(/^GET \/api\/things 200: data\/n must be integer/)]);
    expect(check.missing).toEqual([]);
  });
});

describe('Header examples', () => {
  const Offer = z.object({ x402Version: z.literal(2), amount: z.string() });
  // A base64 JSON header, described with the JSON Schema content keywords.
  const encoded = {
    type: 'string',
    contentEncoding: 'base64',
    contentMediaType: 'application/json',
    contentSchema: { $ref: '#/components/schemas/Offer' },
  };
  const sharedHeaders = {
    'X-OFFER': { description: 'the offer', schema: encoded },
    'x-version': { description: 'protocol version', schema: { type: 'string', const: '1' } },
  };
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
  const router = contractRouter().route(
    {
      method: 'get',
      path: '/api/paid',
      operationId: 'getPaid',
      summary: 'Paid',
      request: { headers: [{ name: 'X-PROOF', in: 'header', schema: encoded }] },
      responses: {
        '200': { description: 'paid', body: Item, headers: sharedHeaders },
        '402': {
          description: 'pay first',
          body: ErrorEnvelope,
          headers: { ...sharedHeaders, ...RETRY_AFTER_HEADER },
        },
      },
    },
    (_req, res) => {
      res.json({ id: 'i_1', qty: 1 });
    },
  );
  const build = (operations: Parameters<typeof buildOpenApiDocument>[0]['operations']) =>
    buildOpenApiDocument({
      info: { title: 'Paid', version: '1.0.0' },
      components: { ErrorEnvelope, Item, Offer },
      operations,
    });

  it('When headers of a real exchange are captured, then withExamples documents them as the examples of header parameters and response headers, and exampleCheck decodes base64 JSON against contentSchema', () => {
    const bare = build([...router.operations]);
    const captured = {
      ...headerExamples(
        bare,
        'getPaid',
        '402',
        new Headers({
          'x-offer': b64({ x402Version: 2, amount: '100' }),
          'X-Version': '1',
          'retry-after': '30',
          'x-other': 'no',
        }),
      ),
      // The amount of the proof is a number: its schema refuses the decoded JSON.
      ...headerExamples(bare, 'getPaid', 'request', { 'x-proof': b64({ x402Version: 2, amount: 7 }) }),
      'getPaid 200 header X-OFFER': 'not base64!',
    };
    expect(captured).toEqual({
      'getPaid 402 header X-OFFER': b64({ x402Version: 2, amount: '100' }),
      'getPaid 402 header x-version': '1',
      // Typed as its schema says: an integer header's example is a number.
      'getPaid 402 header Retry-After': 30,
      'getPaid request header X-PROOF': b64({ x402Version: 2, amount: 7 }),
      'getPaid 200 header X-OFFER': 'not base64!',
    });
    const doc = build(withExamples(router.operations, captured)) as Parameters<typeof exampleCheck>[0];
    const get = (doc.paths?.['/api/paid'] as Record<string, Record<string, unknown>>).get;
    expect(get?.parameters).toEqual([
      { name: 'X-PROOF', in: 'header', schema: encoded, example: b64({ x402Version: 2, amount: 7 }) },
    ]);
    expect(get?.responses).toMatchObject({
      '402': { headers: { 'X-OFFER': { example: b64({ x402Version: 2, amount: '100' }) } } },
    });
    // The header objects the routes share are not changed.
    expect(sharedHeaders['X-OFFER']).not.toHaveProperty('example');

    const check = exampleCheck(doc);
    expect(check.invalid).toEqual([
      expect.stringMatching(
        /^GET \/api\/paid request header X-PROOF \(decoded\): data\/amount must be string/,
      ),
      expect.stringMatching(/^GET \/api\/paid 200 header X-OFFER: the example is not base64/),
    ]);
    expect(check.missingHeaders).toEqual(['GET /api/paid 200 header x-version']);
    expect(check.missing).toEqual(['GET /api/paid 200', 'GET /api/paid 402']);
    // With the 400 (an unknown or invalid parameter) every operation is given.
    expect(check.checked).toBe(6);
    expect(() => headerExamples(bare, 'getPaid', '500', {})).toThrow(/no 500 answer/);
  });
});

describe('Links into a README', () => {
  it('When a Markdown file is read, then its anchors are the ones GitHub gives its headings, code blocks left out', () => {
    const markdown = [
      '# market-intel',
      '```bash',
      '# development: not a heading',
      '```',
      '### Paying, in three steps',
      '## Failed jobs and health (market-intel)',
      '## Tests',
      '## Tests',
    ].join('\n');
    expect(markdownAnchors(markdown)).toEqual([
      'market-intel',
      'paying-in-three-steps',
      'failed-jobs-and-health-market-intel',
      'tests',
      'tests-1',
    ]);
  });
});

describe('The /docs page in a browser', () => {
  async function listen(app: express.Application): Promise<{ baseUrl: string; close: () => void }> {
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    return { baseUrl: `http://127.0.0.1:${port}`, close: () => server.close() };
  }

  it("When Chromium opens /docs under its Content-Security-Policy, then Scalar's reference renders every operation with its search, with no error or CSP violation, and follows a dark color scheme", async () => {
    const { app, doc } = buildApp();
    const { baseUrl, close } = await listen(app);
    const screenshot = path.join(os.tmpdir(), `service-kit-docs-${process.pid}.png`);
    try {
      const render = await expectDocsRender(baseUrl, { expand: 'createItem', screenshot });
      expect(render.operations).toEqual(['GET /api/items/{itemId}', 'POST /api/items']);
      expect(Object.keys(doc.paths as object)).toEqual(['/api/items/{itemId}', '/api/items']);
      // A PNG of the viewport.
      expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');
      expect(render.dark).toBe(false);
      expect((await expectDocsRender(baseUrl, { colorScheme: 'dark' })).dark).toBe(true);
    } finally {
      rmSync(screenshot, { force: true });
      close();
    }
  }, 60_000);

  it('When the page runs an inline script that the Content-Security-Policy blocks, then expectDocsRender fails naming the violation', async () => {
    const { app: inner } = buildApp();
    const page = (await request(inner).get('/docs')).text.replace(
      '</body>',
      '<script>window.x = 1</script></body>',
    );
    const app = createBaseApp({ logger });
    app.get('/docs', (_req, res) => {
      res.type('html').send(page);
    });
    app.use(inner);
    const { baseUrl, close } = await listen(app);
    try {
      await expect(expectDocsRender(baseUrl)).rejects.toThrow(/CSP violation: script-src/);
    } finally {
      close();
    }
  }, 60_000);

  it('When the document names an operation that the page does not show, then expectDocsRender fails naming it', async () => {
    const { doc } = buildApp();
    const app = createBaseApp({ logger });
    // The browser gets the real document; any other client one with an operation more.
    app.get('/openapi.json', (req, res, next) => {
      if (/Chrome/.test(req.get('user-agent') ?? '')) return next();
      res.json({ ...doc, paths: { ...(doc.paths as object), '/ghost': { delete: { responses: {} } } } });
    });
    app.use(openApiRoutes(doc));
    const { baseUrl, close } = await listen(app);
    try {
      await expect(expectDocsRender(baseUrl)).rejects.toThrow(/not on the page: DELETE \/ghost/);
    } finally {
      close();
    }
  }, 60_000);
});
