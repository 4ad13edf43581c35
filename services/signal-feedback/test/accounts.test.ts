import request from 'supertest';
import { signUp, startHarness, type Harness } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_accounts_test', {
    env: { LOGIN_FREE_FAILURES: '3', SIGNUP_MAX_PER_IP_PER_HOUR: '1000', TRUST_PROXY: '1' },
  });
});
afterAll(async () => h.close());

describe('Accounts and sessions', () => {
  test('When a user signs up, then an argon2id hash and a hashed server-side session are stored and the cookie is httpOnly and SameSite', async () => {
    const agent = h.agent();
    const res = await agent
      .post('/api/auth/signup')
      .send({ email: 'Ada@Example.com', password: 'correct horse battery' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      user: { email: 'ada@example.com', plan: 'free' },
      limits: { signals_per_month: 500, proposals_per_month: 3, deployments_per_month: 3, products: 1 },
      usage: { signals: 0, deployments: 0 },
    });
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^sf_session=[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).not.toMatch(/Secure/);
    const user = await h.db.user.findUniqueOrThrow({ where: { email: 'ada@example.com' } });
    expect(user.passwordHash).toMatch(/^\$argon2id\$/);
    const token = /sf_session=([^;]+)/.exec(cookie)![1]!;
    const sessions = await h.db.session.findMany({ where: { userId: user.id } });
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.tokenHash).not.toBe(token);
    expect(sessions[0]!.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    const me = await agent.get('/api/auth/me');
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe('ada@example.com');
  });

  test('When the e-mail is taken, then 409; when the password is short or the e-mail invalid, then 400', async () => {
    const u = await signUp(h);
    expect(
      (
        await h
          .agent()
          .post('/api/auth/signup')
          .send({ email: u.email.toUpperCase(), password: 'another long password' })
      ).status,
    ).toBe(409);
    expect(
      (await h.agent().post('/api/auth/signup').send({ email: 'b@example.com', password: 'short' })).status,
    ).toBe(400);
    expect(
      (await h.agent().post('/api/auth/signup').send({ email: 'nope', password: 'long enough password' }))
        .body.code,
    ).toBe('invalid_request');
  });

  test('When logging in with the right password, then a session works; with a wrong one, then 401 without a cookie', async () => {
    const u = await signUp(h, { password: 'the right password' });
    const bad = await h
      .agent()
      .post('/api/auth/login')
      .send({ email: u.email, password: 'the wrong password' });
    expect(bad.status).toBe(401);
    expect(bad.headers['set-cookie']).toBeUndefined();
    const unknown = await h
      .agent()
      .post('/api/auth/login')
      .send({ email: 'nobody@example.com', password: 'whatever it is' });
    expect(unknown.status).toBe(401);
    const agent = h.agent();
    const ok = await agent.post('/api/auth/login').send({ email: u.email, password: 'the right password' });
    expect(ok.status).toBe(200);
    expect(ok.body.csrf_token).toEqual(expect.any(String));
    expect((await agent.get('/api/auth/me')).status).toBe(200);
  });

  test('When logging out, then the session row is deleted and the old cookie no longer works', async () => {
    const u = await signUp(h);
    const before = await h.db.session.count({ where: { userId: u.userId } });
    expect(before).toBe(1);
    const noCsrf = await u.agent.post('/api/auth/logout');
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.code).toBe('csrf_failed');
    const out = await u.agent.post('/api/auth/logout').set('x-csrf-token', u.csrf);
    expect(out.status).toBe(204);
    expect(await h.db.session.count({ where: { userId: u.userId } })).toBe(0);
    expect((await u.agent.get('/api/auth/me')).status).toBe(401);
  });

  test('When a session has expired, then it is refused', async () => {
    const u = await signUp(h);
    await h.db.session.updateMany({
      where: { userId: u.userId },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await u.agent.get('/api/auth/me')).status).toBe(401);
  });

  test('When a cookie-authenticated write lacks or forges the CSRF token or comes from another origin, then 403 and nothing changes', async () => {
    const u = await signUp(h);
    expect((await u.agent.post('/api/products').send({ name: 'x' })).body.code).toBe('csrf_failed');
    expect(
      (await u.agent.post('/api/products').set('x-csrf-token', 'forged').send({ name: 'x' })).status,
    ).toBe(403);
    const cross = await u.agent
      .post('/api/products')
      .set('x-csrf-token', u.csrf)
      .set('origin', 'https://evil.example')
      .send({ name: 'x' });
    expect(cross.status).toBe(403);
    expect(await h.db.product.count({ where: { userId: u.userId } })).toBe(0);
    const same = await u.agent
      .post('/api/products')
      .set('x-csrf-token', u.csrf)
      .set('origin', h.baseUrl)
      .send({ name: 'x' });
    expect(same.status).toBe(200);
  });

  test('When log-in fails past the free failures from one client, then that client waits growing delays (429 with Retry-After, even with the right password) while the same address logs in from another client', async () => {
    const u = await signUp(h, { password: 'the right password' });
    const login = (password: string, ip: string) =>
      h.agent().post('/api/auth/login').set('x-forwarded-for', ip).send({ email: u.email, password });
    for (let i = 0; i < 4; i++) expect((await login('wrong password', '203.0.113.5')).status).toBe(401);
    const waiting = await login('the right password', '203.0.113.5');
    expect(waiting.status).toBe(429);
    expect(waiting.body.code).toBe('rate_limited');
    expect(Number(waiting.headers['retry-after'])).toBe(1);
    // The real user elsewhere is not locked out; and an IPv6 neighbour of the attacker's /64 waits too.
    expect((await login('the right password', '198.51.100.9')).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await login('wrong password', '2001:db8:7:7::1')).status).toBe(401);
    expect((await login('the right password', '2001:db8:7:7::2')).status).toBe(429);
    // Each further failure doubles the wait, up to the longest delay.
    const limiter = h.service.limiter;
    expect(await limiter.loginFailed(u.email, '203.0.113.5')).toBe(2);
    expect(await limiter.loginFailed(u.email, '203.0.113.5')).toBe(4);
    expect(await limiter.loginFailed(u.email, '203.0.113.5')).toBe(8);
  });

  test('When rate-limit counters have expired, then the hourly expiry sweep deletes them and keeps live ones', async () => {
    await h
      .agent()
      .post('/api/auth/login')
      .send({ email: 'sweep-old@example.com', password: 'x' })
      .expect(401);
    await h
      .agent()
      .post('/api/auth/login')
      .send({ email: 'sweep-live@example.com', password: 'x' })
      .expect(401);
    await h.db.rateLimit.update({
      where: { key: 'login_fail:sweep-old@example.com|127.0.0.1' },
      data: { expire: BigInt(Date.now() - 1000) },
    });
    await h.service.expirySweep.kick();
    expect(await h.db.rateLimit.count({ where: { key: 'login_fail:sweep-old@example.com|127.0.0.1' } })).toBe(
      0,
    );
    expect(
      await h.db.rateLimit.count({ where: { key: 'login_fail:sweep-live@example.com|127.0.0.1' } }),
    ).toBe(1);
  });

  test('When the limiter is shared by a second replica, then the attempts count across both', async () => {
    const other = await startHarness('unused', {
      reuseDatabaseUrl: h.databaseUrl,
      env: { LOGIN_FREE_FAILURES: '3' },
    });
    try {
      const u = await signUp(h, { password: 'the right password' });
      await h.agent().post('/api/auth/login').send({ email: u.email, password: 'wrong 1' }).expect(401);
      await request(other.baseUrl)
        .post('/api/auth/login')
        .send({ email: u.email, password: 'wrong 2' })
        .expect(401);
      await h.agent().post('/api/auth/login').send({ email: u.email, password: 'wrong 3' }).expect(401);
      // The fourth failure, on the other replica, makes the pair wait; both replicas see it.
      await request(other.baseUrl)
        .post('/api/auth/login')
        .send({ email: u.email, password: 'wrong 4' })
        .expect(401);
      expect(
        (await h.agent().post('/api/auth/login').send({ email: u.email, password: 'the right password' }))
          .status,
      ).toBe(429);
    } finally {
      await other.close();
    }
  });

  test('When one address signs up more often than allowed per hour, then 429 and no account is created', async () => {
    const limited = await startHarness('unused', {
      reuseDatabaseUrl: h.databaseUrl,
      env: { SIGNUP_MAX_PER_IP_PER_HOUR: '2' },
    });
    try {
      await h.db.rateLimit.deleteMany({ where: { key: { startsWith: 'signup_ip:' } } });
      const stamp = Date.now();
      const email = (i: number) => `burst${stamp}-${i}@example.com`;
      expect(
        (
          await request(limited.baseUrl)
            .post('/api/auth/signup')
            .send({ email: email(1), password: 'correct horse battery' })
        ).status,
      ).toBe(201);
      expect(
        (
          await request(limited.baseUrl)
            .post('/api/auth/signup')
            .send({ email: email(2), password: 'correct horse battery' })
        ).status,
      ).toBe(201);
      const third = await request(limited.baseUrl)
        .post('/api/auth/signup')
        .send({ email: email(3), password: 'correct horse battery' });
      expect(third.status).toBe(429);
      expect(await h.db.user.count({ where: { email: email(3) } })).toBe(0);
    } finally {
      await limited.close();
    }
  });

  test('When not signed in, then session endpoints answer 401 in the envelope', async () => {
    for (const [method, path] of [
      ['get', '/api/auth/me'],
      ['get', '/api/products'],
      ['get', '/api/context'],
      ['get', '/api/proposals'],
    ] as const) {
      const res = await request(h.baseUrl)[method](path);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
    }
  });

  test('When an unknown route is called, then 404 not_found', async () => {
    const res = await request(h.baseUrl).get('/api/nope');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  test('When production cookies are configured, then the cookie is __Host- prefixed and Secure', async () => {
    const prod = await startHarness('unused', {
      reuseDatabaseUrl: h.databaseUrl,
      env: { COOKIE_SECURE: 'true' },
    });
    try {
      const res = await request(prod.baseUrl)
        .post('/api/auth/signup')
        .send({ email: `secure${Date.now()}@example.com`, password: 'correct horse battery' });
      expect(String(res.headers['set-cookie'])).toMatch(/^__Host-sf_session=.*; Secure/);
    } finally {
      await prod.close();
    }
  });
});
