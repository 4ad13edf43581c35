import request from 'supertest';
import { z } from 'zod';
import { codeSamples, contractRouter, createServiceApp, createLogger, presentedApiKey } from '../src/index';

// The one error dialect (docs/architecture.md, "One error dialect") as the kit enforces it for every
// declared route: 415 for a body that is not JSON, unknown parameters and fields named in a 400,
// human messages with details.issues, 413 with details.limit_bytes, credential query parameters left
// to authentication.

const logger = createLogger({ name: 'test', level: 'silent' });

const Signal = z.object({
  type: z.string().min(1).max(100),
  payload: z.record(z.string(), z.unknown()).optional(),
  context: z.object({ name: z.string() }).optional(),
});

function buildApp() {
  const api = contractRouter()
    .route(
      {
        method: 'get',
        path: '/gaps',
        operationId: 'gaps',
        summary: 'Gaps',
        request: {
          query: z.object({
            sector: z.string().optional(),
            limit: z.coerce.number().int().max(100).optional(),
          }),
        },
        responses: { '200': { description: 'ok' } },
      },
      (_req, res) => {
        res.json(res.locals.valid.query);
      },
    )
    .route(
      {
        method: 'get',
        path: '/plain',
        operationId: 'plain',
        summary: 'No query at all',
        responses: { '200': { description: 'ok' } },
      },
      (_req, res) => {
        res.json({ ok: true });
      },
    )
    .route(
      {
        method: 'post',
        path: '/signals',
        operationId: 'signals',
        summary: 'One signal',
        request: { body: Signal },
        responses: { '200': { description: 'ok' } },
      },
      (req, res) => {
        res.json(req.body);
      },
    );
  return createServiceApp(
    { logger, bodyLimit: '1kb' },
    {
      mcp: { name: 'svc', version: '1.0.0', tools: [] },
      llmsTxt: { title: 'svc', summary: 'A test service.', details: [], sections: [] },
      openApi: {
        openapi: '3.1.0',
        info: {
          title: 'svc',
          version: '1.0.0',
          description: 'See [the guide](services/market-intel/README.md#endpoints).',
        },
        paths: {
          '/signals': {
            post: {
              requestBody: {
                content: {
                  'application/json': {
                    schema: { type: 'object', properties: { type: { type: 'string' } } },
                  },
                },
              },
            },
          },
        },
        components: { securitySchemes: { keyQuery: { type: 'apiKey', in: 'query', name: 'key' } } },
      },
      routes: [api.router],
    },
  );
}

const app = buildApp();

describe('the one error dialect of declared routes', () => {
  it('When a query names a parameter the operation does not know, then 400 invalid_request names it and suggests the near one, every time', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await request(app).get('/gaps?sectr=fintech');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'invalid_request',
        error: 'query parameter `sectr` is not a parameter of this operation; did you mean `sector`?',
        details: { issues: [{ path: 'query.sectr', code: 'unknown_parameter' }] },
      });
    }
    expect((await request(app).get('/gaps?sector=fintech&limit=5')).body).toEqual({
      sector: 'fintech',
      limit: 5,
    });
  });

  it('When an operation declares no query and one is sent, then 400 names it; without one the route answers', async () => {
    const res = await request(app).get('/plain?debug=1');
    expect(res.status).toBe(400);
    expect(res.body.details.issues).toEqual([
      { path: 'query.debug', code: 'unknown_parameter', message: 'is not a parameter of this operation' },
    ]);
    expect((await request(app).get('/plain')).status).toBe(200);
  });

  it('When a credential parameter of the document (apiKey in query) is sent, then validation leaves it to authentication', async () => {
    expect((await request(app).get('/plain?key=spk_x')).status).toBe(200);
  });

  it('When a body carries unknown fields, at the top or nested, then 400 names each; free-form objects keep theirs', async () => {
    const res = await request(app)
      .post('/signals')
      .send({ type: 'click', timestamp: 'now', context: { name: 'a', nmae: 'b' }, payload: { anything: 1 } });
    expect(res.status).toBe(400);
    expect(res.body.details.issues).toEqual([
      { path: 'body.context.nmae', code: 'unknown_field', message: 'is not a field of this operation' },
      { path: 'body.timestamp', code: 'unknown_field', message: 'is not a field of this operation' },
    ]);
    expect(res.body.error).toBe(
      '`context.nmae` is not a field of this operation; `timestamp` is not a field of this operation',
    );
    const ok = await request(app)
      .post('/signals')
      .send({ type: 'click', payload: { anything: { deep: 1 } } });
    expect(ok.status).toBe(200);
  });

  it('When a required field is missing or has the wrong type, then the message says so in words and details.issues carries path and code', async () => {
    const missing = await request(app).post('/signals').send({ payload: {} });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({
      error: '`type` is required',
      code: 'invalid_request',
      details: { issues: [{ path: 'body.type', code: 'required', message: 'is required' }] },
    });
    const wrong = await request(app).post('/signals').send({ type: 42 });
    expect(wrong.body.error).toBe('`type` must be a string (got a number)');
    expect(wrong.body.error).not.toMatch(/Invalid input|expected|received/);
    const long = await request(app)
      .post('/signals')
      .send({ type: 'x'.repeat(101) });
    expect(long.body.details.issues).toEqual([
      { path: 'body.type', code: 'too_big', message: 'must be at most 100 characters long' },
    ]);
  });

  it('When a JSON body is sent with another content type, or none, then 415 says what to send; no body at all is a 400 "the body is required"', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const res = await request(app).post('/signals').set('content-type', type).send('type=click');
      expect(res.status).toBe(415);
      expect(res.body.code).toBe('unsupported_media_type');
      expect(res.body.error).toMatch(/^Send the body as JSON with Content-Type: application\/json/);
    }
    const none = await request(app).post('/signals');
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'body', code: 'required' }] },
    });
  });

  it('When the body is over the limit, then 413 payload_too_large with details.limit_bytes', async () => {
    const res = await request(app)
      .post('/signals')
      .send({ type: 'x'.repeat(2000) });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({
      code: 'payload_too_large',
      error: 'Request body is too large: the limit is 1024 bytes (details.limit_bytes)',
      details: { limit_bytes: 1024 },
    });
  });

  it('When the document is served, then request body objects that list their properties are closed (additionalProperties: false)', async () => {
    const doc = (await request(app).get('/openapi.json')).body;
    expect(doc.paths['/signals'].post.requestBody.content['application/json'].schema).toEqual({
      type: 'object',
      properties: { type: { type: 'string' } },
      additionalProperties: false,
    });
  });
});

describe('the reference page around the document', () => {
  it('When the document is served, then every operation carries x-codeSamples in curl, TypeScript and Python', async () => {
    const doc = (await request(app).get('/openapi.json')).body;
    const samples = doc.paths['/signals'].post['x-codeSamples'] as { lang: string; source: string }[];
    expect(samples.map((c) => c.lang)).toEqual(['Shell', 'TypeScript', 'Python']);
    expect(samples[0]?.source).toContain('curl -X POST "$BASE_URL/signals"');
    expect(samples[1]?.source).toContain("method: 'POST'");
    expect(samples[2]?.source).toContain('requests.post(os.environ["BASE_URL"] + "/signals"');
  });

  it('When an operation is paid with x402, then its samples ask for the 402, pay with the official x402 client and repeat with the proof, and send no API key', () => {
    const doc = {
      components: { securitySchemes: { x402: { type: 'apiKey', in: 'header', name: 'X-PAYMENT' } } },
    };
    const [curl, ts, py] = codeSamples(doc, 'post', '/paid', {
      security: [{ x402: [] }],
      requestBody: { content: { 'application/json': { example: { idea: "it's" } } } },
    });
    expect(curl?.source).toContain('curl -i -X POST "$BASE_URL/paid"');
    expect(curl?.source).toContain('-H "PAYMENT-SIGNATURE: $PAYMENT_SIGNATURE"');
    expect(curl?.source).toContain(`"idea": "it'\\''s"`);
    expect(ts?.source).toContain('wrapFetchWithPayment(fetch, client)');
    expect(ts?.source).toContain("method: 'POST'");
    expect(py?.source).toContain('asked.headers["PAYMENT-REQUIRED"]');
    for (const sample of [curl, ts, py]) expect(sample?.source).not.toContain('API_KEY');
  });

  it('When / is asked and no route serves it, then it leads to /docs; a guide the document links to is served where the link points', async () => {
    const root = await request(app).get('/');
    expect(root.status).toBe(302);
    expect(root.headers.location).toBe('/docs');
    const guide = await request(app).get('/services/market-intel/README.md');
    expect(guide.status).toBe(200);
    expect(guide.headers['content-type']).toMatch(/^text\/markdown/);
    expect(guide.text).toMatch(/^# /);
    expect((await request(app).get('/services/skill-router/README.md')).status).toBe(404);
  });
});

describe('presentedApiKey', () => {
  it('When a key comes in x-api-key or Authorization: Bearer, then it is found; x-api-key wins; other schemes and blanks are none', () => {
    expect(presentedApiKey({ headers: { 'x-api-key': ' k1 ' } })).toBe('k1');
    expect(presentedApiKey({ headers: { authorization: 'Bearer k2' } })).toBe('k2');
    expect(presentedApiKey({ headers: { authorization: 'bearer   k2' } })).toBe('k2');
    expect(presentedApiKey({ headers: { 'x-api-key': 'k1', authorization: 'Bearer k2' } })).toBe('k1');
    expect(presentedApiKey({ headers: { authorization: 'Basic a2V5' } })).toBeUndefined();
    expect(presentedApiKey({ headers: { authorization: 'Bearer a b' } })).toBeUndefined();
    expect(presentedApiKey({ headers: { 'x-api-key': ' ' } })).toBeUndefined();
    expect(presentedApiKey({ headers: {} })).toBeUndefined();
  });
});

describe('unknown names chosen by an attacker', () => {
  it('When a request carries many unknown names, or a long one, then the answer names twenty, each cut short, and counts the rest', async () => {
    const body: Record<string, unknown> = { type: 'click' };
    for (let i = 0; i < 40; i++) body[`f${i}`] = 1;
    const res = await request(app).post('/signals').send(body);
    expect(res.status).toBe(400);
    const issues = res.body.details.issues as { path: string; message: string }[];
    expect(issues).toHaveLength(21);
    expect(issues[20]).toEqual({ path: 'body', code: 'unknown_field', message: 'has 20 more unknown names' });
    const long = await request(app).get(`/gaps?${'k'.repeat(5000)}=1`);
    expect(long.status).toBe(400);
    expect(long.body.details.issues[0].path).toHaveLength(201);
    expect(long.text.length).toBeLessThan(2000);
  });
});
