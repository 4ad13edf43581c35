import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { toJsonSchema } from '@repo/schemas';
import { mcpClientPool, metricValue, scrape, toolErrorOf } from '@repo/service-kit/testing';
import {
  ListSkillsArgs,
  ListVersionsArgs,
  RegisterSkillRequest,
  RegisterSkillResponse,
  ReportRequest,
  RouteRequest,
  RouteResponse,
  SkillDetail,
  SkillList,
  SkillVersionList,
} from '../src/schemas';
import { buildSkill, uniqueWord } from './support/factories';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
let key: string;
let otherKey: string;
let anonymous: Client;
let agent: Client;
/** MCP clients as an agent framework runs them (official SDK, Streamable HTTP), closed after the suite. */
const clients = mcpClientPool(() => h.baseUrl);
const client = (headers?: Record<string, string>) => clients.connect(headers);

beforeAll(async () => {
  h = await startHarness('skill_router_mcp_test', {
    REPORT_LIMIT_PER_KEY_SKILL: '3',
    REPORT_LIMIT_WINDOW_SECONDS: '600',
  });
  key = await h.createKey('mcp-agent');
  otherKey = await h.createKey('mcp-other');
  anonymous = await client();
  agent = await client({ 'x-api-key': key });
});
afterAll(async () => {
  await clients.closeAll();
  await h.close();
});

async function activeSkill(overrides: Parameters<typeof buildSkill>[0] = {}): Promise<string> {
  const skill = buildSkill(overrides);
  expect((await h.register(key, skill)).status).toBe(201);
  await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = $1`, skill.skill_id);
  await h.reloadRouting();
  return skill.skill_id;
}

describe('skill-router MCP endpoint', () => {
  it('When an agent lists the tools, then it gets the seven discover tools with the HTTP API schemas', async () => {
    const { tools } = await anonymous.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'get_skill',
      'list_skill_versions',
      'list_skills',
      'register_mcp_server',
      'register_skill',
      'report_call',
      'route_task',
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('route_task')?.inputSchema).toEqual(toJsonSchema(RouteRequest, 'input'));
    expect(byName.get('route_task')?.outputSchema).toEqual(toJsonSchema(RouteResponse, 'output'));
    expect(byName.get('register_skill')?.inputSchema).toEqual(toJsonSchema(RegisterSkillRequest, 'input'));
    expect(byName.get('register_skill')?.outputSchema).toEqual(toJsonSchema(RegisterSkillResponse, 'output'));
    expect(byName.get('report_call')?.inputSchema).toEqual(toJsonSchema(ReportRequest, 'input'));
    expect(byName.get('list_skills')?.inputSchema).toEqual(toJsonSchema(ListSkillsArgs, 'input'));
    expect(byName.get('list_skills')?.outputSchema).toEqual(toJsonSchema(SkillList, 'output'));
    expect(byName.get('get_skill')?.outputSchema).toEqual(toJsonSchema(SkillDetail, 'output'));
    expect(byName.get('list_skill_versions')?.inputSchema).toEqual(toJsonSchema(ListVersionsArgs, 'input'));
    expect(byName.get('list_skill_versions')?.outputSchema).toEqual(toJsonSchema(SkillVersionList, 'output'));
    for (const tool of tools) {
      expect(tool.description).toMatch(/Free/);
      expect(tool.annotations?.readOnlyHint).toBe(
        ['get_skill', 'list_skills', 'list_skill_versions', 'route_task'].includes(tool.name),
      );
    }
    expect(anonymous.getInstructions()).toMatch(/sk_router_ key/);
  });

  it('When list_skills and get_skill are called without a key, then they answer what the HTTP API answers', async () => {
    const word = uniqueWord();
    const id = await activeSkill({ description: `Finds ${word} records quickly and reliably.` });
    const listed = await anonymous.callTool({ name: 'list_skills', arguments: { search: word, limit: 5 } });
    const http = await h.call('GET', `/api/discover/skills?search=${word}&limit=5`);
    expect(listed.isError).toBeUndefined();
    expect(listed.structuredContent).toEqual(http.body);
    expect((listed.structuredContent as { total: number }).total).toBe(1);

    const detail = await anonymous.callTool({ name: 'get_skill', arguments: { id } });
    const httpDetail = await h.call('GET', `/api/discover/skills/${id}`);
    const { metrics_at: _mcpAt, ...mcpRest } = detail.structuredContent as Record<string, unknown>;
    const { metrics_at: _httpAt, ...httpRest } = httpDetail.body as Record<string, unknown>;
    expect(mcpRest).toEqual(httpRest);
    expect(JSON.parse((detail.content as { text: string }[])[0]!.text)).toEqual(detail.structuredContent);
  });

  it('When list_skill_versions is called without a key, then it answers what the HTTP API answers, and refuses bad arguments and unknown skills', async () => {
    const id = await activeSkill({ description: `Finds ${uniqueWord()} archives quickly.` });
    const listed = await anonymous.callTool({ name: 'list_skill_versions', arguments: { id, limit: 2 } });
    const http = await h.call('GET', `/api/discover/skills/${id}/versions?limit=2`);
    expect(listed.isError).toBeUndefined();
    expect(listed.structuredContent).toEqual(http.body);
    expect((listed.structuredContent as { total: number }).total).toBe(1);
    const unknown = await anonymous.callTool({
      name: 'list_skill_versions',
      arguments: { id: 'no-such-skill' },
    });
    expect(toolErrorOf(unknown)).toMatchObject({ code: 'not_found' });
    const bad = await anonymous.callTool({ name: 'list_skill_versions', arguments: { id, limit: 21 } });
    expect(toolErrorOf(bad)).toMatchObject({
      code: 'invalid_request',
      details: { issues: [expect.objectContaining({ path: 'arguments.limit' })] },
    });
  });

  it('When get_skill names no skill, then the tool error carries the not_found envelope', async () => {
    const result = await anonymous.callTool({ name: 'get_skill', arguments: { id: 'no-such-skill' } });
    expect(toolErrorOf(result)).toMatchObject({ code: 'not_found', error: 'Skill no-such-skill not found' });
  });

  it('When route_task is called without a key or with a wrong one, then it is refused as unauthorized and nothing is routed', async () => {
    const before = await scrape(h.metricsUrl);
    const noKey = await anonymous.callTool({ name: 'route_task', arguments: { task: 'translate text' } });
    expect(toolErrorOf(noKey)).toMatchObject({
      code: 'unauthorized',
      error: 'Missing API key: send it in the x-api-key header or as Authorization: Bearer <key>',
    });
    const wrong = await client({ 'x-api-key': 'sk_router_notarealkey' });
    const bad = await wrong.callTool({ name: 'route_task', arguments: { task: 'translate text' } });
    expect(toolErrorOf(bad)).toMatchObject({ code: 'unauthorized', error: 'Invalid API key' });
    const after = await scrape(h.metricsUrl);
    const calls = (text: string) =>
      metricValue(text, 'mcp_tool_calls_total', { tool: 'route_task', code: 'unauthorized' }) ?? 0;
    expect(calls(after) - calls(before)).toBe(2);
  });

  it('When the MCP connection sends the key as Authorization: Bearer, then route_task answers as with x-api-key', async () => {
    const word = uniqueWord();
    const id = await activeSkill({
      capabilities: [word, 'text'],
      description: `Handles ${word} tasks well.`,
    });
    const bearer = await client({ authorization: `Bearer ${key}` });
    const body = { task: `${word} this text`, limit: 3 };
    const viaBearer = await bearer.callTool({ name: 'route_task', arguments: body });
    const viaHeader = await agent.callTool({ name: 'route_task', arguments: body });
    expect(viaBearer.isError).toBeUndefined();
    const { routed_at: _a, ...bearerAnswer } = viaBearer.structuredContent as Record<string, unknown>;
    const { routed_at: _b, ...headerAnswer } = viaHeader.structuredContent as Record<string, unknown>;
    expect(bearerAnswer).toEqual(headerAnswer);
    expect((bearerAnswer.matches as { skill_id: string }[])[0]?.skill_id).toBe(id);
    const wrong = await client({ authorization: 'Bearer sk_router_notarealkey' });
    expect(toolErrorOf(await wrong.callTool({ name: 'route_task', arguments: body }))).toMatchObject({
      code: 'unauthorized',
      error: 'Invalid API key',
    });
  });

  it('When route_task is called with a key, then it ranks as POST /api/discover/route does and marks the key as routed', async () => {
    const word = uniqueWord();
    const id = await activeSkill({
      capabilities: [word, 'text'],
      description: `Handles ${word} tasks well.`,
    });
    const body = { task: `${word} this text`, requirements: { chains: ['solana'] }, limit: 3 };
    const result = await agent.callTool({ name: 'route_task', arguments: body });
    const http = await h.call('POST', '/api/discover/route', body, { 'x-api-key': key });
    expect(http.status).toBe(200);
    const { routed_at: _a, ...mcpAnswer } = result.structuredContent as Record<string, unknown>;
    const { routed_at: _b, ...httpAnswer } = http.body as Record<string, unknown>;
    expect(mcpAnswer).toEqual(httpAnswer);
    expect((mcpAnswer.matches as { skill_id: string }[])[0]?.skill_id).toBe(id);
    const [row] = await h.sql<{ routed: boolean }>(
      "SELECT first_routed_at IS NOT NULL AS routed FROM api_keys WHERE name = 'mcp-agent'",
    );
    expect(row?.routed).toBe(true);
  });

  it('When register_skill is called, then the skill is stored pending verification under the key, and another key may not update it', async () => {
    const skill = buildSkill();
    const result = await agent.callTool({ name: 'register_skill', arguments: skill });
    expect(result.structuredContent).toEqual({
      ok: true,
      skill_id: skill.skill_id,
      status: 'pending_verification',
      verification_steps: ['endpoint_health_check', 'schema_validation', 'test_call'],
    });
    const [row] = await h.sql<{ status: string; key: string }>(
      'SELECT s.status, k.name AS key FROM skills s JOIN api_keys k ON k.id = s.owner_key_id WHERE s.skill_id = $1',
      skill.skill_id,
    );
    expect(row).toEqual({ status: 'pending_verification', key: 'mcp-agent' });

    const other = await client({ 'x-api-key': otherKey });
    const stolen = await other.callTool({
      name: 'register_skill',
      arguments: { ...skill, name: 'Hijacked' },
    });
    expect(toolErrorOf(stolen).code).toBe('forbidden');
    const [still] = await h.sql<{ name: string }>(
      'SELECT name FROM skills WHERE skill_id = $1',
      skill.skill_id,
    );
    expect(still?.name).toBe(skill.name);
  });

  it('When register_skill gets bad arguments, then each is an invalid_request tool error naming the argument, and nothing is stored', async () => {
    const missing = await agent.callTool({
      name: 'register_skill',
      arguments: { ...buildSkill(), description: undefined },
    });
    const envelope = toolErrorOf(missing);
    expect(envelope.code).toBe('invalid_request');
    expect(envelope.details).toEqual({
      issues: [{ path: 'arguments.description', code: 'required', message: 'is required' }],
    });

    const nul = buildSkill({ name: 'Bad\u0000name' });
    expect(toolErrorOf(await agent.callTool({ name: 'register_skill', arguments: nul })).details).toEqual({
      issues: [
        {
          path: 'arguments.name',
          code: 'invalid_characters',
          message: 'must not contain the NUL character (U+0000)',
        },
      ],
    });

    const metadata = buildSkill({ endpoint: 'http://169.254.169.254/latest/meta-data' });
    const refused = toolErrorOf(await agent.callTool({ name: 'register_skill', arguments: metadata }));
    expect(refused).toMatchObject({
      code: 'invalid_request',
      error: expect.stringMatching(/^`endpoint` is not allowed: /),
      details: {
        issues: [
          {
            path: 'arguments.endpoint',
            code: 'custom',
            message: expect.stringMatching(/^is not allowed: \S/),
          },
        ],
      },
    });

    const wrongType = await agent.callTool({ name: 'register_skill', arguments: { skill_id: 42 } });
    expect(toolErrorOf(wrongType).code).toBe('invalid_request');
    const rows = await h.sql('SELECT 1 FROM skills WHERE skill_id = ANY($1)', [
      nul.skill_id,
      metadata.skill_id,
    ]);
    expect(rows).toHaveLength(0);
  });

  it('When report_call is called, then the report is stored, and the per key and skill limit counts HTTP and MCP reports together', async () => {
    const id = await activeSkill();
    const report = { skill_id: id, caller: 'mcp-agent', call_result: 'success', latency_ms: 120 };
    expect((await h.call('POST', '/api/discover/report', report, { 'x-api-key': key })).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const ok = await agent.callTool({ name: 'report_call', arguments: report });
      // A key created today: its reports are kept but weigh nothing (README, "Reputation").
      expect(ok.structuredContent).toEqual({ ok: true, counted: false, weight: 0 });
    }
    const limited = toolErrorOf(await agent.callTool({ name: 'report_call', arguments: report }));
    expect(limited).toMatchObject({
      code: 'rate_limited',
      details: { retry_after_seconds: expect.any(Number) },
    });
    const [count] = await h.sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM call_reports WHERE skill_id = $1',
      id,
    );
    expect(count?.n).toBe(3);

    const unknown = await agent.callTool({
      name: 'report_call',
      arguments: { ...report, skill_id: 'no-such-skill' },
    });
    expect(toolErrorOf(unknown).code).toBe('not_found');
  });

  it('When an agent calls a tool that does not exist, then the protocol answers invalid params', async () => {
    await expect(anonymous.callTool({ name: 'delete_everything', arguments: {} })).rejects.toThrow(McpError);
    await expect(anonymous.callTool({ name: 'delete_everything', arguments: {} })).rejects.toMatchObject({
      code: -32602,
    });
  });

  it('When /mcp is asked with GET or DELETE, or sent something that is not JSON-RPC, then it answers a 4xx, never a 500', async () => {
    const get = await h.call('GET', '/mcp');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(get.body).toMatchObject({ code: 'method_not_allowed', requestId: expect.any(String) });
    const accept = { accept: 'application/json, text/event-stream' };
    expect((await h.call('POST', '/mcp', '{"jsonrpc":', accept)).body).toMatchObject({
      code: 'invalid_json',
    });
    const notRpc = await h.call('POST', '/mcp', { hello: 'world' }, accept);
    expect(notRpc.status).toBe(400);
    const noAccept = await h.call('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(noAccept.status).toBe(406);
  });

  it('When an agent reads /llms.txt, then it names the service, the key, and links the OpenAPI document, the reference and /mcp', async () => {
    const res = await fetch(`${h.baseUrl}/llms.txt`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/markdown/);
    const text = await res.text();
    expect(text.startsWith('# skill-router\n\n> ')).toBe(true);
    for (const link of ['(/openapi.json)', '(/docs)', '(/mcp)']) expect(text).toContain(link);
    expect(text).toContain('POST /api/auth/key');
    expect(text).toContain('over HTTP and over MCP (`Authorization: Bearer <key>` works too)');
  });
});
