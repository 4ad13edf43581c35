import type { SkillDirectory } from '../data/skill-directory';
import { canonicalJson, definitionHash } from './definition';
import { definitionQuality } from './definition-quality';
import {
  refusedHealthCheck,
  unansweredProbe,
  type CallCheck,
  type Generated,
  type Probe,
  type SchemaChecks,
  type VerificationResult,
} from './verification';
import {
  RegisterSkillRequest,
  SkillId,
  VERIFICATION_STEPS,
  type RegisterMcpServerRequest,
  type SkillCall,
  type VerificationStepResult,
} from '../schemas';

/**
 * Limits of one MCP server's import and verification (README, "MCP servers as skills"): most tools
 * imported from one server, and most `tools/list` pages read to find them.
 */
export const MCP_LIMITS = { maxTools: 50, maxPages: 5 } as const;

/** The transport name route answers give an imported tool (README, "MCP servers as skills"). */
export const MCP_TRANSPORT = 'mcp-streamable-http';

/** One tool as `tools/list` describes it (only the fields a skill is made of). */
export interface McpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  /** Declared only by tools that return structured content. */
  outputSchema?: Record<string, unknown>;
}

/**
 * Why an MCP exchange gave no usable answer: `timeout`, `refused` (SSRF policy), `network`,
 * `too_large` (a response over MAX_RESPONSE_BYTES), `protocol` (not MCP, or an MCP error),
 * `too_many_tools` (more than {@link MCP_LIMITS}).
 */
export interface McpFailure {
  ok: false;
  kind: 'timeout' | 'refused' | 'network' | 'too_large' | 'protocol' | 'too_many_tools';
  /** One line for the caller or the verification's step detail; never more than a short excerpt of server text. */
  error: string;
}

/** The answer of a `tools/call`, or why there is none; `latencyMs` in milliseconds. */
export type McpCallOutcome =
  | { ok: true; latencyMs: number; isError: boolean; structuredContent?: unknown; text?: string }
  | (McpFailure & { latencyMs: number });

/** An MCP session after the handshake (`initialize`). */
export interface McpSession {
  /** What the server said of itself in the handshake. */
  server: { name: string; version: string; protocolVersion: string };
  /** `tools/list`, following `nextCursor` for at most `maxPages` pages; more than `maxTools` tools fail. */
  listTools(maxTools: number, maxPages: number): Promise<{ ok: true; tools: McpTool[] } | McpFailure>;
  /** `tools/call` of `name` with `args`. */
  callTool(name: string, args: Record<string, unknown>): Promise<McpCallOutcome>;
  /** MCP `ping`: whether the server answers in the session; `latencyMs` in milliseconds. */
  ping(): Promise<{ ok: true; latencyMs: number } | (McpFailure & { latencyMs: number })>;
  /** Ends the session (never throws). */
  close(): Promise<void>;
}

/**
 * MCP servers over the Streamable HTTP transport (implemented with the official SDK's client through
 * the SSRF guard, adapters/mcp-client.ts). Every request is bounded in time and response size.
 */
export interface McpServers {
  /** Connects and runs the handshake. */
  open(url: string): Promise<{ ok: true; session: McpSession } | McpFailure>;
}

/** A register body plus the MCP tool it calls (stored in `skills.mcp_tool`, part of the pinned definition). */
export type ToolRegistration = RegisterSkillRequest & { mcp_tool: string };

/**
 * The skill id of a server's tool: `<server_id>.<tool name>`, stable for as long as the tool keeps its
 * name (README, "MCP servers as skills").
 */
export function mcpSkillId(serverId: string, toolName: string): string {
  return `${serverId}.${toolName}`;
}

/**
 * The skill a listed tool becomes: its id from {@link mcpSkillId}, its name the tool's title (else its
 * name), its description, `inputSchema` and `outputSchema` (`{}` when none is declared) the tool's,
 * its endpoint the server's URL; provider, chains and pricing come from the registration, and the
 * capabilities are the registration's plus the tool's name. The body passes the same validation as
 * `POST /api/discover/register` (schema size and depth limits included).
 * @returns the body, or why the tool cannot be imported (one line naming the failed field)
 */
export function toolRegistration(
  server: RegisterMcpServerRequest,
  tool: McpTool,
): { ok: true; body: ToolRegistration } | { ok: false; reason: string } {
  const skillId = mcpSkillId(server.server_id, tool.name);
  if (!SkillId.safeParse(skillId).success)
    return {
      ok: false,
      reason: `the skill id "${skillId.slice(0, 140)}" is not 1-128 letters, digits, ".", "_", ":", "-"`,
    };
  const parsed = RegisterSkillRequest.safeParse({
    skill_id: skillId,
    name: (tool.title ?? tool.name).slice(0, 200),
    provider: server.provider,
    description: tool.description ?? '',
    capabilities: [...new Set([...(server.capabilities ?? []), tool.name.slice(0, 64)])].slice(0, 50),
    chains: server.chains,
    pricing: server.pricing,
    endpoint: server.url,
    input_schema: tool.inputSchema,
    output_schema: tool.outputSchema ?? {},
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || 'tool';
    const named =
      field === 'input_schema' ? 'inputSchema' : field === 'output_schema' ? 'outputSchema' : field;
    return { ok: false, reason: `${named} ${issue?.message ?? 'is invalid'}` };
  }
  return { ok: true, body: { ...parsed.data, mcp_tool: tool.name } };
}

/**
 * What of a tool a skill pins (README, "Pinned definitions"): its description and schemas, as
 * canonical JSON, so that a listed tool and a stored revision compare whatever their key order.
 */
export function toolFingerprint(tool: {
  description: string;
  inputSchema: unknown;
  outputSchema: unknown;
}): string {
  return canonicalJson({
    description: tool.description,
    input_schema: tool.inputSchema,
    output_schema: tool.outputSchema,
  });
}

/** The fingerprint of a listed tool as {@link toolRegistration} would store it. */
function listedFingerprint(tool: McpTool): string {
  return toolFingerprint({
    description: (tool.description ?? '').trim(),
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema ?? {},
  });
}

/**
 * How a caller calls a skill (README, "Routing and the score"): `POST` of the input to the endpoint,
 * or `tools/call` of the tool on the MCP server at the endpoint.
 */
export function skillCall(endpoint: string, mcpTool: string | null): SkillCall {
  return mcpTool === null
    ? { transport: 'http', method: 'POST', url: endpoint }
    : { transport: MCP_TRANSPORT, url: endpoint, tool: mcpTool };
}

/** A stored MCP tool skill as verification and conformance calls read it. */
export interface McpToolSkill {
  endpoint: string;
  mcpTool: string;
  description: string;
  inputSchema: unknown;
  outputSchema: unknown;
}

/** Verdict of a failed exchange: no answer is inconclusive, a wrong answer does not conform. */
function failureVerdict(failure: McpFailure): 'inconclusive' | 'nonconforming' {
  return failure.kind === 'timeout' || failure.kind === 'network' || failure.kind === 'refused'
    ? 'inconclusive'
    : 'nonconforming';
}

/**
 * `tools/call` of the skill's tool with `input`, generated from its `inputSchema` (in the sandbox)
 * before the session was opened, judged like an HTTP skill's test call (README, "MCP servers as
 * skills"): the call must answer without `isError`, and its `structuredContent`, when the tool
 * declared an `outputSchema`, must be valid against it (checked in `schemas`, the sandbox). The input
 * comes first so that a busy sandbox never eats into the session's deadline.
 */
export async function callMcpTool(
  session: McpSession,
  schemas: SchemaChecks,
  skill: McpToolSkill,
  input: Generated,
): Promise<CallCheck> {
  if (!input.ok) return { verdict: 'inconclusive', detail: input.error };
  const args =
    typeof input.value === 'object' && input.value !== null && !Array.isArray(input.value)
      ? (input.value as Record<string, unknown>)
      : {};
  const res = await session.callTool(skill.mcpTool, args);
  if (!res.ok) return { verdict: failureVerdict(res), detail: res.error, probe: unansweredProbe(res) };
  const fail = (detail: string): CallCheck => ({
    verdict: 'nonconforming',
    detail,
    probe: { ok: false, latencyMs: res.latencyMs, statusCode: null, error: detail },
  });
  if (res.isError)
    return fail(`tools/call of ${skill.mcpTool} answered isError${res.text ? `: ${res.text}` : ''}`);
  const declared =
    typeof skill.outputSchema === 'object' &&
    skill.outputSchema !== null &&
    Object.keys(skill.outputSchema).length > 0;
  if (declared) {
    if (res.structuredContent === undefined)
      return fail(
        `tools/call of ${skill.mcpTool} returned no structuredContent although the tool declares an outputSchema`,
      );
    const reply = await schemas.checkReply(skill.outputSchema, JSON.stringify(res.structuredContent));
    if (!reply.ok) return fail(`structuredContent ${reply.error}`);
  }
  return {
    verdict: 'conforms',
    detail: `tools/call of ${skill.mcpTool} answered in ${res.latencyMs} ms${declared ? ', structuredContent valid against outputSchema' : ''}`,
    probe: { ok: true, latencyMs: res.latencyMs, statusCode: null, error: null },
  };
}

/**
 * Verifies a tool imported from an MCP server (README, "MCP servers as skills"), in the three steps of
 * every skill:
 * 1. `endpoint_health_check`: the MCP handshake (`initialize`) at the endpoint;
 * 2. `schema_validation`: `tools/list` still lists the tool with the description and schemas of the
 *    revision being verified, and both schemas compile (in the sandbox);
 * 3. `test_call`: {@link callMcpTool}. Skipped when a step before failed.
 * The sandbox's work on the revision's schemas (both compiled, the test input generated) runs before
 * the session opens, so that a busy sandbox cannot run the session past its deadline.
 * @param refusal when set, the endpoint was refused by the SSRF policy: step 1 fails with it and no
 *   request is sent
 * @throws only what `schemas` throws when it is shut down (the verification is then retried later)
 */
export async function verifyMcpTool(
  servers: McpServers,
  schemas: SchemaChecks,
  skill: McpToolSkill,
  refusal?: string,
): Promise<VerificationResult> {
  const steps: VerificationStepResult[] = [];
  const probes: Probe[] = [];
  const skipRest = (reason: string) => {
    for (const step of VERIFICATION_STEPS.slice(steps.length))
      steps.push({ step, status: 'skipped', detail: `skipped: ${reason}`, duration_ms: 0 });
  };
  const finish = (): VerificationResult => {
    const firstFailure = steps.find((s) => s.status === 'failed');
    return {
      passed: !firstFailure,
      steps,
      reason: firstFailure ? `${firstFailure.step}: ${firstFailure.detail}` : null,
      probes,
    };
  };

  if (refusal) {
    steps.push(refusedHealthCheck(refusal));
    skipRest('endpoint_health_check failed');
    return finish();
  }
  // The sandbox's work comes before the session: waiting for a busy sandbox (other registrants'
  // schemas) must not count against the session's deadline.
  let t0 = performance.now();
  const since = () => Math.round(performance.now() - t0);
  const [inputChecked, outputChecked, input] = await Promise.all([
    schemas.checkSchema(skill.inputSchema),
    schemas.checkSchema(skill.outputSchema),
    schemas.generateInput(skill.inputSchema),
  ]);
  const sandboxMs = since();
  t0 = performance.now();
  const opened = await servers.open(skill.endpoint);
  if (!opened.ok) {
    probes.push(unansweredProbe({ ...opened, latencyMs: since() }));
    steps.push({
      step: 'endpoint_health_check',
      status: 'failed',
      detail: opened.error,
      duration_ms: since(),
    });
    skipRest('endpoint_health_check failed');
    return finish();
  }
  const { session } = opened;
  try {
    const { name, version, protocolVersion } = session.server;
    probes.push({ ok: true, latencyMs: since(), statusCode: null, error: null });
    steps.push({
      step: 'endpoint_health_check',
      status: 'passed',
      detail: `MCP handshake with ${name || 'a server'} ${version} (protocol ${protocolVersion || 'unknown'}) in ${since()} ms`,
      duration_ms: since(),
    });

    t0 = performance.now();
    const listed = await session.listTools(MCP_LIMITS.maxTools, MCP_LIMITS.maxPages);
    let problem: string | undefined;
    if (!listed.ok) problem = listed.error;
    else {
      const tool = listed.tools.find((t) => t.name === skill.mcpTool);
      if (!tool) problem = `tools/list no longer lists the tool ${skill.mcpTool}`;
      else if (listedFingerprint(tool) !== toolFingerprint(skill))
        problem = `the tool ${skill.mcpTool} changed since this revision was registered (description or schemas differ)`;
    }
    if (!problem)
      problem =
        [
          ...(inputChecked.ok ? [] : [`inputSchema ${inputChecked.error}`]),
          ...(outputChecked.ok ? [] : [`outputSchema ${outputChecked.error}`]),
        ].join('; ') || undefined;
    steps.push({
      step: 'schema_validation',
      status: problem ? 'failed' : 'passed',
      detail:
        problem ??
        `tools/list lists ${skill.mcpTool} as registered; inputSchema and outputSchema are valid JSON Schema`,
      duration_ms: since() + sandboxMs,
    });
    if (problem) {
      skipRest('schema_validation failed');
      return finish();
    }

    t0 = performance.now();
    const call = await callMcpTool(session, schemas, skill, input);
    if (call.probe) probes.push(call.probe);
    steps.push({
      step: 'test_call',
      status: call.verdict === 'conforms' ? 'passed' : 'failed',
      detail: call.detail,
      duration_ms: since(),
    });
    return finish();
  } finally {
    await session.close();
  }
}

/**
 * A conformance call of an imported tool (README, "MCP servers as skills"): the handshake and
 * `tools/list`, then, when the tool is listed as pinned, {@link callMcpTool}. A tool listed with
 * another description or other schemas is `changed` (the caller registers the listed definition as a
 * new revision, which leaves routing until it verifies); one no longer listed does not conform.
 */
export async function mcpConformanceCall(
  servers: McpServers,
  schemas: SchemaChecks,
  skill: McpToolSkill,
): Promise<CallCheck | { verdict: 'changed'; detail: string; tool: McpTool }> {
  // Before the session, as in verifyMcpTool: a busy sandbox must not eat into its deadline.
  const input = await schemas.generateInput(skill.inputSchema);
  const opened = await servers.open(skill.endpoint);
  if (!opened.ok) return { verdict: failureVerdict(opened), detail: opened.error };
  const { session } = opened;
  try {
    const listed = await session.listTools(MCP_LIMITS.maxTools, MCP_LIMITS.maxPages);
    if (!listed.ok) return { verdict: failureVerdict(listed), detail: listed.error };
    const tool = listed.tools.find((t) => t.name === skill.mcpTool);
    if (!tool)
      return { verdict: 'nonconforming', detail: `tools/list no longer lists the tool ${skill.mcpTool}` };
    if (listedFingerprint(tool) !== toolFingerprint(skill))
      return {
        verdict: 'changed',
        detail: `the tool ${skill.mcpTool} changed its description or schemas: registered as a new revision`,
        tool,
      };
    return await callMcpTool(session, schemas, skill, input);
  } finally {
    await session.close();
  }
}

/** What {@link registerChangedTool} needs of the directory (data/skill-directory.ts). */
export type ToolRevisions = Pick<SkillDirectory, 'registration' | 'upsert'>;

/**
 * Registers a listed tool whose description or schemas changed as a new revision of its skill, by
 * the key that owns it (README, "Pinned definitions"): the skill becomes `pending_verification`, out of
 * routing until the new revision verifies. Nothing is written when the skill was updated since
 * `revision`.
 * @returns the new revision; `null` when the skill changed meanwhile; or why the listed definition
 *   cannot be registered (a schema over the limits, a description too short)
 */
export async function registerChangedTool(
  directory: ToolRevisions,
  skillId: string,
  revision: number,
  tool: McpTool,
): Promise<{ ok: true; revision: number } | { ok: false; reason: string } | null> {
  const current = await directory.registration(skillId);
  if (!current || current.revision !== revision || current.body.mcp_tool !== tool.name) return null;
  const parsed = RegisterSkillRequest.safeParse({
    ...current.body,
    description: tool.description ?? '',
    input_schema: tool.inputSchema,
    output_schema: tool.outputSchema ?? {},
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      reason:
        `the tool ${tool.name} changed, but its new definition cannot be registered: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim(),
    };
  }
  const body: ToolRegistration = { ...parsed.data, mcp_tool: tool.name };
  const written = await directory.upsert(
    body,
    current.ownerKeyId,
    definitionHash(body),
    definitionQuality(body),
  );
  return written.outcome === 'forbidden' ? null : { ok: true, revision: written.revision };
}
