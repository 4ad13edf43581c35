import express from 'express';
import request from 'supertest';
import { AppError, errorHandler, notFoundHandler } from '../src/index';

const silent = { error: () => undefined, warn: () => undefined };

function buildApp() {
  const app = express();
  app.use(express.json({ limit: '1kb' }));
  app.get('/teapot', () => {
    throw new AppError('conflict', 'already there', {
      details: { jobId: 'j1' },
      headers: { 'Retry-After': '5' },
    });
  });
  app.get('/boom', () => {
    throw new Error('secret database detail');
  });
  // Shapes of what Prisma 7 (driver adapter) and node-postgres throw when PostgreSQL is unreachable.
  app.get('/db-down/prisma', () => {
    throw Object.assign(new Error("Can't reach database server at 127.0.0.1:5432"), {
      name: 'PrismaClientKnownRequestError',
      code: 'P2010',
      meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'DatabaseNotReachable' } } },
    });
  });
  app.get('/db-down/pg', () => {
    throw new Error('query failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    });
  });
  app.post('/echo', (req, res) => {
    res.json(req.body);
  });
  app.get('/items/:id', (req, res) => {
    res.json({ id: req.params.id });
  });
  app.use(notFoundHandler);
  app.use(errorHandler(silent));
  return app;
}

describe('error middleware', () => {
  it('When an AppError is thrown, then its status, code, details and headers are sent in the envelope', async () => {
    const res = await request(buildApp()).get('/teapot').set('x-request-id', 'req-1');
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toEqual({
      error: 'already there',
      code: 'conflict',
      details: { jobId: 'j1' },
      requestId: 'req-1',
    });
  });

  it('When an unexpected error is thrown, then a generic 500 hides its message', async () => {
    const res = await request(buildApp()).get('/boom');
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('internal_error');
    expect(res.body.error).toBe('Internal server error');
    expect(typeof res.body.requestId).toBe('string');
  });

  it('When PostgreSQL cannot be reached, then 503 service_unavailable with Retry-After, not a 500', async () => {
    for (const path of ['/db-down/prisma', '/db-down/pg']) {
      const res = await request(buildApp()).get(path);
      expect([path, res.status, res.headers['retry-after'], res.body.code]).toEqual([
        path,
        503,
        '5',
        'service_unavailable',
      ]);
      expect(res.body.error).not.toMatch(/5432/);
    }
  });

  it('When the route is unknown, then 404 not_found', async () => {
    const res = await request(buildApp()).get('/nope');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('When the JSON body is malformed, then 400 invalid_json', async () => {
    const res = await request(buildApp()).post('/echo').set('content-type', 'application/json').send('{"a":');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  it('When the body is over the limit, then 413 payload_too_large', async () => {
    const res = await request(buildApp())
      .post('/echo')
      .set('content-type', 'application/json')
      .send(JSON.stringify({ a: 'x'.repeat(2000) }));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });

  // Found by the OpenAPI fuzz suites: `GET /api/discover/skills/%` answered 500.
  it('When a path parameter is not valid percent-encoding, then 400 invalid_request, not a 500', async () => {
    for (const path of ['/items/%', '/items/%zz', '/items/%E0%A4%A']) {
      const res = await request(buildApp()).get(path);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'The URL path is not valid percent-encoding',
        code: 'invalid_request',
        requestId: expect.any(String),
      });
    }
  });
});
