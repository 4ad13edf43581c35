import { z } from 'zod';
import { DeploymentSummary } from './deployments';

/** Proposal states (README, "Routing, classification and analysis"). */
export const ProposalStatus = z.enum(['pending', 'approved', 'rejected', 'deferred']);
/** One of the proposal states. */
export type ProposalStatus = z.infer<typeof ProposalStatus>;

/** A proposal on the wire (README, "Endpoints"). */
export const Proposal = z.object({
  id: z.uuid(),
  product_id: z.uuid(),
  context_id: z.uuid(),
  status: ProposalStatus,
  priority_score: z.number().describe('0 to 100; higher means more urgent'),
  diagnosis: z.string(),
  current_state: z.string(),
  proposed_change: z.string(),
  evidence_summary: z.string(),
  predicted_impact: z.string(),
  signal_count: z.int(),
  created_at: z.iso.datetime(),
  deployment: DeploymentSummary.optional().describe('the latest deployment, once the change shipped'),
  regression_of: z
    .object({ deployment_id: z.uuid(), proposal_id: z.uuid() })
    .optional()
    .describe('set when the verification raised this proposal: the deployment whose change regressed'),
  base_priority_score: z
    .number()
    .optional()
    .describe('the analysis\'s score before the priority feedback (README, "Priority feedback")'),
  last_change_of_kind: z
    .object({
      deployment_id: z.uuid(),
      proposal_id: z.uuid().describe('the proposal that deployment shipped'),
      deployed_at: z.iso.datetime(),
      version: z.string().nullable(),
      verdict: z.enum(['pending', 'improved', 'regressed', 'inconclusive']),
      regression_detected: z.boolean().describe('the open-window monitor detected a regression'),
      outcome: z
        .enum(['pending', 'improved', 'regressed', 'inconclusive'])
        .describe('what the priority feedback reads: a detected regression counts as regressed'),
    })
    .nullable()
    .optional()
    .describe(
      'the latest deployment of a proposal of the same context comparing the same failing type; null: none yet',
    ),
});
/** A {@link Proposal}. */
export type Proposal = z.infer<typeof Proposal>;

/**
 * How many proposals one listing returns (1 to 200, default 50), of `number`: a JSON number (MCP) or
 * the number coerced from the query string (GET /api/proposals).
 */
function proposalLimit<N extends z.ZodNumber | z.ZodCoercedNumber>(number: N): z.ZodDefault<N> {
  // int, min, max and meta return the schema they refine (typed as the constraint, not as N).
  return number
    .int()
    .min(1)
    .max(200)
    .default(50)
    .meta({ description: 'most proposals returned (highest priority first)' }) as z.ZodDefault<N>;
}

/** GET /api/proposals query. */
export const ProposalsQuery = z.object({
  status: ProposalStatus.optional().meta({ description: 'only proposals in this state' }),
  limit: proposalLimit(z.coerce.number()),
  product_id: z.uuid().optional().describe("session only: one of the user's products"),
});

/**
 * Arguments of the MCP tool `list_proposals` (README, "MCP"): {@link ProposalsQuery} with a JSON
 * number for `limit` and without `product_id` (the key names the product).
 */
export const ListProposalsArgs = ProposalsQuery.omit({ product_id: true }).extend({
  limit: proposalLimit(z.number()),
});
/** Parsed arguments of `list_proposals`. */
export type ListProposalsArgs = z.infer<typeof ListProposalsArgs>;

/** Structured content of `list_proposals`: MCP carries an object, so the array is wrapped. */
export const ProposalList = z.object({
  proposals: z.array(Proposal).describe('highest priority_score first, then newest'),
});

/** PATCH /api/proposals/{id} body. */
export const ProposalStatusChange = z.object({ status: ProposalStatus });

/** Answer of POST /api/analysis/run. */
export const AnalysisRunResult = z.object({
  contexts_analyzed: z.int(),
  proposals_created: z.int(),
  proposals: z.array(Proposal),
});
