import { presentedApiKey, type McpTool, type McpToolContext } from '@repo/service-kit';
import type { ProposalRepository } from '../../data/proposals';
import type { KeyOwner, SignalRepository } from '../../data/signals';
import { deploymentInput, MAX_LISTED_DEPLOYMENTS, type DeploymentService } from '../../domain/deployments';
import { PLAN_LIMITS } from '../../domain/plans';
import { acceptSignals } from '../../domain/ingest';
import type { SignalFeedbackEvents } from '../../metrics';
import {
  Deployment,
  DeploymentList,
  ListDeploymentsArgs,
  RecordDeploymentArgs,
} from '../../schemas/deployments';
import { ListProposalsArgs, ProposalList } from '../../schemas/proposals';
import { ReceivedResponse, sendSignalsArgs, type SendSignalsArgs } from '../../schemas/signals';
import { authenticateProductKey, countIngestion, type ProductKeyCache } from '../../domain/product-key';

/** What `initialize` tells an agent about this server (README, "MCP"). */
export const SIGNAL_FEEDBACK_MCP_INSTRUCTIONS =
  "Send a product's user signals (typed events with a JSON payload) and read the improvement proposals " +
  "the service derives from them. Every tool needs the product's spk_ key (dashboard, or POST /api/products " +
  'with a session) in the x-api-key header of the MCP connection (or as Authorization: Bearer <key>). send_signals stores a batch all or ' +
  "nothing under the plan's monthly signal quota; list_proposals lists the product's proposals, highest " +
  "priority first. Once an approved proposal's change ships, record_deployment records it and " +
  'list_deployments tells whether it helped (the failing signals before and after, a z-test, a verdict).';

const KEY =
  'Needs the product key (spk_...) in the x-api-key header of the MCP connection (or Authorization: Bearer <key>).';

/** Dependencies of {@link signalFeedbackTools}: those of POST /api/signals and GET /api/proposals. */
export interface SignalFeedbackToolDeps {
  signals: SignalRepository;
  keys: ProductKeyCache;
  proposals: ProposalRepository;
  deployments: DeploymentService;
  /** MAX_BATCH_SIZE: most signals in one `send_signals` call. */
  maxBatch: number;
  now: () => Date;
  /** Domain counters (`signals_accepted_total`, `signals_refused_total`). */
  events?: SignalFeedbackEvents;
}

/**
 * The product of the key the MCP request carries, in `x-api-key` or `Authorization: Bearer` (headers
 * only: MCP never reads cookies or `?key=`).
 */
const ownerOf = (keys: ProductKeyCache, context: McpToolContext): Promise<KeyOwner> =>
  authenticateProductKey(keys, presentedApiKey(context.req));

/** What a tool may read and change: the proposals and deployments of the key's product, as for a key request. */
const productScope = async (
  keys: ProductKeyCache,
  context: McpToolContext,
): Promise<{ productId: string }> => ({ productId: (await ownerOf(keys, context)).productId });

/**
 * signal-feedback's MCP tools (README, "MCP"): `send_signals` runs the ingestion of POST /api/signals
 * (same key check, routing, quota, storage and counters), `list_proposals` the key's listing of
 * GET /api/proposals, `record_deployment` and `list_deployments` those of
 * /api/proposals/{id}/deployments. Errors are the AppErrors of those routes: `unauthorized`,
 * `invalid_request` (paths under `arguments`), `not_found`, `proposal_not_approved`,
 * `quota_exceeded` with `details { plan, limit, ..., resets_at }`.
 */
export function signalFeedbackTools(deps: SignalFeedbackToolDeps): McpTool[] {
  const sendSignals: McpTool<SendSignalsArgs> = {
    name: 'send_signals',
    title: 'Send signals',
    description:
      `Stores 1 to ${deps.maxBatch} user signals ({ type, payload?, context_id?, timestamp?, messageId? }) for ` +
      "the key's product, all or nothing, and returns { received, duplicates? }: the number stored, and the " +
      'number skipped because their messageId was already received in the last 24 hours (send a messageId to ' +
      "make retries safe; timestamp: ISO 8601, at most 7 days old). A context_id must be one of the product's " +
      "contexts; without one a signal goes to the product's only context, if it has exactly one. Free within " +
      "the plan's monthly signal quota; a batch that would cross it is refused whole with quota_exceeded " +
      `(details.resets_at). ${KEY}`,
    input: sendSignalsArgs(deps.maxBatch),
    output: ReceivedResponse,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async run(args, context) {
      const owner = await ownerOf(deps.keys, context);
      const result = await countIngestion(deps.events, args.signals.length, () =>
        acceptSignals(deps.signals, deps.keys, owner, args.signals, deps.now(), 'arguments.signals'),
      );
      return { structuredContent: { ...result } };
    },
  };
  const listProposals: McpTool<ListProposalsArgs> = {
    name: 'list_proposals',
    title: 'List proposals',
    description:
      "Returns { proposals }: the improvement proposals of the key's product (diagnosis, proposed change, " +
      'evidence, priority_score 0-100, status), highest priority first, then newest; optionally only one ' +
      "status (pending, approved, rejected, deferred) and at most limit (1-200, default 50). Free within the plan's " +
      `quota: listing uses none of it. ${KEY}`,
    input: ListProposalsArgs,
    output: ProposalList,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, context) {
      const proposals = await deps.proposals.list(await productScope(deps.keys, context), {
        status: args.status,
        limit: args.limit,
      });
      return { structuredContent: { proposals } };
    },
  };
  const recordDeployment: McpTool<RecordDeploymentArgs> = {
    name: 'record_deployment',
    title: 'Record a deployment',
    description:
      "Records that an approved proposal's change shipped (deployed_at defaults to now; version and note " +
      "optional; contexts: the treated contexts, default the proposal's; control_contexts: default the " +
      "product's other contexts with enough signals) and returns the deployment with its verification: " +
      "the proposal's failing types in window_minutes (default 1440) after deployed_at against the same " +
      'weekdays and hours a week earlier, a difference-in-differences of the log odds against the control ' +
      'contexts with its interval, a placebo and a traffic check, a label (observational, uncontrolled, ' +
      'unreliable) and a verdict (improved, regressed, inconclusive), provisional (not final, no p-value, ' +
      "an always-valid monitor instead) until the after-window closes. Free within the plan's monthly deployments " +
      `(free ${PLAN_LIMITS.free.deploymentsPerMonth}, builder ${PLAN_LIMITS.builder.deploymentsPerMonth}); ` +
      `proposal_not_approved for a proposal that is not approved. ${KEY}`,
    input: RecordDeploymentArgs,
    output: Deployment,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async run({ proposal_id, ...body }, context) {
      const created = await deps.deployments.record(
        proposal_id,
        await productScope(deps.keys, context),
        deploymentInput(body),
        'arguments',
      );
      return { structuredContent: created };
    },
  };
  const listDeployments: McpTool<ListDeploymentsArgs> = {
    name: 'list_deployments',
    title: 'List deployments',
    description:
      `Returns { deployments }: a proposal's deployments, newest first (at most ${MAX_LISTED_DEPLOYMENTS}), each with its ` +
      'verification (verdict, reason, label, the effect with its interval, method, placebo, traffic, per ' +
      'type, the naive before and after figures; provisional while the after-window is open) and the ' +
      'proposal a regression raised. ' +
      `Free within the plan's quota: listing uses none of it. ${KEY}`,
    input: ListDeploymentsArgs,
    output: DeploymentList,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(args, context) {
      const deployments = await deps.deployments.list(
        args.proposal_id,
        await productScope(deps.keys, context),
        MAX_LISTED_DEPLOYMENTS,
      );
      return { structuredContent: { deployments } };
    },
  };
  return [sendSignals, listProposals, recordDeployment, listDeployments];
}
