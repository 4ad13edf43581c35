import type { Server } from 'node:http';
import fc from 'fast-check';
import { z } from 'zod';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { contractRouter, createBaseApp, createLogger } from '@repo/service-kit';
import {
  envelopeProblems,
  fuzzCheckAll,
  fuzzOperations,
  hostileJsonArbitrary,
  UnsupportedSchemaError,
  validValueArbitrary,
  type FuzzRequest,
  type FuzzResponse,
  type OpenApiDocument,
} from '../src/index';

// A small document using what the services' documents use: $ref into components, anyOf, bounds,
// patterns, formats, maps, security schemes in header and query, and an x402-style 402 body.
const DOC: OpenApiDocument = {
  openapi: '3.1.0',
  info: { title: 't', version: '1' },
  paths: {
    '/items/{id}': {
      post: {
        operationId: 'postItem',
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[a-z]{1,8}$' } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 10 } },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } },
        },
        security: [{ key: [] }, { keyQuery: [] }],
        responses: {
          '200': { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } },
          '400': {
            description: 'bad',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
          },
          '402': {
            description: 'pay',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Pay' } } },
          },
          '503': {
            description: 'down',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
          },
        },
      },
    },
  },
  components: {
    schemas: {
      Item: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 2, maxLength: 5 },
          uuid: { type: 'string', format: 'uuid' },
          when: { type: 'string', format: 'date-time' },
          tags: { type: 'array', maxItems: 3, items: { type: 'string', enum: ['a', 'b'] } },
          config: {
            anyOf: [
              { type: 'string', maxLength: 3 },
              { type: 'object', properties: { n: { type: 'number' } }, additionalProperties: false },
            ],
          },
          meta: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} },
        },
        required: ['name'],
      },
      ErrorEnvelope: {
        type: 'object',
        properties: {
          error: { type: 'string' },
          code: { type: 'string' },
          details: {},
          requestId: { type: 'string' },
        },
        required: ['error', 'code', 'requestId'],
        additionalProperties: false,
      },
      Pay: {
        type: 'object',
        properties: { x402Version: { const: 1 }, accepts: { type: 'array' }, error: { type: 'string' } },
        required: ['x402Version', 'accepts', 'error'],
      },
    },
    securitySchemes: {
      key: { type: 'apiKey', in: 'header', name: 'x-key' },
      keyQuery: { type: 'apiKey', in: 'query', name: 'key' },
    },
  },
};

const [operation] = fuzzOperations(DOC, { credentialSchemes: ['key', 'keyQuery'] });
if (!operation) throw new Error('no operation');

const response = (status: number, body: unknown, contentType = 'application/json'): FuzzResponse => ({
  status,
  headers: new Headers({ 'content-type': contentType }),
  text: JSON.stringify(body),
  json: body,
});
const sample = (kind: 'valid' | 'hostile', seed: number, n = 300): FuzzRequest[] =>
  fc.sample(operation[kind], { numRuns: n, seed });

describe('schema arbitraries', () => {
  it('When valid requests are drawn from the document, then every one conforms to it (path, query, body, $ref resolved)', () => {
    const requests = sample('valid', 1);
    expect(requests.filter((r) => !r.conforms).map(String)).toEqual([]);
    expect(requests.every((r) => /^\/items\/[a-z]{1,8}$/.test(r.path))).toBe(true);
  });

  it('When hostile requests are drawn, then each says what was broken, many do not conform, and the body mutations cover the promised kinds', () => {
    const requests = sample('hostile', 2, 1500);
    expect(requests.every((r) => typeof r.mutation === 'string')).toBe(true);
    expect(requests.filter((r) => !r.conforms).length).toBeGreaterThan(requests.length / 4);
    const kinds = new Set(requests.map((r) => r.mutation?.replace(/ at .*| \d+.*|: .*/g, '')));
    for (const kind of [
      'body',
      'query parameter "limit"',
      'path parameter "id"',
      'extra query parameter',
      'hostile x-request-id',
      'random bytes',
      'no body',
    ])
      expect([...kinds].some((k) => k?.startsWith(kind))).toBe(true);
    const bodies = requests.map((r) => r.mutation ?? '').filter((m) => m.startsWith('body: '));
    for (const what of [
      'wrong type',
      'missing required "name"',
      'extra property',
      'nested',
      'malformed JSON',
      'code points',
      'hostile string',
    ])
      expect(bodies.some((m) => m.includes(what))).toBe(true);
  });

  it('When a schema uses a keyword outside the supported subset, then UnsupportedSchemaError names it', () => {
    expect(() => validValueArbitrary({ allOf: [{ type: 'string' }] })).toThrow(UnsupportedSchemaError);
    expect(() => hostileJsonArbitrary({ type: 'number', multipleOf: 2 })).toThrow(/multipleOf/);
    expect(() => validValueArbitrary({ $ref: '#/nowhere' })).toThrow(/dangling/);
  });

  it('When a known value is given for a property name, then some generated values use it', () => {
    const values = fc.sample(
      validValueArbitrary(
        { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        { examples: { id: ['known-1'] } },
      ),
      { numRuns: 200, seed: 3 },
    );
    expect(values.some((v) => (v as { id: string }).id === 'known-1')).toBe(true);
  });
});

describe('the judge', () => {
  const [valid] = sample('valid', 4, 1).map((r) => ({ ...r, auth: { mode: 'valid' as const, slots: [] } }));
  if (!valid) throw new Error('no request');
  const envelope = { error: 'no', code: 'invalid_request', requestId: 'r1' };

  it('When answers follow the document, then there is no problem (a documented 503 and an Error402-like 402 included)', () => {
    expect(operation.problems(valid, response(200, {}))).toEqual([]);
    expect(operation.problems(valid, response(400, envelope))).toEqual([]);
    expect(operation.problems(valid, response(503, envelope))).toEqual([]);
    expect(operation.problems(valid, response(402, { x402Version: 1, accepts: [], error: 'pay' }))).toEqual(
      [],
    );
  });

  it('When an answer is a 5xx, undocumented, not JSON, not the envelope or not the documented 402 body, then each is a problem', () => {
    expect(operation.problems(valid, response(500, envelope))).toEqual([
      expect.stringContaining('answered 500'),
    ]);
    expect(operation.problems(valid, response(404, envelope))).toEqual([
      expect.stringContaining('status 404 is not in the document'),
    ]);
    expect(operation.problems(valid, response(400, 'oops', 'text/html'))).toEqual([
      expect.stringContaining('content-type "text/html"'),
      expect.stringContaining('not the error envelope'),
    ]);
    expect(
      operation.problems(valid, response(400, { error: 'x', code: 'Not-Snake', requestId: 'r' })),
    ).toEqual([expect.stringContaining('snake_case')]);
    expect(operation.problems(valid, response(402, envelope))).toEqual([
      expect.stringContaining('does not match Pay'),
    ]);
  });

  it('When a secured operation or a non-conforming request gets a 2xx, then that is a problem; global statuses and known gaps are tolerated', () => {
    expect(operation.problems({ ...valid, auth: { mode: 'none' } }, response(200, {}))).toEqual([
      expect.stringContaining('none credentials'),
    ]);
    expect(operation.problems({ ...valid, conforms: false }, response(200, {}))).toEqual([
      expect.stringContaining('does not conform'),
    ]);
    expect(operation.problems(valid, response(429, envelope), { globalStatuses: [429] })).toEqual([]);
    expect(
      operation.problems(valid, response(413, envelope), {
        knownGaps: [{ operationId: 'postItem', status: 413, kind: 'undocumented-status', reason: 'test' }],
      }),
    ).toEqual([]);
  });

  it('When a body is checked against the error envelope { error, code, details?, requestId }, then details is optional and requestId required', () => {
    expect(envelopeProblems({ error: 'e', code: 'c', requestId: 'r', details: [1] })).toEqual([]);
    expect(envelopeProblems({ error: 'e', code: 'c' })).toEqual(['`requestId` is not a non-empty string']);
  });
});

describe('fuzzing a running app', () => {
  let server: Server;
  let baseUrl: string;
  beforeAll(async () => {
    const logger = createLogger({ name: 'fuzz-test', level: 'silent' });
    const app = createBaseApp({ logger });
    const Item = z.object({
      name: z.string().min(2).max(5),
      uuid: z.string().optional(),
      when: z.string().optional(),
      tags: z
        .array(z.enum(['a', 'b']))
        .max(3)
        .optional(),
      config: z.union([z.string().max(3), z.strictObject({ n: z.number().optional() })]).optional(),
      meta: z.record(z.string(), z.unknown()).optional(),
    });
    const api = contractRouter().route(
      {
        method: 'post',
        path: '/items/{id}',
        operationId: 'postItem',
        summary: 'Stores an item',
        request: {
          params: z.object({ id: z.string().regex(/^[a-z]{1,8}$/) }),
          query: z.object({ limit: z.coerce.number().int().min(1).max(10).optional() }),
          body: Item,
        },
        responses: { '200': { description: 'the item id' } },
        before: [
          (req, _res, next) =>
            next(
              req.get('x-key') === 'k1' || req.query.key === 'k1'
                ? undefined
                : Object.assign(new Error('no key'), { status: 402 }),
            ),
        ],
      },
      (_req, res) => {
        res.json({ id: res.locals.valid.params.id });
      },
    );
    app.use(api.router);
    app.use(
      (
        err: unknown,
        _req: unknown,
        res: { status(n: number): { json(b: unknown): void } },
        next: (e?: unknown) => void,
      ) => {
        if (err instanceof Error && (err as Error & { status?: number }).status === 402)
          res.status(402).json({ x402Version: 1, accepts: [], error: 'pay' });
        else next(err);
      },
    );
    app.use(notFoundHandler);
    app.use(errorHandler(logger));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const address = server.address();
    baseUrl = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : '';
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('When an app that validates at the edge is fuzzed from its document, then every valid and hostile answer passes the judge', async () => {
    const options = {
      baseUrl,
      credentials: { key: 'k1', keyQuery: 'k1' },
      numRuns: 60,
      globalStatuses: [413, 415],
    };
    expect(await fuzzCheckAll([operation], 'valid', options)).toEqual([]);
    expect(await fuzzCheckAll([operation], 'hostile', options)).toEqual([]);
  });
});
