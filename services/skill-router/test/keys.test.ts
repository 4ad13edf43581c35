import { createHash } from 'node:crypto';
import { startHarness, type Harness } from './support/harness';

// Blank counts as unset, so these suites run with the default limit of 5 per minute.
const DEFAULT_LIMIT = { KEY_CREATION_LIMIT_PER_MINUTE: '' };

describe('POST /api/auth/key', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('skill_router_keys_test', { ...DEFAULT_LIMIT, TRUST_PROXY: '1' });
  });
  afterAll(() => h.close());

  it('When a key is created, then it is sk_router_ + base58 of 32 bytes, shown once, and only its SHA-256 hash is stored', async () => {
    const count = async () =>
      Number((await h.sql<{ n: bigint }>('SELECT count(*) AS n FROM api_keys'))[0]?.n);
    const before = await count();
    const res = await h.call(
      'POST',
      '/api/auth/key',
      { name: 'agent-one' },
      { 'x-forwarded-for': '203.0.113.1' },
    );
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      ok: true,
      api_key: expect.stringMatching(/^sk_router_[1-9A-HJ-NP-Za-km-z]{43,44}$/),
      prefix: expect.any(String),
      message: expect.any(String),
    });
    const { api_key: key, prefix } = res.body as { api_key: string; prefix: string };
    expect(key.startsWith(prefix)).toBe(true);
    expect(prefix.length).toBeLessThan(key.length - 30);
    // Other tests' keys are in the table too: this one added exactly one row, and this is it.
    expect(await count()).toBe(before + 1);
    const rows = await h.sql<{ name: string; prefix: string; key_hash: string }>(
      'SELECT name, prefix, key_hash FROM api_keys WHERE name = $1',
      'agent-one',
    );
    expect(rows).toEqual([
      { name: 'agent-one', prefix, key_hash: createHash('sha256').update(key).digest('hex') },
    ]);
    const stored = JSON.stringify(await h.sql('SELECT * FROM api_keys'));
    expect(stored).not.toContain(key);
  });

  it('When two keys are created, then they differ', async () => {
    const a = await h.createKey('a', { 'x-forwarded-for': '203.0.113.2' });
    const b = await h.createKey('b', { 'x-forwarded-for': '203.0.113.2' });
    expect(a).not.toBe(b);
  });

  it('When the name is missing, empty or too long, then 400 invalid_request in the envelope and no key is stored', async () => {
    const before = await h.sql<{ n: bigint }>('SELECT count(*) AS n FROM api_keys');
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 42 }]) {
      const res = await h.call('POST', '/api/auth/key', body, { 'x-forwarded-for': '203.0.113.3' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'invalid_request',
        error: expect.any(String),
        requestId: expect.any(String),
      });
      expect(res.body.details.issues).toEqual([expect.objectContaining({ path: 'body.name' })]);
    }
    const after = await h.sql<{ n: bigint }>('SELECT count(*) AS n FROM api_keys');
    expect(after).toEqual(before);
  });

  it('When the body is malformed JSON, then 400 invalid_json', async () => {
    const res = await h.call('POST', '/api/auth/key', '{"name": ', { 'x-forwarded-for': '203.0.113.4' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_json', requestId: expect.any(String) });
  });

  it('When one IP creates a sixth key within a minute, then 429 rate_limited with Retry-After, and another IP is unaffected', async () => {
    const ip = '198.51.100.7';
    for (let i = 0; i < 5; i++) {
      const ok = await h.call('POST', '/api/auth/key', { name: `k${i}` }, { 'x-forwarded-for': ip });
      expect(ok.status).toBe(201);
    }
    const refused = await h.call('POST', '/api/auth/key', { name: 'k6' }, { 'x-forwarded-for': ip });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', requestId: expect.any(String) });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await h.sql('SELECT 1 FROM api_keys WHERE name = $1', 'k6')).toEqual([]);
    const other = await h.call(
      'POST',
      '/api/auth/key',
      { name: 'other' },
      { 'x-forwarded-for': '198.51.100.8' },
    );
    expect(other.status).toBe(201);
  });

  it('When the client IP is taken behind one proxy, then the proxy-appended address counts, not one the client forged', async () => {
    // With one trusted hop the client address is the last X-Forwarded-For entry (what the proxy saw).
    for (let i = 0; i < 5; i++) {
      const ok = await h.call(
        'POST',
        '/api/auth/key',
        { name: `f${i}` },
        { 'x-forwarded-for': `10.9.9.${i}, 192.0.2.50` },
      );
      expect(ok.status).toBe(201);
    }
    const refused = await h.call(
      'POST',
      '/api/auth/key',
      { name: 'f6' },
      { 'x-forwarded-for': '10.9.9.99, 192.0.2.50' },
    );
    expect(refused.status).toBe(429);
  });
});

describe('POST /api/auth/key: reporter cohorts', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('skill_router_keys_cohort_test', { TRUST_PROXY: '1' });
  });
  afterAll(() => h.close());

  const cohortOf = async (name: string, ip: string): Promise<string> => {
    await h.createKey(name, { 'x-forwarded-for': ip });
    const [row] = await h.sql<{ cohort: string }>('SELECT cohort FROM api_keys WHERE name = $1', name);
    return row?.cohort ?? '';
  };

  it('When keys are created on one day from one IPv4 /24 or one IPv6 /64, then they share a cohort; another network has another; the address is not stored', async () => {
    const a = await cohortOf('v4-a', '203.0.113.10');
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(await cohortOf('v4-b', '203.0.113.250')).toBe(a);
    // An IPv6 address carrying an IPv4 client's (NAT64) is that client.
    expect(await cohortOf('v4-nat64', '64:ff9b::cb00:7163')).toBe(a);
    expect(await cohortOf('v4-other', '203.0.114.10')).not.toBe(a);
    const v6 = await cohortOf('v6-a', '2001:db8:1:2::1');
    expect(await cohortOf('v6-b', '2001:db8:1:2:ffff:ffff:ffff:9')).toBe(v6);
    expect(await cohortOf('v6-other', '2001:db8:1:3::1')).not.toBe(v6);
    expect(v6).not.toBe(a);
    const stored = JSON.stringify(await h.sql('SELECT * FROM api_keys'));
    expect(stored).not.toMatch(/203\.0\.11|2001:db8/);
  });
});

describe('POST /api/auth/key without a trusted proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('skill_router_keys_noproxy_test', { ...DEFAULT_LIMIT, TRUST_PROXY: '0' });
  });
  afterAll(() => h.close());

  it('When no proxy is trusted, then a forged X-Forwarded-For does not escape the limit', async () => {
    for (let i = 0; i < 5; i++) {
      const ok = await h.call(
        'POST',
        '/api/auth/key',
        { name: `n${i}` },
        { 'x-forwarded-for': `203.0.113.${i}` },
      );
      expect(ok.status).toBe(201);
    }
    const refused = await h.call(
      'POST',
      '/api/auth/key',
      { name: 'n6' },
      { 'x-forwarded-for': '203.0.113.200' },
    );
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[0-9]+$/);
  });
});

describe('POST /api/auth/key across replicas', () => {
  let a: Harness;
  let b: Harness;
  beforeAll(async () => {
    a = await startHarness('skill_router_keys_replicas_test', { ...DEFAULT_LIMIT, TRUST_PROXY: '1' });
    b = await startHarness(
      'skill_router_keys_replicas_test',
      { ...DEFAULT_LIMIT, TRUST_PROXY: '1' },
      { resetDb: false },
    );
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('When one IP spreads its requests over two replicas, then the limit of 5 per minute still holds', async () => {
    const ip = { 'x-forwarded-for': '192.0.2.77' };
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const h = i % 2 === 0 ? a : b;
      statuses.push((await h.call('POST', '/api/auth/key', { name: `r${i}` }, ip)).status);
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
    const refusedOnA = await a.call('POST', '/api/auth/key', { name: 'r7' }, ip);
    expect(refusedOnA.status).toBe(429);
  });
});
