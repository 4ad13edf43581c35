import { z } from 'zod';
import { StorableString } from './common';

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
