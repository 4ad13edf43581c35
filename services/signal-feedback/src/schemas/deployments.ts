import { z } from 'zod';
import { StorableString } from './common';
import { VerdictName, VerificationResult } from './verification';

/** The latest deployment of a proposal, as {@link Proposal} carries it. */
export const DeploymentSummary = z.object({
  id: z.uuid(),
  deployed_at: z.iso.datetime(),
  version: z.string().nullable(),
  verdict: z
    .enum(['pending', ...VerdictName.options])
    .describe('pending until the after-window closes; GET .../deployments shows the provisional figures'),
});
/** A {@link DeploymentSummary}. */
export type DeploymentSummary = z.infer<typeof DeploymentSummary>;

/** A deployment on the wire (README, "Deployments and verification"). */
export const Deployment = z.object({
  id: z.uuid(),
  proposal_id: z.uuid(),
  deployed_at: z.iso.datetime(),
  version: z.string().nullable(),
  note: z.string().nullable(),
  window_minutes: z.int().describe('length of each compared window'),
  signal_type: z
    .string()
    .nullable()
    .describe("the failing signal type compared (the proposal's most frequent); null: every negative type"),
  contexts: z.array(z.uuid()).describe("the treated contexts (default: the proposal's context)"),
  control_contexts: z
    .array(z.uuid())
    .nullable()
    .describe(
      "the control contexts the deployment named; null: the product's other contexts with enough signals",
    ),
  verification: VerificationResult,
  regression_proposal_id: z.uuid().nullable().describe('the proposal a regression raised'),
  regression_detected_at: z.iso
    .datetime()
    .nullable()
    .describe(
      'when the open-window monitor detected a regression, before the window closed; null: it did not',
    ),
  created_at: z.iso.datetime(),
});
/** A {@link Deployment}. */
export type Deployment = z.infer<typeof Deployment>;

/** The most contexts a deployment may name as treated (README, "Deployments and verification"). */
export const MAX_TREATED_CONTEXTS = 20;
/** The most control contexts a deployment may name, or the verification picks (the busiest). */
export const MAX_CONTROL_CONTEXTS = 50;

/** 1 to `max` distinct context ids. */
const distinctContexts = (max: number) =>
  z
    .array(z.uuid())
    .min(1)
    .max(max)
    .refine((ids) => new Set(ids).size === ids.length, 'must not repeat a context');

/** POST /api/proposals/{id}/deployments body. */
export const CreateDeploymentBody = z.object({
  deployed_at: z.iso
    .datetime({ offset: true })
    // Five minutes of clock skew between the caller and this server.
    .refine((v) => Date.parse(v) <= Date.now() + 5 * 60_000, 'must not be in the future')
    .optional()
    .describe('when the change shipped (default: now); not in the future'),
  version: StorableString.trim().min(1).max(100).optional(),
  note: StorableString.trim().max(2_000).optional(),
  window_minutes: z
    .int()
    .min(1)
    .max(10_080)
    .optional()
    .describe(
      'length of each compared window, before and after deployed_at (default VERIFICATION_WINDOW_MINUTES, 1440)',
    ),
  alpha: z
    .number()
    .min(0.0001)
    .max(0.2)
    .optional()
    .describe('two-sided significance level of the verdict (default VERIFICATION_ALPHA, 0.05)'),
  contexts: distinctContexts(MAX_TREATED_CONTEXTS)
    .optional()
    .describe("the contexts the change touched, of the proposal's product (default: the proposal's context)"),
  control_contexts: distinctContexts(MAX_CONTROL_CONTEXTS)
    .optional()
    .describe(
      "the control contexts, of the proposal's product and not among the treated (default: the product's " +
        'other contexts with enough signals in both windows)',
    ),
});

/** Arguments of the MCP tool `record_deployment` (README, "MCP"): the proposal and the deployment's fields. */
export const RecordDeploymentArgs = CreateDeploymentBody.extend({
  proposal_id: z.uuid().describe("an approved proposal of the key's product"),
});
/** Parsed arguments of `record_deployment`. */
export type RecordDeploymentArgs = z.infer<typeof RecordDeploymentArgs>;

/** Arguments of the MCP tool `list_deployments`. */
export const ListDeploymentsArgs = z.object({
  proposal_id: z.uuid().describe("a proposal of the key's product"),
});
/** Parsed arguments of `list_deployments`. */
export type ListDeploymentsArgs = z.infer<typeof ListDeploymentsArgs>;

/** Structured content of `list_deployments`: MCP carries an object, so the array is wrapped. */
export const DeploymentList = z.object({
  deployments: z.array(Deployment).describe('newest first, each with its verification'),
});

/** A parsed {@link CreateDeploymentBody}. */
export type CreateDeploymentBody = z.infer<typeof CreateDeploymentBody>;
