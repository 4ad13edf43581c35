import express from 'express';
import pino from 'pino';
import request from 'supertest';
import { z } from 'zod';
import { AppError, errorHandler, ErrorEnvelope, notFoundHandler } from '@repo/errors';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { buildOpenApiDocument } from '@repo/schemas';
import {
  contractRouter,
  createBaseApp,
  createLogger,
  errorResponse,
  openApiRoutes,
  validated,
} from '../src/index';
import { exampleCheck, mountedRoutes, routeCoverage } from '../src/testing';

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
        const { params, query } = validated<z.infer<typeof ItemQuery>, { itemId: string }>(res.locals);
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
        validation: { bodyCode: 'validation_failed' },
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
    expect(badId.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
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
    expect(routeCoverage(app, doc, ['get /livez', 'get /readyz', 'get /openapi.json', 'get /docs'])).toEqual({
      undocumented: ['get /v2/hidden/{x}'],
      unmounted: [],
    });
    const served = await request(app).get('/openapi.json');
    expect(served.body).toEqual(doc);
  });

  it('When /docs is asked, then it is the Swagger UI page of /openapi.json, its assets are served from the service, and nothing else under them', async () => {
    const { app } = buildApp();
    const page = await request(app).get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-spec="/openapi.json"');
    for (const asset of [
      '/docs/assets/swagger-ui-bundle.js',
      '/docs/assets/docs-init.js',
      '/docs/assets/swagger-ui.css',
    ]) {
      expect(page.text).toContain(asset);
      const res = await request(app).get(asset);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=86400');
    }
    expect((await request(app).get('/docs/assets/index.html')).status).toBe(404);
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
    expect(check.checked).toBe(3);
    expect(check.invalid).toEqual([expect.stringMatching(/^GET \/api\/things 200: data\/n must be integer/)]);
    expect(check.missing).toEqual([]);
  });
});

describe('The /docs page in a browser', () => {
  it("When Chromium opens /docs under the base app's Content-Security-Policy, then Swagger UI renders every operation with no error or CSP violation", async () => {
    const { app, doc } = buildApp();
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox'],
    });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
      });
      const { port } = server.address() as AddressInfo;
      await page.goto(`http://127.0.0.1:${port}/docs`);
      await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
      const operations = Object.values(doc.paths as Record<string, object>).flatMap((p) => Object.keys(p));
      expect(await page.locator('.opblock').count()).toBe(operations.length);
      expect(await page.locator('.opblock-summary-path').allInnerTexts()).toEqual(
        expect.arrayContaining(['/api/items/{itemId}', '/api/items']),
      );
      await page.locator('.opblock-summary').first().click();
      await page.locator('.responses-wrapper').first().waitFor();
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
      server.close();
    }
  }, 60_000);
});
