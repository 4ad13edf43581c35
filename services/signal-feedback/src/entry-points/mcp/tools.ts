import type { McpTool, McpToolContext } from '@repo/service-kit';
import type { KeyOwnerCache } from '../../data/key-cache';
import type { ProposalRepository } from '../../data/proposals';
import type { KeyOwner, SignalRepository } from '../../data/signals';
import { acceptSignals } from '../../domain/ingest';
import type { SignalFeedbackEvents } from '../../metrics';
import {
  ListProposalsArgs,
  ProposalList,
  ReceivedResponse,
  sendSignalsArgs,
  type SendSignalsArgs,
} from '../../schemas';
import { authenticateProductKey, countIngestion } from '../product-key';

/** What `initialize` tells an agent about this server (README, "MCP"). */
export const SIGNAL_FEEDBACK_MCP_INSTRUCTIONS =
  "Send a product's user signals (typed events with a JSON payload) and read the improvement proposals " +
  "the service derives from them. Every tool needs the product's spk_ key (dashboard, or POST /api/products " +
  'with a session) in the x-api-key header of the MCP connection. send_signals stores a batch all or ' +
  "nothing under the plan's monthly signal quota; list_proposals lists the product's proposals, highest " +
  'priority first.';

const KEY = 'Needs the product key (spk_...) in the x-api-key header of the MCP connection.';

/** Dependencies of {@link signalFeedbackTools}: those of POST /api/signals and GET /api/proposals. */
export interface SignalFeedbackToolDeps {
  signals: SignalRepository;
  keys: KeyOwnerCache;
  proposals: ProposalRepository;
  /** MAX_BATCH_SIZE: most signals in one `send_signals` call. */
  maxBatch: number;
  now: () => Date;
  /** Domain counters (`signals_accepted_total`, `signals_refused_total`). */
  events?: SignalFeedbackEvents;
}

/** The product of the key the MCP request carries (the header only: MCP never reads cookies or `?key=`). */
const ownerOf = (keys: KeyOwnerCache, context: McpToolContext): Promise<KeyOwner> =>
  authenticateProductKey(keys, context.req.get('x-api-key'));

/**
 * signal-feedback's MCP tools (README, "MCP"): `send_signals` runs the ingestion of POST /api/signals
 * (same key check, routing, quota, storage and counters) and `list_proposals` the key's listing of
 * GET /api/proposals. Errors are the AppErrors of those routes: `unauthorized`, `invalid_request`
 * (paths under `arguments`), `quota_exceeded` with `details { plan, limit, used, requested, resets_at }`.
 */
export function signalFeedbackTools(deps: SignalFeedbackToolDeps): McpTool[] {
  const sendSignals: McpTool<SendSignalsArgs> = {
    name: 'send_signals',
    title: 'Send signals',
    description:
      `Stores 1 to ${deps.maxBatch} user signals ({ type, payload?, context_id? }) for the key's product, all ` +
      "or nothing, and returns { received }: the number stored. A context_id must be one of the product's " +
      "contexts; without one a signal goes to the product's only context, if it has exactly one. Free within " +
      "the plan's monthly signal quota; a batch that would cross it is refused whole with quota_exceeded " +
      `(details.resets_at). ${KEY}`,
    input: sendSignalsArgs(deps.maxBatch),
    output: ReceivedResponse,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async run(args, context) {
      const owner = await ownerOf(deps.keys, context);
      const received = await countIngestion(deps.events, args.signals.length, () =>
        acceptSignals(deps.signals, deps.keys, owner, args.signals, deps.now(), 'arguments.signals'),
      );
      return { structuredContent: { received } };
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
      const owner = await ownerOf(deps.keys, context);
      const proposals = await deps.proposals.list(
        { productId: owner.productId },
        { status: args.status, limit: args.limit },
      );
      return { structuredContent: { proposals } };
    },
  };
  return [sendSignals, listProposals];
}
