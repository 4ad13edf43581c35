import { startLocalMcpServers, type LocalMcpServers, type LocalTool } from '../scripts/local-mcp-servers';
import { buildMcpServer, uniqueWord } from './support/factories';
import { startHarness, waitFor, type Harness } from './support/harness';

// Health checks of tools imported from an MCP server speak MCP (README, "MCP servers as skills").
jest.setTimeout(120_000);

let h: Harness;
let key: string;
let servers: LocalMcpServers;

beforeAll(async () => {
  servers = await startLocalMcpServers();
  h = await startHarness('skill_router_mcp_health_test', {
    WORKERS_ENABLED: 'true',
    // The health loop runs once at start and then only when a test kicks it.
    HEALTH_CHECK_INTERVAL_MS: '3600000',
    HEALTH_POLL_INTERVAL_MS: '3600000',
    HEALTH_CHECK_TIMEOUT_MS: '2000',
    // A whole verification session is four of these: room for a busy machine's sandbox.
    VERIFY_TIMEOUT_MS: '5000',
    HEALTH_FAILURES_TO_SUSPEND: '3',
    HEALTH_SUCCESSES_TO_RESUME: '2',
    CONFORMANCE_INTERVAL_MS: '3600000',
    CONFORMANCE_POLL_INTERVAL_MS: '3600000',
  });
  key = await h.createKey('mcp-provider');
});
afterAll(async () => {
  await h?.close();
  await servers?.close();
});

/** `count` tools that answer text, described with `word` so that routes find them. */
const tools = (word: string, count = 1): LocalTool[] =>
  Array.from({ length: count }, (_, i) => ({
    name: `tool_${i}`,
    description: `Answers ${word} weather questions, variant ${i}`,
    inputSchema: { type: 'object', properties: { city: { type: 'string', examples: ['Lisbon'] } } },
    call: () => ({ content: [{ type: 'text', text: 'sunny' }] }),
  }));

const registerMcp = (serverId: string) =>
  h.call('POST', '/api/discover/register/mcp', buildMcpServer(serverId, servers.url(serverId)), {
    'x-api-key': key,
  });

const status = async (id: string) =>
  (await h.sql<{ status: string }>('SELECT status FROM skills WHERE skill_id = $1', id))[0]?.status;

const waitForStatus = (id: string, wanted: string) =>
  waitFor(`${id} to be ${wanted}`, async () => (await status(id)) === wanted, 30_000);

/** The skill's periodic checks, newest first. */
const periodicChecks = (skillId: string) =>
  h.sql<{ ok: boolean; latency_ms: number | null; status_code: number | null; error: string | null }>(
    `SELECT ok, latency_ms, status_code, error FROM health_checks
      WHERE skill_id = $1 AND kind = 'periodic' ORDER BY id DESC`,
    skillId,
  );

/**
 * Makes the periodic checks of `skillIds` due now and kicks the health worker until each has one
 * more periodic check; returns the newest check of each.
 */
async function checkOnce(skillIds: string | string[]) {
  const checked = typeof skillIds === 'string' ? [skillIds] : skillIds;
  const before = await Promise.all(checked.map(async (id) => (await periodicChecks(id)).length));
  await h.sql(
    "UPDATE skill_stats SET next_health_check_at = now() - interval '1 second' WHERE skill_id = ANY($1::text[])",
    checked,
  );
  const worker = h.service.workers?.health;
  if (!worker) throw new Error('the health worker is not running');
  // A claimed skill is next due in an hour, so a further kick cannot add a second check.
  const after = await waitFor(
    `a periodic health check of ${checked.join(', ')}`,
    async () => {
      await worker.kick();
      const all = await Promise.all(checked.map((id) => periodicChecks(id)));
      return all.every((checks, i) => checks.length > (before[i] ?? 0)) && all;
    },
    20_000,
  );
  after.forEach((checks, i) => expect(checks).toHaveLength((before[i] ?? 0) + 1));
  return after.map((checks) => checks[0]!);
}

const routed = async (word: string) => {
  const res = await h.call('POST', '/api/discover/route', { task: word, limit: 100 }, { 'x-api-key': key });
  expect(res.status).toBe(200);
  return (res.body.matches as { skill_id: string }[]).map((m) => m.skill_id);
};

describe('Health checks of MCP servers', () => {
  it('When an MCP server holds GET event streams open, then its tools are checked with an MCP ping and stay active', async () => {
    servers.set('streaming', { tools: tools(uniqueWord()), holdGetStreams: true });
    expect((await registerMcp('streaming')).status).toBe(201);
    await waitForStatus('streaming.tool_0', 'active');

    const pingsBefore = servers.pings('streaming');
    for (let i = 0; i < 4; i += 1) {
      const [check] = await checkOnce('streaming.tool_0');
      expect(check).toEqual({ ok: true, latency_ms: expect.any(Number), status_code: null, error: null });
    }
    expect(servers.pings('streaming') - pingsBefore).toBe(4);
    expect(await status('streaming.tool_0')).toBe('active');
  });

  it('When several tools of a server are due together, then one ping checks them all', async () => {
    servers.set('pair', { tools: tools(uniqueWord(), 2) });
    expect((await registerMcp('pair')).status).toBe(201);
    await waitForStatus('pair.tool_0', 'active');
    await waitForStatus('pair.tool_1', 'active');

    const pingsBefore = servers.pings('pair');
    const checks = await checkOnce(['pair.tool_0', 'pair.tool_1']);
    expect(checks.map((c) => c.ok)).toEqual([true, true]);
    expect(servers.pings('pair') - pingsBefore).toBe(1);
  });

  it('When a server stops answering, then its tools are suspended after 3 failed checks with the reason and leave routing, and are active again after 2 good ones', async () => {
    const word = uniqueWord();
    servers.set('fading', { tools: tools(word) });
    expect((await registerMcp('fading')).status).toBe(201);
    await waitForStatus('fading.tool_0', 'active');
    await waitFor('the route to list the tool', async () => (await routed(word)).includes('fading.tool_0'));

    servers.set('fading', { tools: tools(word), unresponsive: true });
    for (let i = 0; i < 3; i += 1) {
      const [check] = await checkOnce('fading.tool_0');
      expect(check).toEqual({
        ok: false,
        latency_ms: null,
        status_code: null,
        error: 'MCP handshake: no answer within 2000 ms',
      });
      expect(await status('fading.tool_0')).toBe(i < 2 ? 'active' : 'suspended');
    }
    await waitFor('the route to drop the tool', async () => !(await routed(word)).includes('fading.tool_0'));

    servers.set('fading', { tools: tools(word) });
    expect((await checkOnce('fading.tool_0'))[0]?.ok).toBe(true);
    expect(await status('fading.tool_0')).toBe('suspended');
    expect((await checkOnce('fading.tool_0'))[0]?.ok).toBe(true);
    expect(await status('fading.tool_0')).toBe('active');
    await waitFor('the route to list the tool again', async () =>
      (await routed(word)).includes('fading.tool_0'),
    );
  });

  it('When a server answers ping with a result over the response cap or with an error full of junk, then the check fails with a short printable reason and the service keeps answering', async () => {
    servers.set('hostile', { tools: tools(uniqueWord()) });
    expect((await registerMcp('hostile')).status).toBe(201);
    await waitForStatus('hostile.tool_0', 'active');

    servers.set('hostile', { tools: tools(uniqueWord()), ping: 'huge' });
    const [huge] = await checkOnce('hostile.tool_0');
    expect(huge).toMatchObject({ ok: false, error: 'ping: response larger than 1048576 bytes' });

    servers.set('hostile', { tools: tools(uniqueWord()), ping: 'error' });
    const [junk] = await checkOnce('hostile.tool_0');
    expect(junk?.ok).toBe(false);
    // The server's text is cut to 200 printable ASCII characters.
    expect(junk?.error).toMatch(/^ping: MCP error -32603: pong \?\?+$/);
    expect(junk?.error?.length).toBeLessThanOrEqual('ping: '.length + 200);
    expect((await h.call('GET', '/api/health')).status).toBe(200);
  });
});

describe('Re-listing suspended MCP tools', () => {
  it('When a suspended tool is registered again by its server, then it is verified again and routed once it passes', async () => {
    const word = uniqueWord();
    servers.set('comeback', { tools: tools(word) });
    expect((await registerMcp('comeback')).status).toBe(201);
    await waitForStatus('comeback.tool_0', 'active');
    servers.set('comeback', { tools: tools(word), unresponsive: true });
    for (let i = 0; i < 3; i += 1) await checkOnce('comeback.tool_0');
    expect(await status('comeback.tool_0')).toBe('suspended');

    servers.set('comeback', { tools: tools(word) });
    const again = await registerMcp('comeback');
    expect(again.status).toBe(200);
    expect(again.body.skills).toEqual([
      { tool: 'tool_0', skill_id: 'comeback.tool_0', status: 'pending_verification' },
    ]);
    await waitForStatus('comeback.tool_0', 'active');
    await waitFor('the route to list the tool again', async () =>
      (await routed(word)).includes('comeback.tool_0'),
    );
    const detail = await h.call('GET', '/api/discover/skills/comeback.tool_0');
    expect(detail.body).toMatchObject({ revision: 2, status: 'active' });
  });
});
