import {
  startLocalMcpServers,
  structured,
  type LocalMcpServers,
  type LocalTool,
} from '../scripts/local-mcp-servers';
import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import { mcpClientPool } from '@repo/service-kit/testing';
import { buildMcpServer, translate, uniqueWord } from './support/factories';
import { startHarness, waitFor, withWorkersStopped, type Harness } from './support/harness';

jest.setTimeout(120_000);

let h: Harness;
let key: string;
let servers: LocalMcpServers;
let skills: LocalSkills;

beforeAll(async () => {
  servers = await startLocalMcpServers();
  skills = await startLocalSkills();
  h = await startHarness('skill_router_mcp_skills_test', {
    WORKERS_ENABLED: 'true',
    HEALTH_CHECK_INTERVAL_MS: '3600000',
    HEALTH_POLL_INTERVAL_MS: '3600000',
    // Conformance calls only when a test makes one due.
    CONFORMANCE_INTERVAL_MS: '3600000',
    CONFORMANCE_POLL_INTERVAL_MS: '100',
    MAX_RESPONSE_BYTES: String(256 * 1024),
  });
  key = await h.createKey('mcp-provider');
});
afterAll(async () => {
  await h?.close();
  await skills?.close();
  await servers?.close();
});

const registerMcp = (body: Record<string, unknown>, apiKey = key) =>
  h.call('POST', '/api/discover/register/mcp', body, { 'x-api-key': apiKey });

const serverBody = (serverId: string, url: string) =>
  buildMcpServer(serverId, url, { capabilities: ['weather'] });

const status = async (id: string) =>
  (await h.sql<{ status: string }>('SELECT status FROM skills WHERE skill_id = $1', id))[0]?.status;

const waitForStatus = (id: string, wanted: string) =>
  waitFor(`${id} to be ${wanted}`, async () => (await status(id)) === wanted, 30_000);

const route = async (task: string) => {
  const res = await h.call('POST', '/api/discover/route', { task, limit: 100 }, { 'x-api-key': key });
  expect(res.status).toBe(200);
  return res.body.matches as { skill_id: string; endpoint: string; call: Record<string, unknown> }[];
};

/** A forecast tool with typed structured output, and a conversion tool that answers text only. */
function weatherTools(word: string, overrides: { forecastDescription?: string } = {}): LocalTool[] {
  return [
    {
      name: 'forecast',
      title: 'City forecast',
      description:
        overrides.forecastDescription ??
        `Tomorrow's ${word} weather forecast for a city: temperature in Celsius`,
      inputSchema: {
        type: 'object',
        properties: { city: { type: 'string', description: 'city name', examples: ['Lisbon'] } },
        required: ['city'],
      },
      outputSchema: {
        type: 'object',
        properties: { city: { type: 'string' }, temperature_c: { type: 'number' } },
        required: ['city', 'temperature_c'],
      },
      call: (args) => structured({ city: String(args.city), temperature_c: 21.5 }),
    },
    {
      name: 'convert_units',
      description: `Converts ${word} temperatures between Celsius and Fahrenheit`,
      inputSchema: {
        type: 'object',
        properties: { celsius: { type: 'number', examples: [20] } },
        required: ['celsius'],
      },
      call: (args) => ({ content: [{ type: 'text', text: String((Number(args.celsius) * 9) / 5 + 32) }] }),
    },
  ];
}

describe('An MCP server registered as skills', () => {
  it('When an MCP server with two tools is registered, then each tool becomes a skill, is verified over MCP and is routed with how to call it', async () => {
    const word = uniqueWord();
    servers.set('weather', { tools: weatherTools(word) });
    const url = servers.url('weather');

    const res = await registerMcp(serverBody('weather', url));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      server_id: 'weather',
      url,
      server: { name: 'weather-server', version: '1.0.0', protocol_version: expect.any(String) },
      skills: [
        { tool: 'forecast', skill_id: 'weather.forecast', status: 'pending_verification' },
        { tool: 'convert_units', skill_id: 'weather.convert_units', status: 'pending_verification' },
      ],
      skipped: [],
      verification_steps: ['endpoint_health_check', 'schema_validation', 'test_call'],
    });

    await waitForStatus('weather.forecast', 'active');
    await waitForStatus('weather.convert_units', 'active');
    expect(servers.calls('weather', 'forecast')).toBeGreaterThanOrEqual(1);
    expect(servers.calls('weather', 'convert_units')).toBeGreaterThanOrEqual(1);

    const detail = await h.call('GET', '/api/discover/skills/weather.forecast');
    expect(detail.body).toMatchObject({
      name: 'City forecast',
      description: `Tomorrow's ${word} weather forecast for a city: temperature in Celsius`,
      capabilities: ['weather', 'forecast'],
      endpoint: url,
      call: { transport: 'mcp-streamable-http', url, tool: 'forecast' },
      input_schema: { required: ['city'] },
      output_schema: { required: ['city', 'temperature_c'] },
    });
    const steps = detail.body.verification.steps as { step: string; status: string; detail: string }[];
    expect(steps.map((s) => s.status)).toEqual(['passed', 'passed', 'passed']);
    expect(steps[0]?.detail).toMatch(/^MCP handshake with weather-server 1\.0\.0/);
    expect(steps[2]?.detail).toMatch(/structuredContent valid against outputSchema/);
    const converter = await h.call('GET', '/api/discover/skills/weather.convert_units');
    expect(converter.body.output_schema).toEqual({});

    const versions = await h.call('GET', '/api/discover/skills/weather.forecast/versions');
    expect(versions.body.versions[0].definition).toMatchObject({ endpoint: url, mcp_tool: 'forecast' });

    // Other servers' forecast tools match "forecast" too; the run's word is in these two alone.
    const matches = (await route(`${word} forecast`)).filter((m) => m.skill_id.startsWith('weather.'));
    expect(matches.map((m) => m.skill_id)).toEqual(['weather.forecast', 'weather.convert_units']);
    expect(matches[0]?.call).toEqual({ transport: 'mcp-streamable-http', url, tool: 'forecast' });
    expect(matches[0]?.endpoint).toBe(url);
  });

  it('When an HTTP skill is routed, then its call is an HTTP POST to its endpoint', async () => {
    const word = uniqueWord();
    skills.set('plain', { kind: 'healthy', respond: translate });
    const res = await h.register(key, {
      skill_id: `plain-${word}`,
      name: 'Plain',
      provider: 'p',
      description: `Translates ${word} text into French`,
      capabilities: [word],
      chains: [],
      pricing: { model: 'per_call', price_usd: 0 },
      endpoint: skills.url('plain'),
      input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      output_schema: { type: 'object' },
    });
    expect(res.status).toBe(201);
    await waitForStatus(`plain-${word}`, 'active');
    const [match] = await route(word);
    expect(match?.call).toEqual({ transport: 'http', method: 'POST', url: skills.url('plain') });
  });

  it('When the server is registered again, then unchanged tools stay routed and a changed tool leaves routing until its new revision verifies', async () => {
    const word = uniqueWord();
    servers.set('forecasts', { tools: weatherTools(word) });
    expect((await registerMcp(serverBody('forecasts', servers.url('forecasts')))).status).toBe(201);
    await waitForStatus('forecasts.forecast', 'active');
    await waitForStatus('forecasts.convert_units', 'active');

    const again = await registerMcp(serverBody('forecasts', servers.url('forecasts')));
    expect(again.status).toBe(200);
    expect(again.body.skills.map((s: { status: string }) => s.status)).toEqual(['unchanged', 'unchanged']);
    expect(await status('forecasts.forecast')).toBe('active');

    const changed = `Tomorrow's ${word} forecast for a city, now with humidity`;
    await withWorkersStopped(h, async () => {
      servers.set('forecasts', { tools: weatherTools(word, { forecastDescription: changed }) });
      const res = await registerMcp(serverBody('forecasts', servers.url('forecasts')));
      expect(res.status).toBe(200);
      expect(res.body.skills).toEqual([
        { tool: 'forecast', skill_id: 'forecasts.forecast', status: 'pending_verification' },
        { tool: 'convert_units', skill_id: 'forecasts.convert_units', status: 'unchanged' },
      ]);
      expect(await status('forecasts.forecast')).toBe('pending_verification');
      await waitFor('the routing index to drop the changed tool', async () => {
        const ids = (await route(word)).map((m) => m.skill_id);
        return !ids.includes('forecasts.forecast') && ids.includes('forecasts.convert_units');
      });
    });
    await waitForStatus('forecasts.forecast', 'active');
    const detail = await h.call('GET', '/api/discover/skills/forecasts.forecast');
    expect(detail.body).toMatchObject({ revision: 2, description: changed });
  });

  it('When the periodic re-listing finds a changed tool definition, then a new revision is registered, and one that fails verification stays out of routing', async () => {
    const word = uniqueWord();
    servers.set('relisted', { tools: weatherTools(word) });
    expect((await registerMcp(serverBody('relisted', servers.url('relisted')))).status).toBe(201);
    await waitForStatus('relisted.convert_units', 'active');
    await waitFor('the route to list the tool', async () =>
      (await route(word)).some((m) => m.skill_id === 'relisted.convert_units'),
    );

    // The tool now declares structured output it does not return: the new definition fails its test call.
    const [forecast, convert] = weatherTools(word);
    servers.set('relisted', {
      tools: [
        forecast!,
        {
          ...convert!,
          outputSchema: {
            type: 'object',
            properties: { fahrenheit: { type: 'number' } },
            required: ['fahrenheit'],
          },
        },
      ],
    });
    await h.sql(
      `UPDATE skill_stats SET next_conformance_at = now() WHERE skill_id = 'relisted.convert_units'`,
    );
    await waitForStatus('relisted.convert_units', 'verification_failed');
    expect((await route(word)).map((m) => m.skill_id)).not.toContain('relisted.convert_units');

    const versions = await h.call('GET', '/api/discover/skills/relisted.convert_units/versions');
    const [latest, first] = versions.body.versions as {
      revision: number;
      definition: { output_schema: unknown };
      verification: { status: string; reason: string };
    }[];
    expect(latest).toMatchObject({
      revision: 2,
      definition: { output_schema: { required: ['fahrenheit'] } },
      verification: { status: 'failed' },
    });
    expect(latest?.verification.reason).toBe(
      'test_call: tools/call: MCP error -32600: Tool convert_units has an output schema but did not return structured content',
    );
    expect(first).toMatchObject({ revision: 1, verification: { status: 'passed' } });
    // The unchanged tool of the same server is untouched.
    expect(await status('relisted.forecast')).toBe('active');
  });

  it("When an agent calls register_mcp_server on the service's own MCP endpoint, then the tools are imported as over HTTP", async () => {
    const pool = mcpClientPool(() => h.baseUrl);
    try {
      servers.set('via-mcp', { tools: weatherTools(uniqueWord()) });
      const agent = await pool.connect({ 'x-api-key': key });
      const result = await agent.callTool({
        name: 'register_mcp_server',
        arguments: serverBody('via-mcp', servers.url('via-mcp')),
      });
      expect(result.isError).toBeFalsy();
      expect(
        (result.structuredContent as { skills: { skill_id: string }[] }).skills.map((s) => s.skill_id),
      ).toEqual(['via-mcp.forecast', 'via-mcp.convert_units']);
      await waitForStatus('via-mcp.forecast', 'active');
    } finally {
      await pool.closeAll();
    }
  });

  it('When another key registered a tool skill id, then the import is 403 and writes nothing', async () => {
    servers.set('owned', { tools: weatherTools(uniqueWord()) });
    expect((await registerMcp(serverBody('owned', servers.url('owned')))).status).toBe(201);
    const other = await h.createKey('someone-else');
    const res = await registerMcp(serverBody('owned', servers.url('owned')), other);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
  });

  it('When the body or the URL is unusable, then the answer is a 400 naming the field', async () => {
    const bad = await registerMcp({ ...serverBody('x', 'ftp://example.com/mcp'), server_id: 'has.dot' });
    expect(bad.status).toBe(400);
    expect(bad.body.details.issues.map((i: { path: string }) => i.path).sort()).toEqual([
      'body.server_id',
      'body.url',
    ]);
    const refused = await registerMcp(serverBody('meta', 'http://169.254.169.254/mcp'));
    expect(refused.status).toBe(400);
    expect(refused.body.details.issues[0]).toMatchObject({ path: 'body.url' });
    expect(refused.body.details.issues[0].message).toMatch(/^is not allowed/);

    skills.set('not-mcp', { kind: 'healthy', respond: translate });
    const notMcp = await registerMcp(serverBody('notmcp', skills.url('not-mcp')));
    expect(notMcp.status).toBe(400);
    expect(notMcp.body.details.issues[0].message).toMatch(/^is not a usable MCP server: MCP handshake/);
  });
});

describe('A hostile MCP server', () => {
  const health = async () => (await h.call('GET', '/api/health')).status;
  const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
    const t0 = Date.now();
    const value = await fn();
    return [value, Date.now() - t0];
  };

  it('When it lists more tools than the limit, or a list larger than the response cap, then registration is a clear 400', async () => {
    const tool = (i: number, description = 'A tool that does nothing much'): LocalTool => ({
      name: `tool_${i}`,
      description,
      inputSchema: { type: 'object' },
      call: () => ({ content: [] }),
    });
    servers.set('many', { tools: Array.from({ length: 60 }, (_, i) => tool(i)) });
    const many = await registerMcp(serverBody('many', servers.url('many')));
    expect(many.status).toBe(400);
    expect(many.body.details.issues[0].message).toBe(
      'is not a usable MCP server: tools/list lists more than 50 tools',
    );

    // 10,000 tools of 100-character descriptions: well over MAX_RESPONSE_BYTES (256 KiB here).
    servers.set('huge', { tools: Array.from({ length: 10_000 }, (_, i) => tool(i, 'x'.repeat(100))) });
    const huge = await registerMcp(serverBody('huge', servers.url('huge')));
    expect(huge.status).toBe(400);
    expect(huge.body.details.issues[0].message).toMatch(/tools\/list: response larger than 262144 bytes/);
    expect(await health()).toBe(200);
    expect(
      await h.sql(`SELECT 1 FROM skills WHERE skill_id LIKE 'many.%' OR skill_id LIKE 'huge.%'`),
    ).toEqual([]);
  });

  it('When it answers slowly, then registration gives up at the timeout with a 400, and the service keeps answering', async () => {
    servers.set('slow', { tools: weatherTools(uniqueWord()), delayMs: 4_000 });
    const [res, ms] = await timed(() => registerMcp(serverBody('slow', servers.url('slow'))));
    expect(res.status).toBe(400);
    expect(res.body.details.issues[0].message).toBe(
      `is not a usable MCP server: MCP handshake: no answer within ${h.config.VERIFY_TIMEOUT_MS} ms`,
    );
    expect(ms).toBeLessThan(h.config.VERIFY_TIMEOUT_MS + 2_000);
  });

  it('When its tools have hostile schemas, slow calls or oversized results, then each is skipped or fails verification with the reason, and the service stays up', async () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { x: deep } };
    const fine = (args: Record<string, unknown>) => structured({ echo: JSON.stringify(args).slice(0, 20) });
    servers.set('hostile', {
      tools: [
        {
          name: 'deep',
          description: 'A tool whose schema nests too deep',
          inputSchema: deep,
          call: () => ({ content: [] }),
        },
        {
          name: 'terse',
          description: 'short',
          inputSchema: { type: 'object' },
          call: () => ({ content: [] }),
        },
        {
          name: 'bad name!',
          description: 'A tool whose name makes no skill id',
          inputSchema: { type: 'object' },
          call: () => ({ content: [] }),
        },
        {
          name: 'recursive',
          description: 'A tool whose input schema refers to itself without end',
          inputSchema: {
            type: 'object',
            $defs: {
              node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } }, required: ['next'] },
            },
            properties: { head: { $ref: '#/$defs/node' } },
            required: ['head'],
          },
          call: fine,
        },
        {
          name: 'redos',
          description: 'A tool whose output pattern backtracks badly in other engines',
          inputSchema: { type: 'object' },
          outputSchema: { type: 'object', properties: { echo: { type: 'string', pattern: '^(a+)+$' } } },
          call: () => structured({ echo: `${'a'.repeat(50_000)}!` }),
        },
        {
          name: 'sleepy',
          description: 'A tool whose calls never answer in time',
          inputSchema: { type: 'object' },
          call: () => new Promise((resolve) => setTimeout(() => resolve({ content: [] }), 5_000)),
        },
        {
          name: 'flood',
          description: 'A tool whose result is larger than the response cap',
          inputSchema: { type: 'object' },
          call: () => ({ content: [{ type: 'text', text: 'z'.repeat(1024 * 1024) }] }),
        },
        {
          name: 'failing',
          description: 'A tool whose every call is an error result',
          inputSchema: { type: 'object' },
          call: () => ({ content: [{ type: 'text', text: 'upstream exploded' }], isError: true }),
        },
      ],
    });
    const res = await registerMcp(serverBody('hostile', servers.url('hostile')));
    expect(res.status).toBe(201);
    expect(res.body.skipped).toEqual([
      { tool: 'deep', reason: 'inputSchema nests deeper than 32 levels' },
      { tool: 'terse', reason: 'description must be at least 10 characters' },
      { tool: 'bad name!', reason: expect.stringMatching(/^the skill id "hostile\.bad name!" is not/) },
    ]);
    expect(res.body.skills.map((s: { skill_id: string }) => s.skill_id)).toEqual([
      'hostile.recursive',
      'hostile.redos',
      'hostile.sleepy',
      'hostile.flood',
      'hostile.failing',
    ]);

    const reasonOf = async (id: string) => {
      await waitFor(
        `${id} to be verified`,
        async () => (await status(id)) !== 'pending_verification',
        60_000,
      );
      return (await h.call('GET', `/api/discover/skills/${id}`)).body as {
        status: string;
        verification: { reason: string | null };
      };
    };
    const redos = await reasonOf('hostile.redos');
    expect(redos.status).toBe('verification_failed');
    expect(redos.verification.reason).toMatch(/^test_call: structuredContent /);
    const sleepy = await reasonOf('hostile.sleepy');
    expect(sleepy.verification.reason).toBe(
      `test_call: tools/call: no answer within ${h.config.VERIFY_TIMEOUT_MS} ms`,
    );
    const flood = await reasonOf('hostile.flood');
    expect(flood.verification.reason).toBe('test_call: tools/call: response larger than 262144 bytes');
    const failing = await reasonOf('hostile.failing');
    expect(failing.verification.reason).toBe(
      'test_call: tools/call of failing answered isError: upstream exploded',
    );
    // Endless recursion either yields a finite input (json-schema-faker stops) or fails in the sandbox.
    const recursive = await reasonOf('hostile.recursive');
    expect(['active', 'verification_failed']).toContain(recursive.status);
    expect(await health()).toBe(200);
  });
});
