import { AppError, fieldErrors, isAppError, validationError, type ValidationIssue } from '@repo/errors';
import type { z } from 'zod';
import type { KeyOwner, SignalRepository } from '../data/signals';
import {
  isContextForeignKeyViolation,
  isProductForeignKeyViolation,
  UnstorableTextError,
} from '../data/signals';
import { monthKey, PLAN_LIMITS } from './plans';
import { checkSignalTimes, MESSAGE_ID_WINDOW_MS, routeSignals, type RoutedSignal } from './signals';
import { signalQuotaError } from './signals-quota';
import type { SignalInput } from '../schemas/signals';
import type { ProductKeyCache } from './product-key';

/**
 * Parses a request body that is one signal object or an array of them (README, "Endpoints").
 * @param body the parsed JSON body (undefined when none was sent)
 * @param schema the element schema (plain or with the ingest aliases)
 * @param maxBatch the documented maximum batch size
 * @throws AppError `payload_too_large` (413) for a longer array; `invalid_request` (400, the shared
 *   validation error of docs/architecture.md, "One error dialect") for a missing body, a non-object
 *   element, a missing/invalid type or a field a signal does not declare, listing every problem in
 *   `details.issues` (`body.3.type`, `body.0.sentAt`)
 */
export function parseSignalBatch(
  body: unknown,
  schema: z.ZodType<SignalInput, unknown>,
  maxBatch: number,
): SignalInput[] {
  if (body === undefined || body === null || (typeof body !== 'object' && !Array.isArray(body))) {
    throw validationError([
      {
        path: 'body',
        code: body === undefined ? 'required' : 'invalid_type',
        message: 'must be a signal object or an array of signal objects (Content-Type: application/json)',
      },
    ]);
  }
  const items: unknown[] = Array.isArray(body) ? body : [body];
  if (items.length > maxBatch) {
    throw new AppError(
      'payload_too_large',
      `A batch holds at most ${maxBatch} signals and this one has ${items.length}: split it into batches of at most ${maxBatch}`,
      {
        details: { max_batch_size: maxBatch, received: items.length },
      },
    );
  }
  const problems: ValidationIssue[] = [];
  const parsed: SignalInput[] = [];
  items.forEach((item, i) => {
    const r = schema.safeParse(item);
    if (r.success) parsed.push(r.data);
    else problems.push(...fieldErrors(r.error, Array.isArray(body) ? `body.${i}` : 'body'));
  });
  if (problems.length > 0) throw validationError(problems);
  return parsed;
}

/** What an accepted batch answers (README, "Timestamps and message ids"): `{ received, duplicates? }`. */
export interface IngestResult {
  /** Signals stored and counted by this request. */
  received: number;
  /** Signals acknowledged but skipped for a `messageId` already received; present when above 0. */
  duplicates?: number;
}

/**
 * Checks the client times, routes, classes and stores a batch for the authenticated product under its
 * owner's monthly signal quota (README, "Plans and quotas" and "Timestamps and message ids"): all or
 * nothing; a signal whose `messageId` this product sent in the last 24 hours (or earlier in the batch)
 * is acknowledged, not stored or counted again.
 * @returns the number of signals accepted, and of duplicates when there were any
 * @param cached the key's owner as authenticated (possibly from {@link ApiKeyCache}); re-read when a
 *   signal names a context it does not list or the insert meets a deleted context
 * @param now the time of receipt: the bounds of client timestamps and the month of the quota
 * @param location the path of the batch in field errors: `body` (HTTP) or `arguments.signals` (MCP)
 * @throws AppError `invalid_request` (400) for a timestamp out of bounds, or a context_id of another
 *   product (or one deleted meanwhile); `unauthorized` (401) when the product was deleted since its key
 *   was authenticated; `quota_exceeded` (429) when the new signals would cross the limit, worded by
 *   {@link signalQuotaError}
 */
export async function acceptSignals(
  repo: SignalRepository,
  keys: ProductKeyCache,
  cached: KeyOwner,
  signals: SignalInput[],
  now: Date,
  location = 'body',
): Promise<IngestResult> {
  if (signals.length === 0) return { received: 0 };
  const times = checkSignalTimes(signals, now, location);
  let owner = cached;
  let rows: RoutedSignal[];
  try {
    rows = routeSignals(signals, owner.contexts, location, times);
  } catch (err) {
    // A context created since the owner was cached: read it again before refusing.
    if (!isAppError(err)) throw err;
    owner = (await keys.refresh(owner.apiKeyHash)) ?? owner;
    rows = routeSignals(signals, owner.contexts, location, times);
  }
  const month = monthKey(now);
  let outcome;
  for (let attempt = 0; ; attempt++) {
    try {
      outcome = await repo.insertWithinQuota({
        userId: owner.userId,
        productId: owner.productId,
        month,
        limit: PLAN_LIMITS[owner.plan].signalsPerMonth,
        rows,
        messageIdWindowMs: MESSAGE_ID_WINDOW_MS,
      });
      break;
    } catch (err) {
      if (err instanceof UnstorableTextError) {
        throw validationError([
          {
            path: location,
            code: 'invalid_characters',
            message:
              'has a signal type or payload with a NUL character or an unpaired surrogate, which cannot be stored',
          },
        ]);
      }
      if (isProductForeignKeyViolation(err)) {
        // The product was deleted since its key was authenticated: the key no longer exists.
        keys.invalidate((cached) => cached.productId === owner.productId);
        throw new AppError('unauthorized', 'API key invalid', { cause: err });
      }
      if (!isContextForeignKeyViolation(err)) throw err;
      // A context deleted since the owner was cached (or meanwhile): route again with fresh contexts.
      if (attempt > 0)
        throw validationError([
          {
            path: location,
            code: 'invalid_value',
            message: 'names a context_id that no longer belongs to this product',
          },
        ]);
      owner = (await keys.refresh(owner.apiKeyHash)) ?? owner;
      rows = routeSignals(signals, owner.contexts, location, times);
    }
  }
  if (!outcome.ok) {
    throw signalQuotaError(
      { plan: owner.plan, used: outcome.used, requested: outcome.requested, duplicates: outcome.duplicates },
      now,
    );
  }
  return outcome.duplicates > 0
    ? { received: outcome.inserted, duplicates: outcome.duplicates }
    : { received: outcome.inserted };
}
