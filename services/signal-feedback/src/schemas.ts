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

/** One signal as POST /api/signals takes it (README, "Endpoints"). */
export const SignalInput = z.object({
  type: SignalType,
  payload: SignalPayload.optional(),
  context_id: z.uuid().optional(),
});
/** A parsed {@link SignalInput}. */
export type SignalInput = z.infer<typeof SignalInput>;

/**
 * One signal as POST /api/ingest takes it (README, "Endpoints"): the type under `type`, `event` or
 * `event_type` and the payload under `payload`, `data` or `properties` (first present name wins, in that
 * order). Normalised to a {@link SignalInput}.
 */
export const IngestSignalInput = z
  .object({
    type: SignalType.optional(),
    event: SignalType.optional(),
    event_type: SignalType.optional(),
    payload: SignalPayload.optional(),
    data: SignalPayload.optional(),
    properties: SignalPayload.optional(),
    context_id: z.uuid().optional(),
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
    return { type, ...(payload ? { payload } : {}), ...(v.context_id ? { context_id: v.context_id } : {}) };
  });

/** 200 answer of the ingest endpoints. */
export const ReceivedResponse = z.object({ received: z.int().min(0).describe('number of signals accepted') });

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
});
/** A {@link Proposal}. */
export type Proposal = z.infer<typeof Proposal>;

/** GET /api/proposals query. */
export const ProposalsQuery = z.object({
  status: ProposalStatus.optional().meta({ description: 'only proposals in this state' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(50)
    .meta({ description: 'most proposals returned (highest priority first)' }),
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
  limit: z
    .number()
    .int()
    .min(1)
    .max(200)
    .default(50)
    .meta({ description: 'most proposals returned (highest priority first)' }),
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
    products: z.int().nullable(),
  }),
  usage: z.object({
    month: z.string(),
    signals: z.int(),
    proposals: z.int(),
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
