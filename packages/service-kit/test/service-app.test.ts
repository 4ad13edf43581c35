import { Router, type RequestHandler } from 'express';
import request from 'supertest';
import { createLogger, createServiceApp, type LlmsTxt } from '../src/index';

const logger = createLogger({ name: 'test', level: 'silent' });
const LLMS_TXT: LlmsTxt = { title: 'svc', summary: 'A test service.', details: [], sections: [] };
const DOC = { openapi: '3.1.0', info: { title: 'svc', version: '1' }, paths: {} };

/** A router answering `GET <path>` with `{ by }`. */
function answering(path: string, by: string): Router {
  return Router().get(path, (_req, res) => {
    res.json({ by });
  });
}

function app(routes: Parameters<typeof createServiceApp>[1]['routes'], first: RequestHandler[] = []) {
  return createServiceApp(
    { logger },
    { first, mcp: { name: 'svc', version: '1', tools: [] }, llmsTxt: LLMS_TXT, openApi: DOC, routes },
  );
}

test('When a service app is built, then the first routers answer before the documents and the routes, and the routes after the documents', async () => {
  const served = app(
    [answering('/openapi.json', 'routes'), answering('/a', 'routes'), answering('/b', 'routes')],
    [answering('/a', 'first')],
  );
  expect((await request(served).get('/a')).body).toEqual({ by: 'first' });
  expect((await request(served).get('/b')).body).toEqual({ by: 'routes' });
  expect((await request(served).get('/openapi.json')).body).toEqual(DOC);
  expect((await request(served).get('/llms.txt')).text).toContain('# svc');
  expect((await request(served).get('/livez')).body).toEqual({ ok: true });
  const mcp = await request(served).post('/mcp').set('accept', 'application/json, text/event-stream').send({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/list',
  });
  expect(mcp.body).toMatchObject({ id: 1, result: { tools: [] } });
});

test('When a route is mounted under a path, then only requests under that path pass through it', async () => {
  const seen: string[] = [];
  const note: RequestHandler = (req, _res, next) => {
    seen.push(`${req.baseUrl} ${req.path}`);
    next();
  };
  const served = app([
    { path: '/api', use: [note] },
    answering('/api/x', 'api'),
    answering('/other', 'other'),
  ]);
  await request(served).get('/api/x').expect(200);
  await request(served).get('/other').expect(200);
  expect(seen).toEqual(['/api /x']);
});

test('When nothing matches or a route throws, then the answer is the error envelope with the request id', async () => {
  const failing = Router().get('/boom', () => {
    throw new Error('secret detail');
  });
  const served = app([failing]);
  const missing = await request(served).get('/nowhere').set('x-request-id', 'req-1');
  expect(missing.status).toBe(404);
  expect(missing.body).toEqual({ error: 'No route for GET /nowhere', code: 'not_found', requestId: 'req-1' });
  const boom = await request(served).get('/boom');
  expect(boom.status).toBe(500);
  expect(boom.body).toMatchObject({ code: 'internal_error' });
  expect(JSON.stringify(boom.body)).not.toContain('secret detail');
});
