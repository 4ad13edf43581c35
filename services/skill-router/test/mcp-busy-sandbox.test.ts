import { startLocalMcpServers, type LocalMcpServers } from '../scripts/local-mcp-servers';
import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import { buildMcpServer, buildSkill, translate, uniqueWord } from './support/factories';
import { startHarness, waitFor, type Harness } from './support/harness';

// Other registrants' schemas that keep the schema sandbox busy must not fail an honest MCP server's
// verification (README, "MCP servers as skills").
jest.setTimeout(120_000);

let h: Harness;
let servers: LocalMcpServers;
let skills: LocalSkills;

beforeAll(async () => {
  servers = await startLocalMcpServers();
  skills = await startLocalSkills();
  h = await startHarness('skill_router_mcp_busy_sandbox_test', {
    WORKERS_ENABLED: 'true',
    HEALTH_CHECK_INTERVAL_MS: '3600000',
    HEALTH_POLL_INTERVAL_MS: '3600000',
    CONFORMANCE_INTERVAL_MS: '3600000',
    CONFORMANCE_POLL_INTERVAL_MS: '3600000',
    // One sandbox thread, each check up to 2 s; an MCP session may last 4 × 1000 ms.
    SANDBOX_THREADS: '1',
    SANDBOX_MEMORY_MB: '512',
    SANDBOX_TASK_TIMEOUT_MS: '2000',
    VERIFY_TIMEOUT_MS: '1000',
  });
});
afterAll(async () => {
  await h?.close();
  await skills?.close();
  await servers?.close();
});

const skillRow = async (id: string) =>
  (
    await h.sql<{ status: string; verification_reason: string | null }>(
      'SELECT status, verification_reason FROM skills WHERE skill_id = $1',
      id,
    )
  )[0];

describe('An MCP server verified while the sandbox is busy', () => {
  it('When hostile schemas queue seconds of sandbox work, then an honest MCP tool still verifies: the sandbox wait does not count against its session', async () => {
    const attacker = await h.createKey('attacker');
    skills.set('echo', { kind: 'healthy', respond: translate });
    const attacks = Array.from({ length: 4 }, (_, i) =>
      buildSkill({
        skill_id: `busy-${i}`,
        endpoint: skills.url('echo'),
        input_schema: { type: 'string', minLength: 200_000_000 },
      }),
    );
    for (const attack of attacks) expect((await h.register(attacker, attack)).status).toBe(201);
    await waitFor('the attacks to be claimed', async () => {
      const claimed = await h.sql(
        `SELECT 1 FROM skills WHERE skill_id LIKE 'busy-%' AND verification_lease_until IS NOT NULL`,
      );
      return claimed.length > 0;
    });

    const word = uniqueWord();
    servers.set('honest', {
      tools: [
        {
          name: 'forecast',
          description: `Tomorrow's ${word} weather forecast for a city`,
          inputSchema: { type: 'object', properties: { city: { type: 'string', examples: ['Lisbon'] } } },
          call: () => ({ content: [{ type: 'text', text: 'sunny' }] }),
        },
      ],
    });
    const provider = await h.createKey('honest-provider');
    const res = await h.call(
      'POST',
      '/api/discover/register/mcp',
      buildMcpServer('honest', servers.url('honest')),
      { 'x-api-key': provider },
    );
    expect(res.status).toBe(201);

    const verified = await waitFor(
      'honest.forecast to be verified',
      async () => {
        const row = await skillRow('honest.forecast');
        return row && row.status !== 'pending_verification' && row;
      },
      60_000,
    );
    expect(verified).toEqual({ status: 'active', verification_reason: null });
    // The attacks did take the sandbox: each fails at its deadline.
    for (const attack of attacks) {
      const row = await waitFor(
        `${attack.skill_id} to fail`,
        async () => {
          const r = await skillRow(attack.skill_id);
          return r?.status === 'verification_failed' && r;
        },
        60_000,
      );
      expect(row.verification_reason).toMatch(/^test_call: generating an input from input_schema /);
    }
  });
});
