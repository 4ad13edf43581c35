import type { IncomingMessage, ServerResponse } from 'node:http';
import { dispatchHttp, type HttpCall, type McpTool } from '@repo/service-kit';
import { AgentJob, BriefResponse, Error402, HealthResponse, SectorList, toJsonSchema } from '@repo/schemas';
import { PaymentRequiredV2, type ResourceDiscovery } from '@repo/x402-core';
import {
  MCP_PAYMENT_META,
  MCP_SIGN_IN_META,
  mcpBazaarExtensions,
  mcpPaymentHeaders,
  mcpResultOfPaidAnswer,
} from '@repo/x402-express';
import { z } from 'zod';
import { COMPUTE_PRICES, DATA_PRICES, type PaidRoute } from '../../domain/prices';
import { ForgeArgs, JobAccepted, JobArgs, NetworkOnlyQuery, ProveArgs } from '../../schemas';
import { usdc } from '../http/contract-parts';
import { DISCOVERY } from '../http/discovery';
import { SCOUT_LISTS } from '../http/scout-lists';
import { priceMetaOf, type NetworkPayment } from './price-meta';

/** What `initialize` tells an agent about this server (README, "MCP"). */
export const MARKET_INTEL_MCP_INSTRUCTIONS =
  'Venture-intelligence data and multi-agent compute, paid per call in USDC on Solana with x402. ' +
  'list_sectors, get_health and get_job are free. A paid tool called without payment returns a ' +
  'payment-required tool error whose structured content is the x402 PaymentRequired; pay it and call ' +
  'the tool again with the same arguments and the PaymentPayload in _meta["x402/payment"]. The answer ' +
  'carries the settlement in _meta["x402/payment-response"]; calling again with the same payment ' +
  'returns the same answer. Start with list_sectors.';

/** The request listener of the HTTP server (the app behind its hot path), known once composed. */
export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** One market-intel tool: the HTTP operation it stands for and how its arguments map onto it. */
interface HttpBackedTool<I> {
  name: string;
  title: string;
  description: string;
  input: z.ZodType<I>;
  output: z.ZodType;
  annotations: NonNullable<McpTool['annotations']>;
  /** The operation; `raw` are the arguments as sent (a compute body is forwarded as sent). */
  call(args: I, raw: Record<string, unknown>): HttpCall;
  /** Non-2xx statuses that are the tool's result (the health report's 503). */
  resultStatuses?: number[];
  /**
   * Paid with x402: a call without payment answers the `PaymentRequired`; the listing carries the
   * price in `_meta` ({@link priceMetaOf}).
   */
  paid?: PaidRoute;
  /**
   * The x402 discovery metadata of the paid route: its answer's schema and examples, which the tool's
   * MCP `bazaar` entry repeats ({@link mcpDiscoveryOf}).
   */
  discovery?: ResourceDiscovery;
}

/**
 * A paid tool's MCP `bazaar` entry (docs/payments.md, "Discovery"): its name, description, arguments'
 * schema and the route's answer schema and example; the input example is the route's when the tool's
 * arguments accept it (a query's digits read as numbers).
 */
function mcpDiscoveryOf(t: HttpBackedTool<unknown>, discovery: ResourceDiscovery): Record<string, unknown> {
  const example = discovery.inputExample ?? {};
  const asArguments = Object.fromEntries(
    Object.entries(example).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v]),
  );
  const inputExample = [example, asArguments].find((e) => t.input.safeParse(e).success);
  return mcpBazaarExtensions({
    toolName: t.name,
    description: t.description,
    inputSchema: toJsonSchema(t.input, 'input'),
    ...(inputExample ? { inputExample } : {}),
    output: { schema: discovery.output, example: discovery.outputExample },
  });
}

/**
 * What a paid tool's payment-required result carries: the v2 `PaymentRequired` (official scheme on),
 * else the v1 `Error402` body.
 */
const PAYMENT_REQUIRED = z.union([PaymentRequiredV2, Error402]);

/** The call of a tool whose only argument, `network`, is the query of a `GET` of `path`. */
function getWithNetwork(path: string): HttpBackedTool<z.infer<typeof NetworkOnlyQuery>>['call'] {
  return (args) => ({ method: 'GET', path, query: { network: args.network } });
}

/**
 * The call of a compute tool: a `POST` of `path` with `network` in the query and the other arguments
 * as sent as the body (the route parses the body itself, defaults included).
 */
function postJob(path: string): HttpBackedTool<z.infer<typeof NetworkOnlyQuery>>['call'] {
  return (args, raw) => {
    const { network: _network, ...body } = raw;
    return { method: 'POST', path, query: { network: args.network }, body };
  };
}

const PAID_DATA = { readOnlyHint: true, idempotentHint: true, openWorldHint: false } as const;
const PAID_COMPUTE = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
} as const;

/** The price sentence of a paid tool's description. */
function price(route: PaidRoute): string {
  return (
    `Paid: ${usdc(route)} USDC (${route.amountAtomic} atomic units) per call, with x402 on Solana ` +
    '(the first call returns the payment requirements; see the server instructions).'
  );
}

/**
 * market-intel's MCP tools (README, "MCP"): each stands for one HTTP operation and is run through the
 * service's own HTTP handler (`dispatchHttp`), so a paid tool asks for, verifies, settles, stores and
 * replays payments in the same ledger and with the same request-bound references as HTTP (a payment
 * made over HTTP is used over MCP too). The x402 MCP transport maps the payment onto the HTTP headers
 * and the answer back (`mcpPaymentHeaders`, `mcpResultOfPaidAnswer`), and a sign-in proof in
 * `_meta["x402/sign-in-with-x"]` onto `SIGN-IN-WITH-X` (docs/payments.md, "Signing in instead of paying again"). A paid tool carries its price
 * as data in its listing's `_meta` (`x402/price` and Cloudflare's `agents-x402/*` keys,
 * {@link priceMetaOf}); its description keeps the price sentence.
 * @param handler the HTTP server's request listener, read at call time (it exists once the app is
 *   composed, after the tools are)
 * @param networks how each offered network is paid (`networkPaymentsOf` of the payment gateway): the
 *   offers in the price metadata; none lists the amount, currency and scheme only
 */
export function marketIntelTools(
  handler: () => HttpHandler,
  networks: readonly NetworkPayment[] = [],
): McpTool[] {
  const httpTool = <I>(t: HttpBackedTool<I>): McpTool<I> => {
    const extensions = t.discovery ? mcpDiscoveryOf(t as HttpBackedTool<unknown>, t.discovery) : undefined;
    return {
      name: t.name,
      title: t.title,
      description: t.description,
      input: t.input,
      output: t.output,
      annotations: t.annotations,
      ...(t.paid ? { errorOutput: PAYMENT_REQUIRED, meta: priceMetaOf(t.paid, networks) } : {}),
      async run(args, context) {
        const call = t.call(args, context.rawArguments);
        const answer = await dispatchHttp(handler(), context, {
          ...call,
          headers: { ...call.headers, ...mcpPaymentHeaders(context.meta) },
        });
        return mcpResultOfPaidAnswer(
          answer,
          t.resultStatuses,
          // A refused sign-in keeps its reason as the result's error, as a refused payment does.
          context.meta[MCP_PAYMENT_META] !== undefined || context.meta[MCP_SIGN_IN_META] !== undefined,
          extensions,
        );
      },
    };
  };
  return [
    httpTool<z.infer<typeof NetworkOnlyQuery>>({
      name: 'list_sectors',
      title: 'List sectors',
      description:
        'The sectors with stored scan reports: per sector the report count, the latest report time and the ' +
        'number of gaps. Free. Call it before a paid scout tool that takes a sector.',
      input: NetworkOnlyQuery,
      output: SectorList,
      annotations: { readOnlyHint: true, openWorldHint: false },
      call: getWithNetwork('/api/v1/sectors'),
    }),
    httpTool<z.infer<typeof NetworkOnlyQuery>>({
      name: 'get_health',
      title: 'Get health',
      description:
        'Health of the compute upstreams (LLM, search, pipeline runner): healthy, or unhealthy with errorClass ' +
        'upstream (retry later) or config (an operator must fix it). Free. Check it before paying for a ' +
        'compute tool.',
      input: NetworkOnlyQuery,
      output: HealthResponse,
      annotations: { readOnlyHint: true, openWorldHint: false },
      call: getWithNetwork('/api/v1/health'),
      resultStatuses: [503],
    }),
    httpTool<z.infer<typeof JobArgs>>({
      name: 'get_job',
      title: 'Get a compute job',
      description:
        'A forge_ideate or prove_debate job by its jobId: status (pending, running, completed, failed), ' +
        'progress, and the result once completed. Free; the jobId is the authorization.',
      input: JobArgs,
      output: AgentJob,
      annotations: { readOnlyHint: true, openWorldHint: false },
      call: (args) => ({
        method: 'GET',
        path: `/api/v1/jobs/${encodeURIComponent(args.jobId)}`,
        query: { network: args.network },
      }),
    }),
    ...SCOUT_LISTS.map((list) =>
      httpTool({
        name: list.tool.name,
        title: list.tool.title,
        description: `${list.tool.description} ${price(DATA_PRICES[list.key])}`,
        input: list.tool.args,
        output: list.response,
        annotations: PAID_DATA,
        paid: DATA_PRICES[list.key],
        discovery: DISCOVERY[list.key],
        call: (args) => ({ method: 'GET', path: list.path, query: { ...args } }),
      }),
    ),
    httpTool<z.infer<typeof NetworkOnlyQuery>>({
      name: 'scout_brief',
      title: 'Daily brief',
      description:
        'The daily brief across sectors: headline opportunities and what changed. A not_found tool error, ' +
        `before any payment is asked, when no brief exists yet. ${price(DATA_PRICES.brief)}`,
      input: NetworkOnlyQuery,
      output: BriefResponse,
      annotations: PAID_DATA,
      paid: DATA_PRICES.brief,
      discovery: DISCOVERY.brief,
      call: getWithNetwork('/api/v1/scout/brief'),
    }),
    httpTool<z.infer<typeof ForgeArgs>>({
      name: 'forge_ideate',
      title: 'Forge: ideate',
      description:
        'Starts a 5-round multi-agent ideation over the chosen sectors (about 30 minutes) and returns the ' +
        'jobId at once; follow it with get_job. Check get_health first: no payment is asked while the ' +
        `compute upstreams are down. ${price(COMPUTE_PRICES.forge)}`,
      input: ForgeArgs,
      output: JobAccepted,
      annotations: PAID_COMPUTE,
      paid: COMPUTE_PRICES.forge,
      discovery: DISCOVERY.forge,
      call: postJob('/api/v1/forge/ideate'),
    }),
    httpTool<z.infer<typeof ProveArgs>>({
      name: 'prove_debate',
      title: 'Prove: debate',
      description:
        'Starts a 6-persona debate of an idea (about 60 minutes) and returns the jobId at once; follow it ' +
        'with get_job. Check get_health first: no payment is asked while the compute upstreams are down. ' +
        price(COMPUTE_PRICES.prove),
      input: ProveArgs,
      output: JobAccepted,
      annotations: PAID_COMPUTE,
      paid: COMPUTE_PRICES.prove,
      discovery: DISCOVERY.prove,
      call: postJob('/api/v1/prove/debate'),
    }),
  ];
}
