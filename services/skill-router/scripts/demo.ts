// skill-router demo: against a running service, a provider agent gets a key, starts a few small skill
// endpoints on this machine, registers them, waits for the verification worker (health check, schema
// validation, test call), routes three tasks, calls the best match for real and reports the outcome.
// Then it starts a small MCP server, registers it (each tool becomes a skill, verified over MCP),
// routes a task to one of its tools and calls it with an MCP client, as the route answer says.
// The service must allow the local endpoints: SSRF_ALLOWLIST=127.0.0.1. Run alone with
// `pnpm --filter @repo/skill-router exec tsx --conditions=@repo/source scripts/demo.ts`
// (SKILL_ROUTER_URL, default http://127.0.0.1:3003).
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { SkillCall } from '../src/schemas';
import { CURRENCY_TOOLS, DEMO_SKILLS, type DemoSkill } from './demo-skills';
import { startLocalMcpServers } from './local-mcp-servers';
import { startLocalSkills } from './local-skills';

/** Options of {@link runSkillRouterDemo}. */
export interface SkillRouterDemoOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3003`. */
  baseUrl: string;
  /** Where to print each line of the demo. */
  log: (line: string) => void;
  /** How long to wait for verification, in ms (default 60 000). */
  verifyTimeoutMs?: number;
}

/** What the demo registered and routed. */
export interface SkillRouterDemoResult {
  keyPrefix: string;
  /** Final status per registered skill id. */
  skills: Record<string, string>;
  /** Per routed task: the ranked skill ids and the best match's score. */
  routes: { task: string; ranked: string[]; topScore: number | null }[];
  /** The MCP part: the skills its server's tools became, and the one a task was routed to. */
  mcp: { skills: Record<string, string>; routedTo: string | null };
}

interface RouteAnswer {
  matches: {
    skill_id: string;
    name: string;
    match_score: number;
    match_reasons: string[];
    endpoint: string;
    call: SkillCall;
    pricing: { per_call_usd: number };
  }[];
  total_matches: number;
}

/**
 * Runs the demo against a running skill-router whose SSRF_ALLOWLIST permits 127.0.0.1.
 * @returns the key prefix, the skills' final statuses and the routing results
 * @throws Error when the service is unreachable, a step answers an error, or verification does not finish in time
 */
export async function runSkillRouterDemo(options: SkillRouterDemoOptions): Promise<SkillRouterDemoResult> {
  const base = options.baseUrl.replace(/\/+$/, '');
  const log = options.log;
  let apiKey = '';
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(base + path, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(apiKey ? { 'x-api-key': apiKey } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} -> HTTP ${res.status}: ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  };

  try {
    await fetch(`${base}/livez`);
  } catch {
    throw new Error(`skill-router is not reachable at ${base}: start the stack first`);
  }
  const health = await call<{ status: string; version: string }>('GET', '/api/health');
  log(`GET /api/health -> ${health.status} (version ${health.version})`);

  const key = await call<{ api_key: string; prefix: string; message: string }>('POST', '/api/auth/key', {
    name: 'demo-provider',
  });
  apiKey = key.api_key;
  log(`POST /api/auth/key -> key ${key.prefix}… (${key.message})`);

  const endpoints = await startLocalSkills();
  try {
    const run = randomBytes(3).toString('hex');
    const skillId = (skill: DemoSkill) => `demo-${skill.stem}-${run}`;
    for (const skill of DEMO_SKILLS) endpoints.set(skill.stem, skill.behaviour);
    const skills = DEMO_SKILLS.map((skill) => ({
      skill_id: skillId(skill),
      ...skill.registration,
      endpoint: endpoints.url(skill.stem),
    }));
    for (const s of skills) {
      const r = await call<{ status: string; verification_steps: string[] }>(
        'POST',
        '/api/discover/register',
        s,
      );
      log(`POST /api/discover/register ${s.skill_id} -> ${r.status} (${r.verification_steps.join(', ')})`);
    }

    log('waiting for the verification worker…');
    const statuses = await waitForVerification(
      call,
      log,
      skills.map((sk) => sk.skill_id),
      options.verifyTimeoutMs ?? 60_000,
    );

    const tasks = [
      {
        task: 'Translate this product description into Spanish',
        requirements: { chains: ['solana'], max_price_usd: 0.01, max_latency_ms: 500 },
      },
      { task: 'Summarize a long market report', requirements: {} },
      { task: 'Get a quote to swap 2 SOL to USDC', requirements: { chains: ['solana'] } },
    ];
    const inputs = new Map(DEMO_SKILLS.map((skill) => [skillId(skill), skill.input]));
    const routes: SkillRouterDemoResult['routes'] = [];
    for (const t of tasks) {
      const r = await call<RouteAnswer>('POST', '/api/discover/route', {
        ...t,
        context: { caller_agent: 'demo-agent', urgency: 'normal' },
      });
      const ours = r.matches.filter((m) => m.skill_id.endsWith(run));
      log('');
      log(
        `POST /api/discover/route "${t.task}" ${JSON.stringify(t.requirements)} -> ${r.total_matches} match(es)`,
      );
      for (const m of ours) {
        log(`  ${m.match_score.toFixed(4)}  ${m.skill_id}  $${m.pricing.per_call_usd}/call`);
        for (const reason of m.match_reasons) log(`           ${reason}`);
      }
      routes.push({
        task: t.task,
        ranked: ours.map((m) => m.skill_id),
        topScore: ours[0]?.match_score ?? null,
      });
      const best = ours[0];
      if (!best) continue;
      const t0 = performance.now();
      const res = await fetch(best.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(inputs.get(best.skill_id) ?? {}),
      });
      const output = await res.text();
      const latency = Math.round(performance.now() - t0);
      log(`  called ${best.skill_id} -> HTTP ${res.status} in ${latency} ms: ${output}`);
      await call('POST', '/api/discover/report', {
        skill_id: best.skill_id,
        caller: 'demo-agent',
        call_result: res.ok ? 'success' : 'failure',
        latency_ms: latency,
        satisfaction: res.ok ? 5 : 1,
        notes: 'demo call',
      });
      const after = await call<{
        metrics: {
          success_rate_24h: number;
          avg_latency_ms: number;
          calls_30d: number;
          rating: number | null;
        };
      }>('GET', `/api/discover/skills/${best.skill_id}`);
      log(`  POST /api/discover/report -> ok; metrics now ${JSON.stringify(after.metrics)}`);
    }

    const list = await call<{ total: number; skills: { skill_id: string }[] }>(
      'GET',
      '/api/discover/skills?category=translation&sort=popularity&limit=5',
    );
    log('');
    log(
      `GET /api/discover/skills?category=translation -> ${list.total} active skill(s): ${list.skills.map((s) => s.skill_id).join(', ')}`,
    );
    const mcp = await mcpServerPart(call, log, run, options.verifyTimeoutMs ?? 60_000);
    return { keyPrefix: key.prefix, skills: statuses, routes, mcp };
  } finally {
    await endpoints.close();
  }
}

/**
 * Waits until each skill has left `pending_verification`, printing its status and verification steps.
 * @returns the status of each skill id
 * @throws Error when a verification does not finish within `timeoutMs` milliseconds
 */
async function waitForVerification(
  call: <T>(method: string, path: string, body?: unknown) => Promise<T>,
  log: (line: string) => void,
  skillIds: string[],
  timeoutMs: number,
): Promise<Record<string, string>> {
  const deadline = Date.now() + timeoutMs;
  const statuses: Record<string, string> = {};
  for (const id of skillIds) {
    for (;;) {
      const d = await call<{
        status: string;
        verification: { steps: { step: string; status: string; detail: string }[]; reason: string | null };
      }>('GET', `/api/discover/skills/${id}`);
      if (d.status !== 'pending_verification') {
        statuses[id] = d.status;
        log(`  ${id}: ${d.status}${d.verification.reason ? ` — ${d.verification.reason}` : ''}`);
        for (const step of d.verification.steps) log(`    ${step.step}: ${step.status} (${step.detail})`);
        break;
      }
      if (Date.now() > deadline) throw new Error(`verification of ${id} did not finish in time`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return statuses;
}

/**
 * The MCP part of the demo: a provider whose skills are tools of an MCP server registers the server;
 * each tool becomes a skill `<server_id>.<tool>`, verified over MCP (handshake, tools/list, a test
 * tools/call); a task is routed to one of them, and the agent calls it with an MCP client at the URL
 * and tool the route answer names.
 */
async function mcpServerPart(
  call: <T>(method: string, path: string, body?: unknown) => Promise<T>,
  log: (line: string) => void,
  run: string,
  verifyTimeoutMs: number,
): Promise<SkillRouterDemoResult['mcp']> {
  const servers = await startLocalMcpServers();
  try {
    servers.set('currency', { tools: CURRENCY_TOOLS });
    const serverId = `demo-fx-${run}`;
    log('');
    log(`An MCP server (Streamable HTTP) with two tools runs at ${servers.url('currency')}`);
    const registered = await call<{
      server: { name: string; version: string };
      skills: { tool: string; skill_id: string; status: string }[];
      skipped: { tool: string; reason: string }[];
    }>('POST', '/api/discover/register/mcp', {
      server_id: serverId,
      url: servers.url('currency'),
      provider: 'FX Desk',
      capabilities: ['currency', 'finance'],
      chains: ['solana'],
      pricing: { model: 'per_call', price_usd: 0.001 },
    });
    log(
      `POST /api/discover/register/mcp ${serverId} -> ${registered.server.name} ${registered.server.version} lists ${registered.skills.length} tool(s), each now a skill:`,
    );
    for (const s of registered.skills) log(`  ${s.skill_id} (tool ${s.tool}): ${s.status}`);

    log('waiting for the verification worker (MCP handshake, tools/list, a test tools/call)…');
    const statuses = await waitForVerification(
      call,
      log,
      registered.skills.map((sk) => sk.skill_id),
      verifyTimeoutMs,
    );

    const task = { task: 'Convert 25 US dollars to euros', requirements: { chains: ['solana'] } };
    const r = await call<RouteAnswer>('POST', '/api/discover/route', task);
    const ours = r.matches.filter((m) => m.skill_id.startsWith(`${serverId}.`));
    log('');
    log(`POST /api/discover/route "${task.task}" -> ${r.total_matches} match(es)`);
    for (const m of ours)
      log(`  ${m.match_score.toFixed(4)}  ${m.skill_id}  call: ${JSON.stringify(m.call)}`);
    const best = ours[0];
    if (!best || best.call.transport !== 'mcp-streamable-http') return { skills: statuses, routedTo: null };

    // The route answer says how to call it: an MCP client at call.url, tools/call of call.tool.
    log(`  the best match is an MCP tool: connect an MCP client to call.url and call "${best.call.tool}"`);
    const client = new Client({ name: 'demo-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(best.call.url)));
    try {
      const t0 = performance.now();
      const result = await client.callTool({
        name: best.call.tool,
        arguments: { amount: 25, from: 'USD', to: 'EUR' },
      });
      const latency = Math.round(performance.now() - t0);
      log(
        `  tools/call ${best.call.tool} at ${best.call.url} in ${latency} ms -> ${JSON.stringify(result.structuredContent)}`,
      );
      await call('POST', '/api/discover/report', {
        skill_id: best.skill_id,
        caller: 'demo-agent',
        call_result: result.isError ? 'failure' : 'success',
        latency_ms: latency,
        satisfaction: 5,
        notes: 'demo MCP call',
      });
      log('  POST /api/discover/report -> ok');
    } finally {
      await client.close();
    }
    return { skills: statuses, routedTo: best.skill_id };
  } finally {
    await servers.close();
  }
}

if (require.main === module) {
  runSkillRouterDemo({
    baseUrl: process.env.SKILL_ROUTER_URL ?? 'http://127.0.0.1:3003',
    log: (l) => process.stdout.write(l + '\n'),
  }).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
