import { startLocalMcpServers, type LocalMcpServers, type LocalTool } from '../scripts/local-mcp-servers';
import { buildMcpServer, buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// Keys are free, so what one key may do is capped across replicas (README, "Security").
let h: Harness;
let replica: Harness;
let servers: LocalMcpServers;

beforeAll(async () => {
  servers = await startLocalMcpServers();
  const env = { REGISTRATIONS_PER_KEY_PER_DAY: '2', ROUTES_PER_KEY_PER_MINUTE: '3' };
  h = await startHarness('skill_router_abuse_limits_test', env);
  // A second replica on the same database: the limits live in PostgreSQL.
  replica = await startHarness('skill_router_abuse_limits_test', env, { resetDb: false });
});
afterAll(async () => {
  await replica?.close();
  await h?.close();
  await servers?.close();
});

/** `count` text tools, each a valid skill. */
const tools = (count: number): LocalTool[] =>
  Array.from({ length: count }, (_, i) => ({
    name: `tool_${i}`,
    description: `Answers question number ${i} about the weather`,
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    call: () => ({ content: [{ type: 'text', text: 'sunny' }] }),
  }));

const importServer = (on: Harness, apiKey: string, serverId: string) =>
  on.call('POST', '/api/discover/register/mcp', buildMcpServer(serverId, servers.url(serverId)), {
    'x-api-key': apiKey,
  });

const importedSkills = (serverId: string) =>
  h.sql<{ skill_id: string }>(`SELECT skill_id FROM skills WHERE skill_id LIKE $1`, `${serverId}.%`);

/** Checks a 429 answer: the error envelope, `Retry-After` within the day's window, the same seconds in `details`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are checked field by field
function expectDailyRateLimit(res: { status: number; headers: Headers; body: any }): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({
    error: expect.stringMatching(/API key/),
    code: 'rate_limited',
    details: { retry_after_seconds: expect.any(Number) },
    requestId: expect.any(String),
  });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(86_000);
  expect(retryAfter).toBeLessThanOrEqual(86_400);
  expect(res.body.details.retry_after_seconds).toBe(retryAfter);
}

describe('per-key caps', () => {
  it('When a key registers more skills in a day than allowed, then 429 rate_limited with Retry-After and nothing is stored; another key still registers', async () => {
    const key = await h.createKey('busy-registrar');
    expect((await h.register(key, buildSkill())).status).toBe(201);
    expect((await h.register(key, buildSkill())).status).toBe(201);
    const third = buildSkill();
    const refused = await h.call('POST', '/api/discover/register', third, { 'x-api-key': key });
    expectDailyRateLimit(refused);
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

describe('per-key caps on MCP imports (one registration per tool written)', () => {
  it('When an import needs more registrations than the key has left, then 429 with Retry-After, no tool is imported and the refusal costs the key one registration', async () => {
    const key = await h.createKey('mcp-importer');
    servers.set('three-tools', { tools: tools(3) });
    // Three tools need three registrations; the key has two.
    expectDailyRateLimit(await importServer(h, key, 'three-tools'));
    expect(await importedSkills('three-tools')).toEqual([]);

    // The refused import cost the one registration of its request to the server, no more.
    servers.set('one-tool', { tools: tools(1) });
    const ok = await importServer(h, key, 'one-tool');
    expect(ok.status).toBe(201);
    expect(ok.body.skills).toEqual([
      { tool: 'tool_0', skill_id: 'one-tool.tool_0', status: 'pending_verification' },
    ]);
    expect(await importedSkills('one-tool')).toHaveLength(1);
    expectDailyRateLimit(await importServer(h, key, 'one-tool'));
  });

  it('When a key used its registrations on one replica, then an import on another is 429 before the server is asked, and nothing is imported', async () => {
    const key = await h.createKey('spent-importer');
    expect((await h.register(key, buildSkill())).status).toBe(201);
    expect((await h.register(key, buildSkill())).status).toBe(201);

    servers.set('late-tools', { tools: tools(1) });
    expectDailyRateLimit(await importServer(replica, key, 'late-tools'));
    expect(servers.requests('late-tools')).toBe(0);
    expect(await importedSkills('late-tools')).toEqual([]);

    // One registration short across replicas: one left on each would be two, but the limit is shared.
    const other = await h.createKey('split-importer');
    expect((await h.register(other, buildSkill())).status).toBe(201);
    servers.set('pair-tools', { tools: tools(2) });
    expectDailyRateLimit(await importServer(replica, other, 'pair-tools'));
    expect(await importedSkills('pair-tools')).toEqual([]);
  });
});
