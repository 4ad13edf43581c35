import { AppError, isAppError } from '@repo/errors';
import { hashApiKey, type ApiKeyCache } from '@repo/service-kit';
import type { KeyOwner } from '../data/signals';
import { signalFeedbackKeys } from './api-keys';
import type { SignalFeedbackEvents } from '../metrics';

/**
 * The cache of product API keys (README, "API keys"): a key's SHA-256 to its product, the owner's plan
 * and the product's contexts. The composition root builds one, shared by the HTTP routes and the MCP tools.
 */
export type ProductKeyCache = ApiKeyCache<KeyOwner>;

/**
 * Checks a product API key as presented in `x-api-key`, `Authorization: Bearer` or `?key=` (README, "API keys"): malformed
 * keys are refused before any database work; the owner is found by the key's SHA-256 through the
 * {@link ApiKeyCache}, which compares the stored hash in constant time. Shared by the HTTP middleware
 * (`apiKeyAuth`) and the MCP tools, so both refuse with the same errors.
 * @param presented the key as sent; `undefined` or `''` when none was
 * @returns the product, its owner's plan and its contexts
 * @throws AppError `unauthorized` (401): `API key missing: send it in the x-api-key header or as
 *   Authorization: Bearer <key>` when none was sent, `API key invalid` when it is malformed or unknown
 */
export async function authenticateProductKey(
  keys: ProductKeyCache,
  presented: string | undefined,
): Promise<KeyOwner> {
  if (presented === undefined || presented === '')
    throw new AppError(
      'unauthorized',
      'API key missing: send it in the x-api-key header or as Authorization: Bearer <key>',
    );
  if (!signalFeedbackKeys.looksLike(presented)) throw new AppError('unauthorized', 'API key invalid');
  const owner = await keys.get(hashApiKey(presented));
  if (!owner) throw new AppError('unauthorized', 'API key invalid');
  return owner;
}

/** `signals_refused_total{reason}` of each refusal code (README, "Observability"). */
const REFUSAL_REASONS: Partial<Record<string, string>> = {
  quota_exceeded: 'quota',
  payload_too_large: 'too_large',
  invalid_request: 'invalid',
  invalid_json: 'invalid',
  unsupported_media_type: 'invalid',
};

/**
 * Runs the ingestion of one batch and counts it (README, "Observability"): the signals it stored in
 * `signals_accepted_total`, or, when it is refused with one of the refusal codes, each of the
 * batch's `count` signals in `signals_refused_total{reason}`. Shared by POST /api/signals,
 * POST /api/ingest and the MCP tool `send_signals`.
 * @param count the number of signals the caller sent (what a refusal counts)
 * @param ingest parses and stores the batch; returns `{ received }`, the number of signals stored
 *   (duplicates of a `messageId` are not counted as accepted)
 * @returns what `ingest` returned
 * @throws whatever `ingest` throws, unchanged
 */
export async function countIngestion<T extends { received: number }>(
  events: SignalFeedbackEvents | undefined,
  count: number,
  ingest: () => Promise<T>,
): Promise<T> {
  try {
    const result = await ingest();
    events?.signalsAccepted(result.received);
    return result;
  } catch (err) {
    const reason = isAppError(err) ? REFUSAL_REASONS[err.code] : undefined;
    if (reason) events?.signalsRefused(reason, count);
    throw err;
  }
}
