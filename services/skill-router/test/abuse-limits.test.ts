import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// Keys are free, so what one key may do is capped across replicas (README, "Security").
let h: Harness;

beforeAll(async () => {
  h = await startHarness('skill_router_abuse_limits_test', {
    REGISTRATIONS_PER_KEY_PER_DAY: '2',
    ROUTES_PER_KEY_PER_MINUTE: '3',
  });
});
afterAll(() => h.close());

describe('per-key caps', () => {
  it('When a key registers more skills in a day than allowed, then 429 rate_limited with Retry-After and nothing is stored; another key still registers', async () => {
    const key = await h.createKey('busy-registrar');
    expect((await h.register(key, buildSkill())).status).toBe(201);
    expect((await h.register(key, buildSkill())).status).toBe(201);
    const third = buildSkill();
    const refused = await h.call('POST', '/api/discover/register', third, { 'x-api-key': key });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', requestId: expect.any(String) });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(86_000);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(await h.sql('SELECT 1 FROM skills WHERE skill_id = $1', third.skill_id)).toEqual([]);
    expect((await h.register(await h.createKey('other-registrar'), third)).status).toBe(201);
  });

  it('When a key routes more often in a minute than allowed, then 429 with Retry-After; another key still routes', async () => {
    const key = await h.createKey('busy-router');
    const route = (apiKey: string) =>
      h.call('POST', '/api/discover/route', { task: 'summarise a document' }, { 'x-api-key': apiKey });
    for (let i = 0; i < 3; i += 1) expect((await route(key)).status).toBe(200);
    const refused = await route(key);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await route(await h.createKey('other-router'))).status).toBe(200);
  });
});
