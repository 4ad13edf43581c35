import { validationError, type ValidationIssue } from '@repo/errors';
import type { Sentiment, SignalRow } from '../data/signals';
import type { SignalInput } from '../schemas/signals';

/** A context's signal lists (README, "Routing, classification and analysis"). */
export interface ClassifyingContext {
  id: string;
  positiveSignals: string[];
  negativeSignals: string[];
}

/**
 * A signal after routing and classification: the row the repository stores (`occurredAt`, the
 * client's `timestamp` normalised to ISO 8601 UTC in milliseconds; undefined: time of receipt).
 */
export type RoutedSignal = SignalRow;

/**
 * How far before the time of receipt a client `timestamp` may be, in milliseconds: 7 days (README,
 * "Timestamps and message ids"). That is the longest verification window (`window_minutes` 10080), and
 * covers a client that queued signals offline for a week; an older signal would land in windows the
 * analysis and the verification have already judged.
 */
export const SIGNAL_TIMESTAMP_MAX_PAST_MS = 7 * 24 * 3_600_000;

/**
 * How far after the time of receipt a client `timestamp` may be, in milliseconds: 10 minutes of clock
 * drift (README, "Timestamps and message ids"). A later one would sit in a window that has not begun.
 */
export const SIGNAL_TIMESTAMP_MAX_FUTURE_MS = 10 * 60_000;

/**
 * How long a `messageId` is remembered per product, in milliseconds: 24 hours (README, "Timestamps and
 * message ids"). Counted from the time of receipt of the signal that carried it.
 */
export const MESSAGE_ID_WINDOW_MS = 24 * 3_600_000;

/**
 * The instant of a client `timestamp` when it lies within the accepted skew of `receivedAt` (README,
 * "Timestamps and message ids").
 * @param timestamp ISO 8601 date-time with `Z` or an offset (already validated by `SignalTimestamp`)
 * @returns the instant as ISO 8601 UTC, or the reason it is refused
 */
export function checkSignalTime(
  timestamp: string,
  receivedAt: Date,
):
  | { ok: true; at: string }
  | { ok: false; code: 'invalid_format' | 'too_small' | 'too_big'; message: string } {
  const at = Date.parse(timestamp);
  if (Number.isNaN(at))
    return { ok: false, code: 'invalid_format', message: 'is not a valid ISO 8601 date-time' };
  const skew = at - receivedAt.getTime();
  if (skew < -SIGNAL_TIMESTAMP_MAX_PAST_MS) {
    return {
      ok: false,
      code: 'too_small',
      message: `is more than 7 days before the time of receipt (${receivedAt.toISOString()}): send older signals without a timestamp, or not at all`,
    };
  }
  if (skew > SIGNAL_TIMESTAMP_MAX_FUTURE_MS) {
    return {
      ok: false,
      code: 'too_big',
      message: `is more than 10 minutes after the time of receipt (${receivedAt.toISOString()}): check the client's clock`,
    };
  }
  return { ok: true, at: new Date(at).toISOString() };
}

/**
 * Classes a signal type for a context: positive when listed in `positive_signals`, negative when in
 * `negative_signals`, otherwise (or without a context) neutral (README, "Routing, classification and
 * analysis").
 */
export function classify(type: string, context: ClassifyingContext | undefined): Sentiment {
  if (!context) return 'neutral';
  if (context.negativeSignals.includes(type)) return 'negative';
  if (context.positiveSignals.includes(type)) return 'positive';
  return 'neutral';
}

/** The times of a batch without client timestamps: every signal takes the time of receipt. */
const NO_TIMES: readonly (string | undefined)[] = Object.freeze([]);

/**
 * Checks every client `timestamp` of a batch against the accepted skew (README, "Timestamps and
 * message ids"), all or nothing like the rest of the batch.
 * @param receivedAt the time of receipt
 * @param location the path of the batch in field errors: `body` (HTTP) or `arguments.signals` (MCP)
 * @returns each signal's time as ISO 8601 UTC, undefined where it sent none
 * @throws AppError `invalid_request` (400, docs/architecture.md "One error dialect") listing every
 *   signal whose timestamp is out of bounds in `details.issues` (`{ path:
 *   "<location>.<index>.timestamp", code: "too_small" | "too_big", message }`)
 */
export function checkSignalTimes(
  signals: SignalInput[],
  receivedAt: Date,
  location = 'body',
): readonly (string | undefined)[] {
  // Most batches carry no timestamp: they allocate nothing here.
  if (!signals.some((s) => s.timestamp !== undefined)) return NO_TIMES;
  const problems: ValidationIssue[] = [];
  const times = signals.map((s, i) => {
    if (s.timestamp === undefined) return undefined;
    const checked = checkSignalTime(s.timestamp, receivedAt);
    if (checked.ok) return checked.at;
    problems.push({ path: `${location}.${i}.timestamp`, code: checked.code, message: checked.message });
    return undefined;
  });
  if (problems.length > 0) throw validationError(problems);
  return times;
}

/**
 * Routes and classes a batch for a product (README, "Routing, classification and analysis"): a `context_id`
 * must be one of the product's contexts; a signal without one goes to the product's only context when
 * it has exactly one, and stays unrouted otherwise. Each routed signal carries its checked time (see
 * {@link checkSignalTimes}) and its `messageId`.
 * @param times each signal's checked client time, as {@link checkSignalTimes} returns them
 * @param location the path of the batch in field errors: `body` (HTTP) or `arguments.signals` (MCP)
 * @throws AppError `invalid_request` (400, docs/architecture.md "One error dialect") listing every
 *   signal whose context_id is not the product's in `details.issues` (`{ path:
 *   "<location>.<index>.context_id", code: "invalid_value", message }`)
 */
export function routeSignals(
  signals: SignalInput[],
  contexts: ClassifyingContext[],
  location = 'body',
  times: readonly (string | undefined)[] = [],
): RoutedSignal[] {
  const byId = new Map(contexts.map((c) => [c.id, c]));
  const only = contexts.length === 1 ? contexts[0] : undefined;
  const problems: ValidationIssue[] = [];
  const routed = signals.map((s, i): RoutedSignal => {
    let context: ClassifyingContext | undefined;
    if (s.context_id !== undefined) {
      context = byId.get(s.context_id.toLowerCase());
      if (!context)
        problems.push({
          path: `${location}.${i}.context_id`,
          code: 'invalid_value',
          message: 'is not a context of this product',
        });
    } else context = only;
    // One shape for every row, without a spread: this runs for every signal of every batch.
    return {
      type: s.type,
      payload: s.payload,
      contextId: context?.id ?? null,
      sentiment: classify(s.type, context),
      occurredAt: times[i],
      messageId: s.messageId,
    };
  });
  if (problems.length > 0) throw validationError(problems);
  return routed;
}
