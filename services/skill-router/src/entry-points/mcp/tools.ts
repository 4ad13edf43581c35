import { presentedApiKey, type McpTool, type McpToolContext } from '@repo/service-kit';
import { z } from 'zod';
import type { RouteOutcome } from '../../metrics';
import {
  ListSkillsArgs,
  ListVersionsArgs,
  RegisterMcpServerRequest,
  RegisterMcpServerResponse,
  RegisterSkillRequest,
  RegisterSkillResponse,
  ReportRequest,
  ReportResponse,
  RouteRequest,
  RouteResponse,
  SkillDetail,
  SkillId,
  SkillList,
  SkillVersionList,
} from '../../schemas';
import type { AuthenticatedKey, DiscoverOperations } from '../../domain/discover-operations';

/** What `initialize` tells an agent about this server (README, "MCP"). */
export const SKILL_ROUTER_MCP_INSTRUCTIONS =
  'Find, rank, register and rate agent skills. Free to use with an sk_router_ key (POST /api/auth/key) ' +
  'sent as the x-api-key header of the MCP connection (or as Authorization: Bearer <key>); list_skills and get_skill need no key. ' +
  'route_task ranks active skills for a task; report_call after calling one keeps the ranking honest.';

const KEY =
  'Needs an sk_router_ key in the x-api-key header of the MCP connection (or Authorization: Bearer <key>).';

/** The hints of a tool that only reads the directory. */
const READS = { readOnlyHint: true, openWorldHint: false } as const;
/** The hints of a registration: it adds or updates, the same call twice is one, and it calls the skill's endpoint. */
const REGISTERS = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
} as const;

/** The caller of a tool: the key in `x-api-key` or `Authorization: Bearer` of the MCP connection. */
const keyOf = (operations: DiscoverOperations, context: McpToolContext) =>
  operations.authenticate(presentedApiKey(context.req));

/**
 * skill-router's MCP tools (README, "MCP"): the `/api/discover` operations with the same schemas,
 * rate limits and errors as the HTTP routes.
 * @param onRouteServed called once per `route_task` call with its outcome, as for POST /api/discover/route
 */
export function skillRouterTools(
  operations: DiscoverOperations,
  onRouteServed?: (outcome: RouteOutcome) => void,
): McpTool[] {
  /** The `run` of a tool that needs a key: `use` answers with the caller's key once it is authenticated. */
  const keyed =
    <Args>(
      use: (key: AuthenticatedKey, args: Args) => Promise<Record<string, unknown>>,
    ): McpTool<Args>['run'] =>
    async (args, context) => ({ structuredContent: await use(await keyOf(operations, context), args) });
  const routeTask: McpTool<RouteRequest> = {
    name: 'route_task',
    title: 'Route a task to skills',
    description:
      'Ranks the active skills for a natural-language task by the weighted score (capability_match 0.35, ' +
      'chain_match 0.20, price_fit 0.15, reliability 0.15, latency_fit 0.10, popularity 0.05), best first, ' +
      `with the reasons, price, metrics and endpoint of each. Free. ${KEY} Limited per key and minute.`,
    input: RouteRequest,
    output: RouteResponse,
    annotations: READS,
    async run(args, context) {
      try {
        const answer = await operations.route(await keyOf(operations, context), args);
        onRouteServed?.(answer.matches.length > 0 ? 'matched' : 'no_match');
        return { structuredContent: answer };
      } catch (err) {
        const status = (err as { status?: unknown }).status;
        onRouteServed?.(typeof status === 'number' && status < 500 ? 'rejected' : 'failed');
        throw err;
      }
    },
  };
  const listSkills: McpTool<z.infer<typeof ListSkillsArgs>> = {
    name: 'list_skills',
    title: 'List skills',
    description:
      'Active skills, filtered by capability tag, chain or full-text search, sorted by popularity, newest or definition quality, ' +
      'one page with the total. Free; no key needed.',
    input: ListSkillsArgs,
    output: SkillList,
    annotations: READS,
    async run(args) {
      return { structuredContent: await operations.list(args) };
    },
  };
  const getSkill: McpTool<{ id: string }> = {
    name: 'get_skill',
    title: 'Get a skill',
    description:
      'One skill in any status: its schemas, pricing, verification results, health and live metrics. ' +
      'Free; no key needed.',
    input: z.object({ id: SkillId }),
    output: SkillDetail,
    annotations: READS,
    async run(args) {
      return { structuredContent: await operations.get(args.id) };
    },
  };
  const listSkillVersions: McpTool<z.infer<typeof ListVersionsArgs>> = {
    name: 'list_skill_versions',
    title: "List a skill's versions",
    description:
      "A skill's registered revisions, newest first: each definition (endpoint, description, pricing, schemas), " +
      'its SHA-256 and its verification. Free; no key needed.',
    input: ListVersionsArgs,
    output: SkillVersionList,
    annotations: READS,
    async run({ id, ...page }) {
      return { structuredContent: await operations.versions(id, page) };
    },
  };
  const registerSkill: McpTool<RegisterSkillRequest> = {
    name: 'register_skill',
    title: 'Register a skill',
    description:
      'Registers a skill, or updates one registered with the same key. It is verified (endpoint health, ' +
      'schemas, a test call) before it is routed; get_skill shows the result. ' +
      `Free. ${KEY} Limited per key and day.`,
    input: RegisterSkillRequest,
    output: RegisterSkillResponse,
    annotations: REGISTERS,
    run: keyed(async (key, args) => (await operations.register(key, args, 'arguments')).answer),
  };
  const registerMcpServer: McpTool<RegisterMcpServerRequest> = {
    name: 'register_mcp_server',
    title: 'Register an MCP server',
    description:
      "Imports an MCP server's tools (Streamable HTTP transport) as skills <server_id>.<tool>: each tool's description " +
      "and schemas become the skill's. Each is verified over MCP (handshake, tools/list, a test tools/call) before it " +
      `is routed; route_task then says how to call it. Free. ${KEY} Each tool written counts as a registration.`,
    input: RegisterMcpServerRequest,
    output: RegisterMcpServerResponse,
    annotations: REGISTERS,
    run: keyed(async (key, args) => (await operations.registerMcp(key, args, 'arguments')).answer),
  };
  const reportCall: McpTool<ReportRequest> = {
    name: 'report_call',
    title: 'Report a call',
    description:
      "Reports how a call to a skill went (success, failure, timeout or error, latency, satisfaction); feeds the skill's " +
      `reliability, latency and popularity. Free. ${KEY} Limited per key and skill.`,
    input: ReportRequest,
    output: ReportResponse,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: keyed((key, args) => operations.report(key, args)),
  };
  return [routeTask, listSkills, getSkill, listSkillVersions, registerSkill, registerMcpServer, reportCall];
}
