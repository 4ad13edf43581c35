import request from 'supertest';
import pino from 'pino';
import {
  createContext,
  createProduct,
  signUp,
  startHarness,
  type Harness,
  type SignedIn,
} from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_signals_test', { env: { MAX_BATCH_SIZE: '50' } });
});
afterAll(async () => h.close());

async function setup(): Promise<{ user: SignedIn; product: { id: string; apiKey: string } }> {
  const user = await signUp(h);
  const product = await createProduct(user);
  return { user, product };
}

const signalRows = (productId: string) =>
  h.db.$queryRawUnsafe<{ type: string; context_id: string | null; sentiment: string; payload: unknown }[]>(
    'SELECT type, context_id, sentiment::text, payload FROM signals WHERE product_id = $1::uuid ORDER BY id',
    productId,
  );

describe('POST /api/signals', () => {
  test('When one signal is sent with a valid key, then it answers received 1 and stores it', async () => {
    const { product } = await setup();
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send({ type: 'page_view', payload: { path: '/cart' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: 1 });
    expect(await signalRows(product.id)).toEqual([
      { type: 'page_view', context_id: null, sentiment: 'neutral', payload: { path: '/cart' } },
    ]);
  });

  test('When an array is sent, then every signal is stored and counted against the month', async () => {
    const { user, product } = await setup();
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send([{ type: 'a' }, { type: 'b' }, { type: 'c', payload: {} }]);
    expect(res.body).toEqual({ received: 3 });
    expect((await signalRows(product.id)).map((r) => r.type)).toEqual(['a', 'b', 'c']);
    const me = await user.agent.get('/api/auth/me');
    expect(me.body.usage.signals).toBe(3);
  });

  test('When the key is missing, then 401 in the error envelope and nothing is stored', async () => {
    const { product } = await setup();
    const res = await request(h.baseUrl).post('/api/signals').send({ type: 'x' });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({
      code: 'unauthorized',
      error: expect.any(String),
      requestId: expect.any(String),
    });
    expect(await signalRows(product.id)).toHaveLength(0);
  });

  test('When the key is wrong or malformed, then 401', async () => {
    const { product } = await setup();
    const forged = product.apiKey.slice(0, -2) + (product.apiKey.endsWith('A') ? 'BB' : 'AA');
    for (const key of [forged, 'spk_short', 'not-a-key']) {
      const res = await request(h.baseUrl).post('/api/signals').set('x-api-key', key).send({ type: 'x' });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
    }
  });

  test('When the body is malformed JSON, then 400 invalid_json', async () => {
    const { product } = await setup();
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .set('content-type', 'application/json')
      .send('{"type":');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  test('When a signal has no type, an empty type or a 101-character type, then 400 and the whole batch is refused', async () => {
    const { product } = await setup();
    for (const body of [
      { payload: {} },
      [{ type: 'ok' }, { type: '' }],
      { type: 'x'.repeat(101) },
      { type: 'ok', payload: 'not an object' },
    ]) {
      const res = await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.issues.length).toBeGreaterThan(0);
    }
    expect(await signalRows(product.id)).toHaveLength(0);
  });

  test('When a signal carries a field it does not declare, then 400 names it and nothing is stored', async () => {
    const { product } = await setup();
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send([{ type: 'ok' }, { type: 'x', sentAt: '2026-11-28T10:00:00Z', properties: {} }]);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.details.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: 'body.1.sentAt', code: 'unknown_field' }),
        expect.objectContaining({ path: 'body.1.properties', code: 'unknown_field' }),
      ]),
    );
    const ingest = await request(h.baseUrl)
      .post(`/api/ingest?key=${product.apiKey}`)
      .send({ event: 'x', userId: 'u1' });
    expect(ingest.status).toBe(400);
    expect(ingest.body.details.issues).toEqual([
      expect.objectContaining({ path: 'body.userId', code: 'unknown_field' }),
    ]);
    expect(await signalRows(product.id)).toHaveLength(0);
  });

  test('When the body is not JSON, then 415; when it is empty, then 400', async () => {
    const { product } = await setup();
    const text = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .set('content-type', 'text/plain')
      .send('type=x');
    expect(text.status).toBe(415);
    const empty = await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey);
    expect(empty.status).toBe(400);
  });

  test('When a batch exceeds the maximum batch size, then 413 with the limit and nothing is stored', async () => {
    const { product } = await setup();
    const batch = Array.from({ length: 51 }, (_, i) => ({ type: `t${i}` }));
    const res = await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send(batch);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({
      code: 'payload_too_large',
      details: { max_batch_size: 50, received: 51 },
    });
    expect(res.body.error).toContain('split it into batches of at most 50');
    expect(await signalRows(product.id)).toHaveLength(0);
    const ok = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send(batch.slice(0, 50));
    expect(ok.body).toEqual({ received: 50 });
  });

  test('When an empty array is sent, then received 0', async () => {
    const { product } = await setup();
    const res = await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send([]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: 0 });
  });
});

describe('Routing and classification', () => {
  test('When the product has a single context, then signals without context_id go to it and are classed', async () => {
    const { user, product } = await setup();
    const ctx = await createContext(user, product.id);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send([{ type: 'checkout_completed' }, { type: 'payment_failed' }, { type: 'page_view' }])
      .expect(200);
    expect((await signalRows(product.id)).map((r) => [r.context_id, r.sentiment])).toEqual([
      [ctx.id, 'positive'],
      [ctx.id, 'negative'],
      [ctx.id, 'neutral'],
    ]);
  });

  test('When the product has several contexts, then a signal names its context or stays unrouted', async () => {
    const { user, product } = await setup();
    const checkout = await createContext(user, product.id);
    const signup = await createContext(user, product.id, {
      name: 'Signup',
      positive_signals: ['signup_done'],
      negative_signals: ['signup_error'],
    });
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send([
        { type: 'signup_error', context_id: signup.id },
        { type: 'payment_failed', context_id: checkout.id },
        { type: 'payment_failed' },
      ])
      .expect(200);
    expect((await signalRows(product.id)).map((r) => [r.context_id, r.sentiment])).toEqual([
      [signup.id, 'negative'],
      [checkout.id, 'negative'],
      [null, 'neutral'],
    ]);
  });

  test('When context_id belongs to another product, then 400 and the batch is refused', async () => {
    const a = await setup();
    const b = await setup();
    const foreign = await createContext(b.user, b.product.id);
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', a.product.apiKey)
      .send([{ type: 'ok' }, { type: 'x', context_id: foreign.id }]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'body.1.context_id', code: 'invalid_value' }] },
    });
    expect(res.body.error).toContain('is not a context of this product');
    expect(await signalRows(a.product.id)).toHaveLength(0);
  });
});

describe('POST /api/ingest', () => {
  test('When the key is in the query and the aliases event/data are used, then the signal is stored', async () => {
    const { user, product } = await setup();
    const ctx = await createContext(user, product.id);
    const res = await request(h.baseUrl)
      .post(`/api/ingest?key=${product.apiKey}`)
      .send({ event: 'payment_failed', data: { code: 'card_declined' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: 1 });
    expect(await signalRows(product.id)).toEqual([
      {
        type: 'payment_failed',
        context_id: ctx.id,
        sentiment: 'negative',
        payload: { code: 'card_declined' },
      },
    ]);
  });

  test('When the key is in the header and event_type/properties are used in an array, then all are stored', async () => {
    const { product } = await setup();
    const res = await request(h.baseUrl)
      .post('/api/ingest')
      .set('x-api-key', product.apiKey)
      .send([
        { event_type: 'a', properties: { step: 2 } },
        { type: 'b', payload: { x: 1 } },
      ]);
    expect(res.body).toEqual({ received: 2 });
    expect((await signalRows(product.id)).map((r) => [r.type, r.payload])).toEqual([
      ['a', { step: 2 }],
      ['b', { x: 1 }],
    ]);
  });

  test('When no type alias is present, then 400; when no key, then 401', async () => {
    const { product } = await setup();
    const noType = await request(h.baseUrl).post(`/api/ingest?key=${product.apiKey}`).send({ data: {} });
    expect(noType.status).toBe(400);
    expect(noType.body.details.issues[0].path).toBe('body.type');
    const noKey = await request(h.baseUrl).post('/api/ingest').send({ event: 'x' });
    expect(noKey.status).toBe(401);
    expect(await signalRows(product.id)).toHaveLength(0);
    const literal = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .set('content-type', 'application/json')
      .send('{"type":"x","payload":{"a":"\\\\u0000"}}');
    expect(literal.status).toBe(200);
    expect((await signalRows(product.id))[0]!.payload).toEqual({ a: '\\u0000' });
  });
});

describe('Monthly signal quota', () => {
  test('When a batch would cross the Free limit, then 429 and nothing of it is stored', async () => {
    const { user, product } = await setup();
    const fill = Array.from({ length: 50 }, () => ({ type: 'x' }));
    for (let i = 0; i < 9; i++)
      await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send(fill).expect(200);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send(fill.slice(0, 45))
      .expect(200);
    // 495 used, 5 remain: a batch of 6 is refused whole.
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send(fill.slice(0, 6));
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({
      code: 'quota_exceeded',
      details: { plan: 'free', limit: 500, used: 495, requested: 6 },
    });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(await signalRows(product.id)).toHaveLength(495);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send(fill.slice(0, 5))
      .expect(200);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send({ type: 'one more' })
      .expect(429);
    expect(await signalRows(product.id)).toHaveLength(500);
    expect((await user.agent.get('/api/auth/me')).body.usage.signals).toBe(500);
  });

  test('When 600 single-signal requests race for 500 remaining, then exactly 500 are accepted', async () => {
    const { product } = await setup();
    const results = await Promise.all(
      Array.from({ length: 600 }, (_, i) =>
        fetch(`${h.baseUrl}/api/signals`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': product.apiKey },
          body: JSON.stringify({ type: `t${i}` }),
        }).then((r) => r.status),
      ),
    );
    expect(results.filter((s) => s === 200)).toHaveLength(500);
    expect(results.filter((s) => s === 429)).toHaveLength(100);
    expect(await signalRows(product.id)).toHaveLength(500);
    const counter = await h.db.$queryRawUnsafe<{ signals: number }[]>(
      'SELECT signals FROM usage_counters uc JOIN products p ON p.user_id = uc.user_id WHERE p.id = $1::uuid',
      product.id,
    );
    expect(counter[0]?.signals).toBe(500);
  }, 60_000);

  test('When the plan is Builder, then the limit is 5,000', async () => {
    const { product, user } = await setup();
    await h.db.user.update({ where: { id: user.userId }, data: { plan: 'builder' } });
    await h.db.$executeRawUnsafe(
      `INSERT INTO usage_counters (user_id, month, signals, proposals) VALUES ($1::uuid, date_trunc('month', now() AT TIME ZONE 'utc')::date, 4999, 0)`,
      user.userId,
    );
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send({ type: 'last' })
      .expect(200);
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send({ type: 'over' });
    expect(res.status).toBe(429);
    expect(res.body.details.limit).toBe(5000);
  });
});

describe('API key cache across replicas', () => {
  test('When another replica creates a context after the key was cached, then signals naming it are accepted at once', async () => {
    const { user, product } = await setup();
    await createContext(user, product.id);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send({ type: 'warm' })
      .expect(200);
    // Written straight to the database, as another replica would: this process's cache does not know it.
    const [created] = await h.db.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO contexts (id, product_id, name, content, negative_signals) VALUES (gen_random_uuid(), $1::uuid, 'Other', 'x', ARRAY['boom']) RETURNING id`,
      product.id,
    );
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send({ type: 'boom', context_id: created!.id })
      .expect(200);
    expect((await signalRows(product.id)).at(-1)).toMatchObject({
      context_id: created!.id,
      sentiment: 'negative',
    });
  });

  test('When another replica deletes a cached context, then a signal naming it is refused with 400 and nothing is stored', async () => {
    const { user, product } = await setup();
    const a = await createContext(user, product.id);
    const b = await createContext(user, product.id, { name: 'B' });
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send({ type: 'warm', context_id: a.id })
      .expect(200);
    await h.db.$executeRawUnsafe('DELETE FROM contexts WHERE id = $1::uuid', b.id);
    const res = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send([
        { type: 'x', context_id: a.id },
        { type: 'y', context_id: b.id },
      ]);
    expect(res.status).toBe(400);
    expect(await signalRows(product.id)).toHaveLength(1);
  });
});

describe('Access log', () => {
  test('When the key is sent in the query, then the access log line carries the URL without it', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const logged = await startHarness('unused', { reuseDatabaseUrl: h.databaseUrl, overrides: { logger } });
    try {
      const { product } = await setup();
      // An unknown parameter is refused (docs/architecture.md, "One error dialect"), and logged too.
      await request(logged.baseUrl)
        .post(`/api/ingest?key=${product.apiKey}&source=zap`)
        .send({ event: 'x' })
        .expect(400);
      await request(logged.baseUrl)
        .post(`/api/ingest?key=${product.apiKey}x`)
        .send({ event: 'x' })
        .expect(401);
      const access = lines.filter((l) => l.includes('/api/ingest'));
      expect(access).toHaveLength(2);
      expect(access.join('\n')).not.toContain(product.apiKey);
      expect(access[0]).toContain('/api/ingest?key=[redacted]&source=zap');
    } finally {
      await logged.close();
    }
  });
});

describe('Text PostgreSQL cannot store', () => {
  test('When a payload or type carries NUL or a lone surrogate, then 400 and nothing is stored', async () => {
    const { product } = await setup();
    const bodies = [
      '{"type":"x","payload":{"a":"\\u0000"}}',
      '{"type":"x\\u0000"}',
      '{"type":"x","payload":{"a":"\\ud800"}}',
      '[{"type":"ok"},{"type":"x","payload":{"\\u0000":1}}]',
    ];
    for (const body of bodies) {
      const res = await request(h.baseUrl)
        .post('/api/signals')
        .set('x-api-key', product.apiKey)
        .set('content-type', 'application/json')
        .send(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
    expect(await signalRows(product.id)).toHaveLength(0);
    const literal = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .set('content-type', 'application/json')
      .send('{"type":"x","payload":{"a":"\\\\u0000"}}');
    expect(literal.status).toBe(200);
    expect((await signalRows(product.id))[0]!.payload).toEqual({ a: '\\u0000' });
  });
});
