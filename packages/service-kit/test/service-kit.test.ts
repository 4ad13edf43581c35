import request from 'supertest';
import { z } from 'zod';
import { errorHandler, notFoundHandler } from '@repo/errors';
import {
  clientIpKey,
  BrokerEnv,
  ConfigError,
  contractRouter,
  createBaseApp,
  createLogger,
  DatabaseEnv,
  intVar,
  parseConfig,
  publicServiceEnv,
  replicaIdVar,
} from '../src/index';

const logger = createLogger({ name: 'test', level: 'silent' });

function buildApp(ready = true) {
  const app = createBaseApp({ logger, isReady: () => ready, bodyLimit: '2kb' });
  const ok = { '200': { description: 'the parsed request' } };
  const api = contractRouter()
    .route(
      {
        method: 'get',
        path: '/items',
        operationId: 'listItems',
        summary: 'Items',
        request: { query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }) },
        responses: ok,
      },
      (_req, res) => {
        res.json({ limit: res.locals.valid.query.limit });
      },
    )
    .route(
      {
        method: 'post',
        path: '/store',
        operationId: 'store',
        summary: 'Stores a payload',
        request: {
          body: z.object({ name: z.string(), payload: z.record(z.string(), z.unknown()).optional() }),
        },
        responses: ok,
      },
      (req, res) => {
        res.json(req.body);
      },
    )
    .route(
      {
        method: 'post',
        path: '/login',
        operationId: 'logIn',
        summary: 'Logs in',
        request: { body: z.object({ email: z.string(), password: z.string() }) },
        validation: { nulAllowed: ['body.password'] },
        responses: ok,
      },
      (_req, res) => {
        res.json({ ok: true });
      },
    )
    .route(
      {
        method: 'post',
        path: '/compute',
        operationId: 'compute',
        summary: 'Starts a computation',
        request: { body: z.object({ idea: z.string().min(10) }) },
        validation: { bodyStatus: 422 },
        responses: ok,
      },
      (req, res) => {
        res.json(req.body);
      },
    );
  app.use(api.router);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}

describe('service kit', () => {
  it('When a query is valid, then the parsed values with defaults reach the handler', async () => {
    expect((await request(buildApp()).get('/items')).body).toEqual({ limit: 20 });
    expect((await request(buildApp()).get('/items?limit=5')).body).toEqual({ limit: 5 });
  });

  it('When a query is out of range, then 400 invalid_request names the field', async () => {
    const res = await request(buildApp()).get('/items?limit=101');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.details.issues).toEqual([expect.objectContaining({ path: 'query.limit' })]);
  });

  it('When a body fails and the route asks for 422, then 422 with the same code, invalid_request', async () => {
    const res = await request(buildApp()).post('/compute').send({ idea: 'short' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.details.issues[0]).toEqual({
      path: 'body.idea',
      code: 'too_small',
      message: 'must be at least 10 characters long',
    });
    expect(res.body.error).toBe('`idea` must be at least 10 characters long');
  });

  // Found by the OpenAPI fuzz suites: a NUL in a skill's description reached PostgreSQL and answered 500.
  it('When a string in the body holds a NUL character, at any depth or in a key, then 400 invalid_request names it', async () => {
    for (const [body, path] of [
      [{ name: 'a\u0000b' }, 'body.name'],
      [{ name: 'ok', payload: { deep: [{ x: '\u0000' }] } }, 'body.payload.deep.0.x'],
      [{ name: 'ok', payload: { 'k\u0000': 1 } }, 'body.payload.k\u0000'],
    ] as const) {
      const res = await request(buildApp()).post('/store').send(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.issues).toEqual([
        { path, code: 'invalid_characters', message: 'must not contain the NUL character (U+0000)' },
      ]);
    }
    // A parameter the route does not declare is refused by name, whatever it holds.
    const query = await request(buildApp()).get('/items?limit=1&x=%00');
    expect(query.status).toBe(400);
    expect(query.body.details.issues).toEqual([
      expect.objectContaining({ path: 'query.x', code: 'unknown_parameter' }),
    ]);
    const ok = await request(buildApp())
      .post('/store')
      .send({ name: 'fine', payload: { a: ['b'] } });
    expect(ok.status).toBe(200);
    // A path the route allows (a password is only hashed) keeps its NUL; the others do not.
    expect((await request(buildApp()).post('/login').send({ email: 'a', password: 'p\u0000w' })).status).toBe(
      200,
    );
    expect((await request(buildApp()).post('/login').send({ email: 'a\u0000', password: 'pw' })).status).toBe(
      400,
    );
  });

  it('When x-request-id is sent, then it is echoed in the header and the error body', async () => {
    const res = await request(buildApp()).get('/items?limit=0').set('x-request-id', 'abc-123');
    expect(res.headers['x-request-id']).toBe('abc-123');
    expect(res.body.requestId).toBe('abc-123');
  });

  it('When the service is not ready, then /readyz answers 503 and /livez 200', async () => {
    expect((await request(buildApp(false)).get('/readyz')).status).toBe(503);
    expect((await request(buildApp(false)).get('/livez')).status).toBe(200);
  });

  it('When variables are bad, then parseConfig names each one; blank strings count as unset', () => {
    const schema = z.object({ PORT: intVar(3001, 1, 65535), SECRET: z.string().min(8) });
    expect(parseConfig(schema, { PORT: '', SECRET: 'longenough' })).toEqual({
      PORT: 3001,
      SECRET: 'longenough',
    });
    try {
      parseConfig(schema, { PORT: '70000', SECRET: ' ' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems.join('\n');
      expect(problems).toMatch(/PORT/);
      expect(problems).toMatch(/SECRET/);
    }
  });

  it('When a service builds its schema from the shared pieces, then their defaults apply and each bad value is named', () => {
    const schema = z.object({
      ...publicServiceEnv(3001, 9101),
      ...DatabaseEnv,
      ...BrokerEnv,
      INSTANCE_ID: replicaIdVar(),
    });
    const parsed = parseConfig(schema, { DATABASE_URL: 'postgresql://db/x' });
    expect(parsed).toMatchObject({
      HOST: '0.0.0.0',
      PORT: 3001,
      METRICS_PORT: 9101,
      DATABASE_POOL_SIZE: 10,
      AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
    });
    expect(parsed.INSTANCE_ID).toBeUndefined();
    expect(() =>
      parseConfig(schema, {
        DATABASE_URL: 'mysql://db/x',
        PORT: '65536',
        DATABASE_POOL_SIZE: '201',
        AMQP_URL: 'http://broker',
        INSTANCE_ID: 'a b',
      }),
    ).toThrow(
      expect.objectContaining({
        problems: [
          expect.stringMatching(/^PORT: /),
          'DATABASE_URL: must be a postgresql:// URL',
          expect.stringMatching(/^DATABASE_POOL_SIZE: /),
          'AMQP_URL: must be an amqp:// or amqps:// URL',
          expect.stringMatching(/^INSTANCE_ID: /),
        ],
      }),
    );
  });
});

describe('validate: repeated query strings', () => {
  function countingApp() {
    const parses = { count: 0 };
    const seen: unknown[] = [];
    const app = createBaseApp({ logger, isReady: () => true });
    // `limit` is in every query of these tests: its parses count the parses of the query.
    const limit = z.preprocess((input) => {
      parses.count += 1;
      return input;
    }, z.coerce.number().int().min(1).max(100));
    const api = contractRouter().route(
      {
        method: 'get',
        path: '/items',
        operationId: 'listItems',
        summary: 'Items',
        request: { query: z.object({ limit, tags: z.array(z.string()).optional() }) },
        responses: { '200': { description: 'the parsed query, and whether it is frozen' } },
      },
      (_req, res) => {
        const parsed = res.locals.valid.query;
        seen.push(parsed);
        res.json({ ...parsed, frozen: Object.isFrozen(parsed) });
      },
    );
    app.use(api.router);
    app.use(notFoundHandler);
    app.use(errorHandler(logger));
    return { app, parses, seen };
  }

  it('When a valid query string repeats, then it is parsed once and every request gets the same frozen query', async () => {
    const { app, parses, seen } = countingApp();
    for (let i = 0; i < 3; i++) {
      const res = await request(app).get('/items?limit=5&tags=a&tags=b');
      expect(res.body).toEqual({ limit: 5, tags: ['a', 'b'], frozen: true });
    }
    expect(parses.count).toBe(1);
    expect(seen[0]).toBe(seen[2]);
    expect(Object.isFrozen((seen[0] as { tags: string[] }).tags)).toBe(true);
    expect((await request(app).get('/items?limit=6')).body).toMatchObject({ limit: 6 });
    expect(parses.count).toBe(2);
  });

  it('When an invalid query string repeats, then each request is parsed and refused with 400, and nothing is kept', async () => {
    const { app, parses } = countingApp();
    for (let i = 0; i < 3; i++) {
      const res = await request(app).get('/items?limit=0');
      expect(res.status).toBe(400);
      expect(res.body.details.issues).toEqual([expect.objectContaining({ path: 'query.limit' })]);
    }
    expect(parses.count).toBe(3);
  });

  it('When 501 distinct query strings were valid, then the least recently used is parsed again, and a string over 512 characters is never kept', async () => {
    const { app, parses } = countingApp();
    await request(app).get('/items?limit=1');
    for (let i = 0; i < 500; i++) await request(app).get(`/items?limit=2&tags=${i}&tags=x`);
    expect(parses.count).toBe(501);
    await request(app).get('/items?limit=1');
    expect(parses.count).toBe(502);
    const long = `/items?limit=3&tags=x&tags=${'x'.repeat(520)}`;
    await request(app).get(long);
    await request(app).get(long);
    expect(parses.count).toBe(504);
  });
});

describe('CORS', () => {
  const app = createBaseApp({ logger, corsOrigins: ['https://agent.example'] });
  app.get('/paid', (_req, res) => res.status(402).setHeader('payment-required', 'e30=').json({}));

  it('When a configured origin preflights a paid call, then both payment request headers are allowed and the x402 answer headers exposed', async () => {
    const res = await request(app).options('/paid').set('origin', 'https://agent.example');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://agent.example');
    expect(res.headers['access-control-allow-headers']?.split(', ')).toEqual(
      expect.arrayContaining(['x-payment', 'payment-signature']),
    );
    expect(res.headers['access-control-expose-headers']?.split(', ')).toEqual(
      expect.arrayContaining(['payment-required', 'payment-response', 'x-payment-response', 'x402-version']),
    );
  });

  it('When another origin calls, then no CORS header is set', async () => {
    const res = await request(app).get('/paid').set('origin', 'https://evil.example');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('clientIpKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['::1', '::/64'],
    [undefined, 'unknown'],
    ['not an address', 'unknown'],
  ])('When the client address is %s, then its rate-limit key is %s', (ip, key) => {
    expect(clientIpKey(ip)).toBe(key);
  });

  it('When two addresses share a /64, then they share a key, and a neighbouring /64 does not', () => {
    expect(clientIpKey('2001:db8:0:5::1')).toBe(clientIpKey('2001:db8:0:5:ffff:ffff:ffff:ffff'));
    expect(clientIpKey('2001:db8:0:6::1')).not.toBe(clientIpKey('2001:db8:0:5::1'));
  });
});
