import { z } from 'zod';

/** NUL or an unpaired UTF-16 surrogate: text PostgreSQL cannot store. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A string PostgreSQL can store (no NUL, no unpaired surrogate). */
export const StorableString = z
  .string()
  .refine((v) => !UNSTORABLE_TEXT.test(v), 'must not contain NUL or unpaired surrogates');

/** Subscription plans (README, "Plans and quotas"): stored on each user, shown by GET /api/auth/me. */
export const PlanName = z.enum(['free', 'builder', 'growth', 'scale']);
/** One of the plans. */
export type PlanName = z.infer<typeof PlanName>;

/** Proposal states (README, "Routing, classification and analysis"). */
export const ProposalStatus = z.enum(['pending', 'approved', 'rejected', 'deferred']);
/** One of the proposal states. */
export type ProposalStatus = z.infer<typeof ProposalStatus>;

/** A signal type: 1 to 100 characters (README, "Endpoints"). */
export const SignalType = StorableString.min(1).max(100);
/**
 * Deepest nesting a payload may have (objects and arrays, the payload itself being level 1). Deeper
 * JSON could not be stored: serialising it for PostgreSQL runs out of stack (a 500, found by the
 * OpenAPI fuzz suite with 5000 nested arrays).
 */
export const MAX_PAYLOAD_DEPTH = 64;

/**
 * Whether every object or array inside `value` sits at most {@link MAX_PAYLOAD_DEPTH} levels deep,
 * `value` itself being at `level`. Recursion stops one level past the limit, so deep input cannot
 * exhaust the stack; nothing is allocated, since it runs for every signal of every batch.
 */
function nestsWithin(value: object, level: number): boolean {
  if (level > MAX_PAYLOAD_DEPTH) return false;
  if (Array.isArray(value)) {
    for (const child of value as unknown[]) {
      if (typeof child === 'object' && child !== null && !nestsWithin(child, level + 1)) return false;
    }
    return true;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && !nestsWithin(child, level + 1)) return false;
  }
  return true;
}

/** A signal payload: any JSON object nested at most {@link MAX_PAYLOAD_DEPTH} levels. */
export const SignalPayload = z
  .record(z.string(), z.unknown())
  .refine((v) => nestsWithin(v, 1), `must not be nested deeper than ${MAX_PAYLOAD_DEPTH} levels`)
  .describe(`any JSON object, nested at most ${MAX_PAYLOAD_DEPTH} levels`);

/**
 * A signal's client time (README, "Timestamps and message ids"): ISO 8601 date-time with `Z` or an
 * offset; the skew bounds against the time of receipt are checked by the domain (`checkSignalTimes`).
 */
export const SignalTimestamp = z.iso
  .datetime({ offset: true })
  .describe(
    'when the event happened (ISO 8601 with Z or an offset); at most 7 days before the time of receipt and ' +
      "10 minutes after it; the signal's time in series, analysis and verification (default: time of receipt)",
  );

/**
 * A client idempotency key (README, "Timestamps and message ids"): 1 to 100 characters; a repeated one
 * for the same product within 24 hours is acknowledged and not stored or counted again.
 */
export const SignalMessageId = StorableString.min(1)
  .max(100)
  .describe(
    'idempotency key, 1 to 100 characters: a messageId already received for this product in the last ' +
      '24 hours is acknowledged (counted in duplicates) and not stored or counted against the quota again',
  );

/**
 * One signal as POST /api/signals takes it (README, "Endpoints"). Strict: a field it does not declare is
 * refused naming it (docs/architecture.md, "One error dialect"), not dropped.
 */
export const SignalInput = z.strictObject({
  type: SignalType,
  payload: SignalPayload.optional(),
  context_id: z.uuid().optional(),
  timestamp: SignalTimestamp.optional(),
  messageId: SignalMessageId.optional(),
});
/** A parsed {@link SignalInput}. */
export type SignalInput = z.infer<typeof SignalInput>;

/**
 * One signal as POST /api/ingest takes it (README, "Endpoints"): the type under `type`, `event` or
 * `event_type` and the payload under `payload`, `data` or `properties` (first present name wins, in that
 * order). Normalised to a {@link SignalInput}. Strict like it: an undeclared field is refused.
 */
export const IngestSignalInput = z
  .strictObject({
    type: SignalType.optional(),
    event: SignalType.optional(),
    event_type: SignalType.optional(),
    payload: SignalPayload.optional(),
    data: SignalPayload.optional(),
    properties: SignalPayload.optional(),
    context_id: z.uuid().optional(),
    timestamp: SignalTimestamp.optional(),
    messageId: SignalMessageId.optional(),
  })
  .transform((v, ctx): SignalInput => {
    const type = v.type ?? v.event ?? v.event_type;
    if (type === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'one of type, event or event_type is required',
        path: ['type'],
      });
      return z.NEVER;
    }
    const payload = v.payload ?? v.data ?? v.properties;
    return {
      type,
      ...(payload ? { payload } : {}),
      ...(v.context_id ? { context_id: v.context_id } : {}),
      ...(v.timestamp ? { timestamp: v.timestamp } : {}),
      ...(v.messageId ? { messageId: v.messageId } : {}),
    };
  });

/** 200 answer of the ingest endpoints (README, "Timestamps and message ids"). */
export const ReceivedResponse = z.object({
  received: z.int().min(0).describe('number of signals accepted (stored and counted) by this request'),
  duplicates: z
    .int()
    .min(1)
    .optional()
    .describe(
      'present when some signals carried a messageId already received in the last 24 hours (or earlier in ' +
        'the batch): acknowledged, not stored or counted again',
    ),
});
/** A {@link ReceivedResponse}. */
export type ReceivedResponse = z.infer<typeof ReceivedResponse>;

/** A verification's verdict (README, "Deployments and verification"). */
export const VerdictName = z.enum(['improved', 'regressed', 'inconclusive']);

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

/** One compared window of a verification. */
export const WindowFigures = z.object({
  from: z.iso.datetime().describe('inclusive'),
  to: z.iso.datetime().describe('exclusive'),
  signals: z.int().min(0).describe('every signal of the treated contexts in the window'),
  negative: z.int().min(0).describe('signals of the covered failing types (every negative signal when none)'),
  negative_rate: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('negative / signals, four decimals; null without signals'),
});
/** A {@link WindowFigures}. */
export type WindowFigures = z.infer<typeof WindowFigures>;

/** A time window `[from, to)` of a verification. */
export const VerificationWindow = z.object({
  from: z.iso.datetime().describe('inclusive'),
  to: z.iso.datetime().describe('exclusive'),
});

/** An effect on the log-odds scale with its interval (README, "Deployments and verification"). */
export const EffectFigures = z.object({
  estimate: z.number().describe('log odds ratio (positive: the failing share rose), four decimals'),
  standard_error: z.number().min(0).describe('Woolf standard error of the estimate, four decimals'),
  ci_low: z.number().describe('lower bound of the two-sided 1 − alpha interval, log odds'),
  ci_high: z.number().describe('upper bound of the two-sided 1 − alpha interval, log odds'),
  odds_ratio: z.number().min(0).describe('exp(estimate), four significant digits'),
  odds_ratio_ci_low: z.number().min(0).describe('exp(ci_low)'),
  odds_ratio_ci_high: z.number().min(0).describe('exp(ci_high)'),
  z: z.number().nullable().describe('estimate / standard_error; null while provisional'),
  p_value: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('two-sided fixed-horizon p-value, four significant digits; null while provisional'),
});
/** An {@link EffectFigures}. */
export type EffectFigures = z.infer<typeof EffectFigures>;

/** The labels of a verdict, the worst that applies (README, "Deployments and verification"). */
export const VerdictLabel = z.enum([
  'observational',
  'uncontrolled',
  'unreliable: pre_trend',
  'unreliable: volume_shift',
]);

/** A control context a verification counted. */
export const ControlContextFigures = z.object({
  context_id: z.uuid(),
  before_signals: z.int().min(0).describe('its signals in the before-window'),
  after_signals: z.int().min(0).describe('its signals in the after-window'),
});

/** Counts of the pooled control contexts in one window. */
export const ControlWindowFigures = z.object({
  signals: z.int().min(0),
  negative: z.int().min(0).describe('signals of the covered failing types'),
  negative_rate: z.number().min(0).max(1).nullable().describe('four decimals; null without signals'),
});

/** The comparison of a deployment's windows (README, "Deployments and verification"). */
export const VerificationResult = z.object({
  verdict: VerdictName,
  reason: z
    .enum(['significant', 'too_few_signals', 'not_significant', 'unreliable', 'provisional'])
    .describe(
      "too_few_signals: a compared cell has fewer than min_signals; not_significant: the effect's " +
        '(Holm-adjusted) p-value >= alpha; unreliable: the placebo or the traffic check failed (see label); ' +
        'provisional: the after-window is open, only the monitor may report a regression',
    ),
  provisional: z
    .boolean()
    .describe('true while the after-window is open: the figures cover the time elapsed so far'),
  provisional_note: z
    .string()
    .nullable()
    .describe('while provisional: "not final", and what the open-window monitor says instead'),
  label: VerdictLabel.describe(
    'observational: controlled but not randomized; uncontrolled: no usable control contexts, before/after ' +
      'only; unreliable: pre_trend (the placebo on the before period is significant) or volume_shift ' +
      '(the traffic check is significant)',
  ),
  effect: EffectFigures.extend({
    adjusted_p_value: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .describe('Holm-adjusted across the covered types with the pooled test; null while provisional'),
  })
    .nullable()
    .describe(
      'the estimated effect of the change: a difference-in-differences of the failing log odds (treated ' +
        'against control, before against after), or before/after when uncontrolled; null without signals',
    ),
  method: z.object({
    estimator: z
      .enum(['did', 'before_after'])
      .describe('did: difference-in-differences against the controls; before_after: treated only'),
    treated_contexts: z.array(z.uuid()).describe('the contexts the change touched'),
    control_selection: z
      .enum(['automatic', 'explicit'])
      .describe("automatic: the product's other contexts with at least min_signals in each window"),
    control_contexts: z.array(ControlContextFigures).describe('the control contexts counted'),
    signal_types: z
      .array(z.string())
      .describe("the failing types covered (the proposal's leading ones); empty: every negative signal"),
    windows: z.object({
      before: VerificationWindow,
      after: VerificationWindow,
      placebo_before: VerificationWindow.nullable().describe(
        "the placebo's before-window, one period earlier; null on verdicts stored before the placebo existed",
      ),
      placebo_after: VerificationWindow.nullable().describe("the placebo's after-window: the before-window"),
      period_minutes: z
        .int()
        .describe('how far the before-window lies behind the after-window: whole weeks, so weekdays match'),
      whole_weeks: z.boolean().describe('each window is a whole number of weeks'),
      reweighted: z
        .boolean()
        .describe("the before-window's counts are reweighted to the after-window's hour-of-week mix"),
    }),
  }),
  control: z
    .object({ before: ControlWindowFigures, after: ControlWindowFigures })
    .nullable()
    .describe('the pooled control contexts; null when none was usable'),
  naive: EffectFigures.nullable().describe(
    "the before/after log-odds effect of the treated contexts alone, beside the controlled effect (the old test's view)",
  ),
  placebo: EffectFigures.extend({
    significant: z.boolean().describe('p_value < alpha: the groups already drifted apart before the change'),
  })
    .nullable()
    .describe("the same estimate one window earlier (a fake deployment at the before-window's start)"),
  traffic: z
    .object({
      chi_square: z.number().min(0),
      p_value: z.number().min(0).max(1),
      expected_treated_after: z.number().min(0).describe('treated after-window signals the control predicts'),
      observed_treated_after: z.int().min(0),
      significant: z.boolean().describe('p_value < alpha: the volume shifted, rates may not compare'),
    })
    .nullable()
    .describe('the volume check (chi-square, 1 degree of freedom); null without controls'),
  per_type: z
    .array(
      z.object({
        signal_type: z.string().nullable().describe('null: every negative signal'),
        effect: EffectFigures.nullable(),
        adjusted_p_value: z
          .number()
          .min(0)
          .max(1)
          .nullable()
          .describe('Holm-adjusted; null while provisional'),
      }),
    )
    .describe('the effect per covered failing type'),
  monitor: z
    .object({
      always_valid_p_value: z.number().min(0).max(1),
      regression_detected: z.boolean().describe('the always-valid boundary for harm was crossed'),
    })
    .nullable()
    .describe('while provisional: the always-valid (mSPRT) monitor, safe to read at any time; else null'),
  before: WindowFigures.describe('the treated contexts in the before-window (raw counts)'),
  after: WindowFigures.describe('the treated contexts in the after-window (raw counts)'),
  z: z
    .number()
    .nullable()
    .describe('naive two-proportion z statistic (after minus before), four decimals; null while provisional'),
  p_value: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('naive two-sided p-value, four significant digits; null while provisional'),
  alpha: z.number().describe('significance level'),
  min_signals: z.int().describe('fewest signals each compared cell needs for a verdict'),
  computed_at: z.iso.datetime(),
});
/** A {@link VerificationResult}. */
export type VerificationResult = z.infer<typeof VerificationResult>;

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
  contexts: z
    .array(z.uuid())
    .min(1)
    .max(MAX_TREATED_CONTEXTS)
    .refine((ids) => new Set(ids).size === ids.length, 'must not repeat a context')
    .optional()
    .describe("the contexts the change touched, of the proposal's product (default: the proposal's context)"),
  control_contexts: z
    .array(z.uuid())
    .min(1)
    .max(MAX_CONTROL_CONTEXTS)
    .refine((ids) => new Set(ids).size === ids.length, 'must not repeat a context')
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

/** GET /api/context/{id}/series query. */
export const SeriesQuery = z.object({
  from: z.iso.datetime({ offset: true }).optional().describe('inclusive; default: 7 days before to'),
  to: z.iso.datetime({ offset: true }).optional().describe('exclusive; default: now'),
  bucket: z.enum(['hour', 'day']).default('hour').describe('bucket length, aligned to UTC'),
});

/** One bucket of GET /api/context/{id}/series. */
export const SeriesPoint = z.object({
  start: z.iso.datetime(),
  signals: z.int().min(0),
  negative: z.int().min(0),
  negative_rate: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('negative / signals, four decimals; null for an empty bucket'),
});

/** PATCH /api/products/{id} (rename) body. */
export const RenameProductBody = z.object({ name: StorableString.trim().min(1).max(100) });

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
 * Arguments of the MCP tool `send_signals` (README, "MCP"): 1 to `maxBatch` signals, each the
 * {@link SignalInput} of POST /api/signals.
 * @param maxBatch MAX_BATCH_SIZE, written into the schema as `maxItems`
 */
export function sendSignalsArgs(maxBatch: number) {
  return z.object({
    signals: z
      .array(SignalInput)
      .min(1)
      .max(maxBatch)
      .describe(`1 to ${maxBatch} signals, stored all or nothing`),
  });
}
/** Parsed arguments of `send_signals`. */
export type SendSignalsArgs = z.infer<ReturnType<typeof sendSignalsArgs>>;

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

/** POST /api/products body. */
export const CreateProductBody = z.object({ name: StorableString.trim().min(1).max(100) });

/** 200 answer of POST /api/products: the key is shown this once. */
export const CreatedProduct = z.object({
  id: z.uuid(),
  name: z.string(),
  api_key: z.string().startsWith('spk_'),
});

/** A product as listed by GET /api/products (without its key). */
export const ProductSummary = z.object({
  id: z.uuid(),
  name: z.string(),
  api_key_prefix: z.string().describe('first characters of the key, for recognising it'),
  context_count: z.int(),
  created_at: z.iso.datetime(),
});

/** A {@link ProductSummary}. */
export type ProductSummary = z.infer<typeof ProductSummary>;

/** What a product holds: what deleting it removes. */
export const ProductContents = z.object({
  contexts: z.int().min(0),
  signals: z.int().min(0),
  proposals: z.int().min(0),
  deployments: z.int().min(0),
});

/** GET /api/products/{id}: the product and what it holds. */
export const ProductDetails = ProductSummary.extend({ contents: ProductContents });

/** 200 answer of DELETE /api/products/{id}. */
export const DeletedProduct = z.object({
  id: z.uuid(),
  deleted: z.literal(true),
  contents: ProductContents.describe('what was deleted with the product (and its key)'),
});

const SignalTypeList = z.array(SignalType).max(200);

/** POST /api/context body (README, "Endpoints"). */
export const CreateContextBody = z.object({
  product_id: z.uuid(),
  name: StorableString.trim().min(1).max(100),
  content: StorableString.trim().min(1).max(10_000),
  positive_signals: SignalTypeList.default([]),
  negative_signals: SignalTypeList.default([]),
});

/** PATCH /api/context body: the id plus at least one field to change. */
export const UpdateContextBody = z
  .object({
    id: z.uuid(),
    name: StorableString.trim().min(1).max(100).optional(),
    content: StorableString.trim().min(1).max(10_000).optional(),
    positive_signals: SignalTypeList.optional(),
    negative_signals: SignalTypeList.optional(),
  })
  .refine(
    (v) =>
      v.name !== undefined ||
      v.content !== undefined ||
      v.positive_signals !== undefined ||
      v.negative_signals !== undefined,
    {
      message: 'give at least one of name, content, positive_signals, negative_signals',
    },
  );

/** DELETE /api/context query. */
export const ContextIdQuery = z.object({ id: z.uuid().meta({ description: 'the context to delete' }) });

/** A context on the wire (README, "Endpoints"). */
export const Context = z.object({
  id: z.uuid(),
  product_id: z.uuid(),
  name: z.string(),
  content: z.string(),
  positive_signals: z.array(z.string()),
  negative_signals: z.array(z.string()),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
/** A {@link Context}. */
export type Context = z.infer<typeof Context>;

/** Sign-up and log-in body. */
export const Credentials = z.object({
  email: z
    .email()
    .max(254)
    .transform((e) => e.toLowerCase()),
  password: z.string().min(1).max(1024),
});

/** Sign-up body: passwords of 10 to 1024 characters. */
export const SignupBody = Credentials.extend({
  password: z.string().min(10, 'at least 10 characters').max(1024),
});

/** The signed-in user with plan, limits, usage and the CSRF token for writes. */
export const Me = z.object({
  user: z.object({
    id: z.uuid(),
    email: z.string(),
    plan: PlanName,
    created_at: z.iso.datetime(),
  }),
  csrf_token: z.string().describe('send it as x-csrf-token on every cookie-authenticated write'),
  limits: z.object({
    signals_per_month: z.int(),
    proposals_per_month: z.int().nullable(),
    deployments_per_month: z.int().nullable(),
    products: z.int().nullable(),
  }),
  usage: z.object({
    month: z.string(),
    signals: z.int(),
    proposals: z.int(),
    deployments: z.int(),
    products: z.int(),
    resets_at: z.iso.datetime(),
  }),
});
/** A {@link Me}. */
export type Me = z.infer<typeof Me>;

/** Answer of POST /api/analysis/run. */
export const AnalysisRunResult = z.object({
  contexts_analyzed: z.int(),
  proposals_created: z.int(),
  proposals: z.array(Proposal),
});
