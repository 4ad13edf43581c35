import path from 'node:path';
import { CAPTURE_EXAMPLES, TcpProxy, testDatabaseUrl, writeExamples } from '@repo/service-kit/testing';
import { startLocalMcpServers, structured } from '../scripts/local-mcp-servers';
import { startLocalSkills } from '../scripts/local-skills';
import { buildSkill, translate } from './support/factories';
import { startHarness, waitFor } from './support/harness';

// The generator of src/entry-points/http/examples.json: every operation called for real against the
// service as production composes it (workers on, a skill verified against a local endpoint), and its
// answers written down, arrays cut to two items. Runs only with UPDATE_OPENAPI_EXAMPLES=1;
// openapi-contract.test.ts checks the examples against their schemas.
const EXAMPLES_FILE = path.join(__dirname, '../src/entry-points/http/examples.json');
const run = CAPTURE_EXAMPLES ? it : it.skip;
jest.setTimeout(120_000);

describe('The OpenAPI examples', () => {
  run('When every operation is called for real, then its answers are written to examples.json', async () => {
    const skills = await startLocalSkills();
    const mcpServers = await startLocalMcpServers();
    const h = await startHarness('skill_router_openapi_examples_test', {
      WORKERS_ENABLED: 'true',
      HEALTH_CHECK_INTERVAL_MS: '60000',
    });
    try {
      const out: Record<string, unknown> = {};
      out['getHealth 200'] = (await h.call('GET', '/api/health')).body;
      const keyRequest = { name: 'research-agent' };
      const created = await h.call('POST', '/api/auth/key', keyRequest);
      out['createKey request'] = keyRequest;
      out['createKey 201'] = created.body;
      const key = (created.body as { api_key: string }).api_key;

      skills.set('translate', { kind: 'healthy', respond: translate });
      const skill = buildSkill({
        skill_id: 'acme-translator',
        name: 'Acme translator',
        description: 'Translates short texts between English, Spanish, French and German.',
        capabilities: ['translation', 'text'],
        chains: ['solana', 'base'],
        endpoint: skills.url('translate'),
      });
      out['registerSkill request'] = skill;
      out['registerSkill 201'] = (await h.register(key, skill)).body;
      await waitFor(
        'the skill to be verified',
        async () => (await h.call('GET', `/api/discover/skills/${skill.skill_id}`)).body.status === 'active',
        60_000,
      );
      out['registerSkill 200'] = (await h.register(key, skill)).body;
      await waitFor(
        'the update to be verified',
        async () => (await h.call('GET', `/api/discover/skills/${skill.skill_id}`)).body.status === 'active',
        60_000,
      );
      // A translator on another chain, for the route's receipts (README, "Routing receipts").
      const offChain = buildSkill({
        skill_id: 'ledger-translator',
        name: 'Ledger translator',
        description: 'Translates documents between languages for agents on Ethereum.',
        capabilities: ['text', 'languages'],
        chains: ['ethereum'],
        endpoint: skills.url('translate'),
      });
      await h.register(key, offChain);
      await waitFor(
        'the off-chain skill to be verified',
        async () =>
          (await h.call('GET', `/api/discover/skills/${offChain.skill_id}`)).body.status === 'active',
        60_000,
      );
      // An MCP server whose tool is imported as a skill (README, "MCP servers as skills").
      mcpServers.set('acme', {
        tools: [
          {
            name: 'translate_text',
            title: 'Acme MCP translator',
            description: 'Translates a text into French, Spanish or German over MCP.',
            inputSchema: {
              type: 'object',
              properties: {
                text: { type: 'string', description: 'the text to translate', examples: ['Hello'] },
                target: { type: 'string', enum: ['fr', 'es', 'de'] },
              },
              required: ['text', 'target'],
            },
            outputSchema: {
              type: 'object',
              properties: { translation: { type: 'string' } },
              required: ['translation'],
            },
            call: (args) => structured({ translation: `[${String(args.target)}] ${String(args.text)}` }),
          },
        ],
      });
      const mcpServer = {
        server_id: 'acme-mcp',
        url: mcpServers.url('acme'),
        provider: 'Acme',
        capabilities: ['translation'],
        chains: ['solana'],
        pricing: { model: 'per_call', price_usd: 0.001 },
      };
      out['registerMcpServer request'] = mcpServer;
      out['registerMcpServer 201'] = (
        await h.call('POST', '/api/discover/register/mcp', mcpServer, { 'x-api-key': key })
      ).body;
      await waitFor(
        'the MCP tool to be verified',
        async () =>
          (await h.call('GET', '/api/discover/skills/acme-mcp.translate_text')).body.status === 'active',
        60_000,
      );
      out['registerMcpServer 200'] = (
        await h.call('POST', '/api/discover/register/mcp', mcpServer, { 'x-api-key': key })
      ).body;
      // A verified translator whose update awaits verification (its endpoint now answers slowly, so
      // the verification takes VERIFY_TIMEOUT_MS): `unverified_version` in the receipts.
      skills.set('translate-updated', { kind: 'healthy', respond: translate });
      const updated = buildSkill({
        skill_id: 'swift-translator',
        name: 'Swift translator',
        description: 'Translates short texts into French and Spanish.',
        capabilities: ['translation'],
        chains: ['solana'],
        endpoint: skills.url('translate-updated'),
      });
      await h.register(key, updated);
      await waitFor(
        'the skill to be updated to be verified',
        async () =>
          (await h.call('GET', `/api/discover/skills/${updated.skill_id}`)).body.status === 'active',
        60_000,
      );
      skills.set('translate-updated', { kind: 'slow', delayMs: 8_000, respond: translate });
      await h.register(key, {
        ...updated,
        description: 'Translates short texts into French, Spanish and Italian.',
      });
      const route = { task: 'translate this text to french', requirements: { chains: ['solana'] }, limit: 3 };
      out['routeTask request'] = route;
      let routed: { rejected: { skill_id: string }[] } | undefined;
      await waitFor('the update to be named in the receipts', async () => {
        routed = (await h.call('POST', '/api/discover/route', route, { 'x-api-key': key })).body;
        return routed?.rejected.some((r) => r.skill_id === updated.skill_id) ?? false;
      });
      out['routeTask 200'] = routed;
      out['listSkills 200'] = (await h.call('GET', '/api/discover/skills?category=translation&limit=2')).body;
      out['getSkill 200'] = (await h.call('GET', `/api/discover/skills/${skill.skill_id}`)).body;
      out['listSkillVersions 200'] = (
        await h.call('GET', `/api/discover/skills/${skill.skill_id}/versions?limit=2`)
      ).body;
      const report = {
        skill_id: skill.skill_id,
        caller: 'research-agent',
        call_result: 'success',
        latency_ms: 42,
        satisfaction: 5,
      };
      out['reportCall request'] = report;
      out['reportCall 200'] = (
        await h.call('POST', '/api/discover/report', report, { 'x-api-key': key })
      ).body;
      out['getHealth 503'] = await unhealthyReport();
      writeExamples(EXAMPLES_FILE, out);
    } finally {
      await h.close();
      await skills.close();
      await mcpServers.close();
    }
  });
});

/**
 * The 503 health report: a second instance on the same database through a proxy the capture cuts, so
 * the database is unreachable for it alone.
 */
async function unhealthyReport(): Promise<unknown> {
  const pg = await TcpProxy.forUrl(testDatabaseUrl('skill_router_openapi_examples_test'), 5432);
  const h = await startHarness(
    'skill_router_openapi_examples_test',
    { DATABASE_URL: pg.url },
    { resetDb: false },
  );
  try {
    await pg.proxy.cut();
    let body: unknown;
    await waitFor('the health report to say the database is unreachable', async () => {
      const res = await h.call('GET', '/api/health');
      body = res.body;
      return res.status === 503;
    });
    return body;
  } finally {
    await pg.proxy.restore();
    await h.close();
    await pg.proxy.close();
  }
}
