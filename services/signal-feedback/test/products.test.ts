import { createHash } from 'node:crypto';
import request from 'supertest';
import { runAdmin } from '../src/entry-points/cli/admin';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_products_test');
});
afterAll(async () => h.close());

describe('Products', () => {
  test('When a product is created, then the spk_ key is returned once and only its SHA-256 and prefix are stored', async () => {
    const u = await signUp(h);
    const res = await u.agent
      .post('/api/products')
      .set('x-csrf-token', u.csrf)
      .send({ name: '  Checkout app ' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Checkout app',
      api_key: expect.stringMatching(/^spk_[1-9A-HJ-NP-Za-km-z]{43,44}$/),
    });
    const row = await h.db.product.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.apiKeyHash).toBe(createHash('sha256').update(res.body.api_key).digest('hex'));
    expect(res.body.api_key.startsWith(row.apiKeyPrefix)).toBe(true);
    expect(JSON.stringify(row)).not.toContain(res.body.api_key);
    const list = await u.agent.get('/api/products');
    expect(list.body).toEqual([
      {
        id: res.body.id,
        name: 'Checkout app',
        api_key_prefix: row.apiKeyPrefix,
        context_count: 0,
        created_at: expect.any(String),
      },
    ]);
    expect(JSON.stringify(list.body)).not.toContain(res.body.api_key);
  });

  test('When a key is rotated, then the new key works at once, the old one is refused and others cannot rotate it', async () => {
    const u = await signUp(h);
    const p = await createProduct(u);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', p.apiKey)
      .send({ type: 'before' })
      .expect(200);
    const rotated = await u.agent.post(`/api/products/${p.id}/rotate-key`).set('x-csrf-token', u.csrf);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ id: p.id, name: 'Checkout app', api_key: expect.stringMatching(/^spk_/) });
    expect(rotated.body.api_key).not.toBe(p.apiKey);
    expect(
      (await request(h.baseUrl).post('/api/signals').set('x-api-key', p.apiKey).send({ type: 'old' })).status,
    ).toBe(401);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', rotated.body.api_key)
      .send({ type: 'new' })
      .expect(200);
    const other = await signUp(h);
    expect(
      (await other.agent.post(`/api/products/${p.id}/rotate-key`).set('x-csrf-token', other.csrf)).status,
    ).toBe(404);
    expect((await u.agent.post(`/api/products/${p.id}/rotate-key`)).status).toBe(403);
    expect((await h.db.product.findUniqueOrThrow({ where: { id: p.id } })).apiKeyHash).toBe(
      createHash('sha256').update(rotated.body.api_key).digest('hex'),
    );
  });

  test('When the name is empty or longer than 100 characters, then 400', async () => {
    const u = await signUp(h);
    for (const name of ['', '   ', 'x'.repeat(101), 'a\u0000b', 'a\ud800']) {
      expect((await u.agent.post('/api/products').set('x-csrf-token', u.csrf).send({ name })).status).toBe(
        400,
      );
    }
  });

  test('When a Free user creates a second product, then 403 product_limit_reached; concurrent creations cannot exceed it', async () => {
    const u = await signUp(h);
    const results = await Promise.all(
      [1, 2, 3].map((i) =>
        u.agent
          .post('/api/products')
          .set('x-csrf-token', u.csrf)
          .send({ name: `p${i}` }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 403, 403]);
    expect(results.find((r) => r.status === 403)!.body.code).toBe('product_limit_reached');
    expect(await h.db.product.count({ where: { userId: u.userId } })).toBe(1);
  });

  test('When the admin command moves a user to Growth, then five products are allowed', async () => {
    const u = await signUp(h);
    const out: string[] = [];
    expect(
      await runAdmin(
        ['set-plan', u.email, 'growth'],
        { DATABASE_URL: h.databaseUrl, LOG_LEVEL: 'silent' },
        (l) => out.push(l),
      ),
    ).toBe(0);
    expect(out.join('\n')).toContain('growth');
    for (let i = 0; i < 5; i++) await createProduct(u, `p${i}`);
    const sixth = await u.agent.post('/api/products').set('x-csrf-token', u.csrf).send({ name: 'p6' });
    expect(sixth.status).toBe(403);
    expect((await u.agent.get('/api/auth/me')).body.limits).toEqual({
      signals_per_month: 50000,
      proposals_per_month: null,
      deployments_per_month: null,
      products: 5,
    });
  });

  test('When the admin command names an unknown user or plan, then it fails without changes', async () => {
    const env = { DATABASE_URL: h.databaseUrl, LOG_LEVEL: 'silent' };
    expect(await runAdmin(['set-plan', 'nobody@example.com', 'scale'], env, () => undefined)).toBe(1);
    const u = await signUp(h);
    expect(await runAdmin(['set-plan', u.email, 'platinum'], env, () => undefined)).toBe(2);
    expect((await h.db.user.findUniqueOrThrow({ where: { id: u.userId } })).plan).toBe('free');
  });
});

describe('Contexts', () => {
  test('When a context is created, listed, patched and deleted, then each answer and the database agree', async () => {
    const u = await signUp(h);
    const p = await createProduct(u);
    const created = await u.agent
      .post('/api/context')
      .set('x-csrf-token', u.csrf)
      .send({
        product_id: p.id,
        name: 'Signup',
        content: 'Account creation',
        positive_signals: ['signup_done', 'signup_done'],
        negative_signals: ['signup_error'],
      });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      product_id: p.id,
      name: 'Signup',
      content: 'Account creation',
      positive_signals: ['signup_done'],
      negative_signals: ['signup_error'],
    });
    const list = await u.agent.get('/api/context');
    expect(list.body.map((c: { id: string }) => c.id)).toEqual([created.body.id]);
    const patched = await u.agent
      .patch('/api/context')
      .set('x-csrf-token', u.csrf)
      .send({ id: created.body.id, negative_signals: ['signup_error', 'captcha_failed'] });
    expect(patched.status).toBe(200);
    expect(patched.body.negative_signals).toEqual(['signup_error', 'captcha_failed']);
    expect(
      (await h.db.context.findUniqueOrThrow({ where: { id: created.body.id } })).negativeSignals,
    ).toEqual(['signup_error', 'captcha_failed']);
    const deleted = await u.agent.delete(`/api/context?id=${created.body.id}`).set('x-csrf-token', u.csrf);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: created.body.id, deleted: true });
    expect(await h.db.context.count({ where: { id: created.body.id } })).toBe(0);
    expect((await u.agent.get('/api/context')).body).toEqual([]);
  });

  test("When a user touches another user's product or context, then 404 and nothing changes", async () => {
    const owner = await signUp(h);
    const p = await createProduct(owner);
    const ctx = await createContext(owner, p.id);
    const intruder = await signUp(h);
    expect(
      (
        await intruder.agent
          .post('/api/context')
          .set('x-csrf-token', intruder.csrf)
          .send({ product_id: p.id, name: 'x', content: 'y' })
      ).status,
    ).toBe(404);
    expect(
      (
        await intruder.agent
          .patch('/api/context')
          .set('x-csrf-token', intruder.csrf)
          .send({ id: ctx.id, name: 'hacked' })
      ).status,
    ).toBe(404);
    expect(
      (await intruder.agent.delete(`/api/context?id=${ctx.id}`).set('x-csrf-token', intruder.csrf)).status,
    ).toBe(404);
    expect((await intruder.agent.get('/api/context')).body).toEqual([]);
    expect((await h.db.context.findUniqueOrThrow({ where: { id: ctx.id } })).name).toBe('Checkout');
  });

  test('When the body is invalid, then 400 with field details', async () => {
    const u = await signUp(h);
    const p = await createProduct(u);
    const cases = [
      { product_id: 'not-a-uuid', name: 'x', content: 'y' },
      { product_id: p.id, content: 'y' },
      { product_id: p.id, name: 'x', content: 'y', positive_signals: ['a'], negative_signals: ['a'] },
      { product_id: p.id, name: 'x', content: 'y', positive_signals: [''] },
    ];
    for (const body of cases) {
      const res = await u.agent.post('/api/context').set('x-csrf-token', u.csrf).send(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
    }
    expect((await u.agent.patch('/api/context').set('x-csrf-token', u.csrf).send({ id: p.id })).status).toBe(
      400,
    );
    expect((await u.agent.delete('/api/context?id=nope').set('x-csrf-token', u.csrf)).status).toBe(400);
    expect(await h.db.context.count({ where: { productId: p.id } })).toBe(0);
  });

  test('When a context is deleted, then its signals stay unrouted and new signals with its id are refused', async () => {
    const u = await signUp(h);
    const p = await createProduct(u);
    const ctx = await createContext(u, p.id);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', p.apiKey)
      .send({ type: 'payment_failed' })
      .expect(200);
    await u.agent.delete(`/api/context?id=${ctx.id}`).set('x-csrf-token', u.csrf).expect(200);
    expect(await h.db.signal.count({ where: { productId: p.id, contextId: null } })).toBe(1);
    expect(
      (
        await request(h.baseUrl)
          .post('/api/signals')
          .set('x-api-key', p.apiKey)
          .send({ type: 'x', context_id: ctx.id })
      ).status,
    ).toBe(400);
  });
});

describe('OpenAPI and probes', () => {
  test('When /openapi.json, /docs, /livez, /readyz are fetched, then they answer', async () => {
    const doc = await request(h.baseUrl).get('/openapi.json');
    expect(doc.body.openapi).toMatch(/^3\.1/);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/api/signals',
        '/api/ingest',
        '/api/proposals',
        '/api/products',
        '/api/context',
      ]),
    );
    expect((await request(h.baseUrl).get('/docs')).status).toBe(200);
    expect((await request(h.baseUrl).get('/livez')).body).toEqual({ ok: true });
    expect((await request(h.baseUrl).get('/readyz')).status).toBe(200);
  });
});
