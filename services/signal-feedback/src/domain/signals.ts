import { AppError } from '@repo/errors';
import type { Sentiment } from '../data/signals';
import type { SignalInput } from '../schemas';

/** A context's signal lists (README, "Routing, classification and analysis"). */
export interface ClassifyingContext {
  id: string;
  positiveSignals: string[];
  negativeSignals: string[];
}

/** A signal after routing and classification. */
export interface RoutedSignal {
  type: string;
  payload?: Record<string, unknown>;
  contextId: string | null;
  sentiment: Sentiment;
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

/**
 * Routes and classes a batch for a product (README, "Routing, classification and analysis"): a `context_id`
 * must be one of the product's contexts; a signal without one goes to the product's only context when
 * it has exactly one, and stays unrouted otherwise.
 * @param location the path of the batch in field errors: `body` (HTTP) or `arguments.signals` (MCP)
 * @throws AppError `invalid_request` (400) listing every signal whose context_id is not the product's
 *   (`details: [{ path: "<location>.<index>.context_id", message }]`)
 */
export function routeSignals(
  signals: SignalInput[],
  contexts: ClassifyingContext[],
  location = 'body',
): RoutedSignal[] {
  const byId = new Map(contexts.map((c) => [c.id, c]));
  const only = contexts.length === 1 ? contexts[0] : undefined;
  const problems: { path: string; message: string }[] = [];
  const routed = signals.map((s, i): RoutedSignal => {
    let context: ClassifyingContext | undefined;
    if (s.context_id !== undefined) {
      context = byId.get(s.context_id.toLowerCase());
      if (!context)
        problems.push({ path: `${location}.${i}.context_id`, message: 'not a context of this product' });
    } else context = only;
    // One shape for every row, without a spread: this runs for every signal of every batch.
    return {
      type: s.type,
      payload: s.payload,
      contextId: context?.id ?? null,
      sentiment: classify(s.type, context),
    };
  });
  if (problems.length > 0) {
    throw new AppError(
      'invalid_request',
      `context_id does not belong to this product (${problems.length} signal(s))`,
      { details: problems },
    );
  }
  return routed;
}
