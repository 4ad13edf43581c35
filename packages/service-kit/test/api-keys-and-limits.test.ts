import { Client, Pool } from 'pg';
import { RateLimiterPostgres } from 'rate-limiter-flexible';
import { apiKeyScheme, createRateLimit, hashApiKey, hashesEqual, sweepRateLimits } from '../src/index';
import { countQueries, runScoped, TEST_DATABASE_BASE_URL, testDatabaseUrl } from '../src/testing';

describe('apiKeyScheme', () => {
  const scheme = apiKeyScheme('sk_test_', 6);

  it('When a key is generated, then it has the prefix, a base58 body of 32 bytes, its SHA-256 and its display prefix', () => {
    const fresh = scheme.generate();
    expect(fresh.key).toMatch(/^sk_test_[1-9A-HJ-NP-Za-km-z]{43,44}$/);
    expect(fresh.hash).toBe(hashApiKey(fresh.key));
    expect(fresh.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(fresh.displayPrefix).toBe(fresh.key.slice(0, 'sk_test_'.length + 6));
    expect(scheme.looksLike(fresh.key)).toBe(true);
    expect(scheme.generate().key).not.toBe(fresh.key);
  });

  it.each([
    ['another prefix', 'spk_3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy3J98t1WpEZ7'],
    ['a character outside base58', 'sk_test_0J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy3J98t1Wp'],
    ['a body too short', 'sk_test_3J98t1Wp'],
    ['a prefix read as a pattern', 'sk_testX3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy3J98t1Wp'],
  ])('When a value has %s, then it does not look like a key', (_what, value) => {
    expect(scheme.looksLike(value)).toBe(false);
  });

  it('When hashes are compared, then equal ones match and different or empty ones do not', () => {
    const a = hashApiKey('a');
    expect(hashesEqual(a, hashApiKey('a'))).toBe(true);
    expect(hashesEqual(a, hashApiKey('b'))).toBe(false);
    expect(hashesEqual(a, a.slice(0, 10))).toBe(false);
    expect(hashesEqual('', '')).toBe(false);
  });
});

describe('createRateLimit on PostgreSQL', () => {
  const database = runScoped('service_kit_limits_test');
  let pool: Pool;

  beforeAll(async () => {
    const admin = new Client({ connectionString: `${TEST_DATABASE_BASE_URL}/postgres` });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${database}"`);
    await admin.end();
    pool = new Pool({ connectionString: testDatabaseUrl('service_kit_limits_test'), max: 2 });
    // The services get the table from their migrations; here the library creates its own.
    await new Promise<void>((resolve, reject) => {
      new RateLimiterPostgres(
        { storeClient: pool, storeType: 'pool', tableName: 'rate_limits', points: 1, duration: 1 },
        (err?: Error) => (err ? reject(err) : resolve()),
      );
    });
  });
  afterAll(async () => {
    await pool.end();
  });

  /** The events counted for a stored key (`<keyPrefix>:<key>`) in the current window, or undefined. */
  const pointsOf = async (storedKey: string): Promise<number | undefined> =>
    (await pool.query<{ points: number }>('SELECT points FROM rate_limits WHERE key = $1', [storedKey]))
      .rows[0]?.points;

  it('When a key is over its points, then it is refused with the seconds left; another key is not', async () => {
    const limit = createRateLimit(pool, { keyPrefix: 'over', points: 2, durationSeconds: 60 });
    expect(await limit.consume('a')).toEqual({ allowed: true });
    expect(await limit.consume('a')).toEqual({ allowed: true });
    const refused = await limit.consume('a');
    expect(refused.allowed).toBe(false);
    if (!refused.allowed) expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(59);
    expect(await limit.refusedFor('a')).toBeGreaterThanOrEqual(59);
    expect(await limit.consume('b')).toEqual({ allowed: true });
    expect(await limit.refusedFor('b')).toBe(0);
  });

  it('When a refused key keeps trying, then it is refused from memory with the same wait, and its counter in PostgreSQL no longer grows; after delete it is counted again', async () => {
    const limit = createRateLimit(pool, { keyPrefix: 'flood', points: 2, durationSeconds: 60 });
    const counted = () => pointsOf('flood:k');
    await limit.consume('k');
    await limit.consume('k');
    const first = await limit.consume('k');
    expect(first.allowed).toBe(false);
    expect(await counted()).toBe(3);
    for (let i = 0; i < 20; i++) {
      const again = await limit.consume('k');
      expect(again.allowed).toBe(false);
      if (!again.allowed && !first.allowed)
        expect(again.retryAfterSeconds).toBeLessThanOrEqual(first.retryAfterSeconds);
      if (!again.allowed) expect(again.retryAfterSeconds).toBeGreaterThanOrEqual(58);
    }
    expect(await counted()).toBe(3);
    await limit.delete('k');
    expect(await limit.consume('k')).toEqual({ allowed: true });
    expect(await counted()).toBe(1);
  });

  it('When a limit gives events back (inMemoryRefusal false), then a refused key is counted in PostgreSQL on every try and allowed again once an event is given back', async () => {
    const limit = createRateLimit(pool, {
      keyPrefix: 'given_back',
      points: 1,
      durationSeconds: 60,
      inMemoryRefusal: false,
    });
    const counted = () => pointsOf('given_back:k');
    expect(await limit.consume('k')).toEqual({ allowed: true });
    expect((await limit.consume('k')).allowed).toBe(false);
    expect((await limit.consume('k')).allowed).toBe(false);
    expect(await counted()).toBe(3);
    for (let i = 0; i < 3; i++) await limit.reward('k');
    expect(await limit.consume('k')).toEqual({ allowed: true });
    expect(await counted()).toBe(1);
  });

  it('When one key consumes many times at once, then exactly its points are allowed and every try is counted, in fewer statements than tries', async () => {
    const limit = createRateLimit(pool, { keyPrefix: 'burst', points: 5, durationSeconds: 60 });
    const { result: decisions, queries } = await countQueries(() =>
      Promise.all(Array.from({ length: 12 }, () => limit.consume('k'))),
    );
    const statements = queries.filter((q) => q.includes('rate_limits'));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    for (const d of decisions.filter((d) => !d.allowed))
      if (!d.allowed) expect(d.retryAfterSeconds).toBeGreaterThanOrEqual(59);
    expect(await pointsOf('burst:k')).toBe(12);
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.length).toBeLessThan(12);
    // Another key is not held up by this one's refusal.
    expect(await limit.consume('other')).toEqual({ allowed: true });
  });

  it('When failures are counted with penalty and the key blocked, then it is refused until deleted', async () => {
    const failures = createRateLimit(pool, { keyPrefix: 'fail', points: 1_000_000, durationSeconds: 86_400 });
    const waits = createRateLimit(pool, { keyPrefix: 'wait', points: 1, durationSeconds: 1 });
    expect(await failures.penalty('pair')).toBe(1);
    expect(await failures.penalty('pair', 2)).toBe(3);
    await waits.block('pair', 30);
    expect(await waits.refusedFor('pair')).toBeGreaterThanOrEqual(29);
    await Promise.all([failures.delete('pair'), waits.delete('pair')]);
    expect(await waits.refusedFor('pair')).toBe(0);
    expect(await failures.penalty('pair')).toBe(1);
  });

  it('When counters expired, then the sweep deletes exactly those rows', async () => {
    const limit = createRateLimit(pool, { keyPrefix: 'sweep', points: 5, durationSeconds: 60 });
    await limit.consume('kept');
    const before = (
      await pool.query<{ n: string }>("SELECT count(*) AS n FROM rate_limits WHERE key LIKE 'sweep:%'")
    ).rows[0]?.n;
    expect(before).toBe('1');
    expect(await sweepRateLimits(pool, Date.now())).toBe(0);
    expect(await sweepRateLimits(pool, Date.now() + 120_000)).toBeGreaterThanOrEqual(1);
    const after = (
      await pool.query<{ n: string }>("SELECT count(*) AS n FROM rate_limits WHERE key LIKE 'sweep:%'")
    ).rows[0]?.n;
    expect(after).toBe('0');
  });
});
