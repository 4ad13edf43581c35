import { AppError, fieldErrors, isAppError, type FieldError } from '@repo/errors';
import type { ApiKeyCache } from '@repo/service-kit';
import type { z } from 'zod';
import type { KeyOwner, SignalRepository } from '../data/signals';
import {
  isContextForeignKeyViolation,
  isProductForeignKeyViolation,
  UnstorableTextError,
} from '../data/signals';
import { monthKey, nextMonthStart, PLAN_LIMITS } from './plans';
import { routeSignals, type RoutedSignal } from './signals';
import type { SignalInput } from '../schemas';
import { SIGNAL_FEEDBACK_ERRORS } from './errors';

/**
 * Parses a request body that is one signal object or an array of them (README, "Endpoints").
 * @param body the parsed JSON body (undefined when none was sent)
 * @param schema the element schema (plain or with the ingest aliases)
 * @param maxBatch the documented maximum batch size
 * @throws AppError `payload_too_large` (413) for a longer array; `invalid_request` (400) for a missing
 *   body, a non-object element or a missing/invalid type, listing every bad signal by index
 */
export function parseSignalBatch(
  body: unknown,
  schema: z.ZodType<SignalInput, unknown>,
  maxBatch: number,
): SignalInput[] {
  if (body === undefined || body === null || (typeof body !== 'object' && !Array.isArray(body))) {
    throw new AppError(
      'invalid_request',
      'Body must be a signal object or an array of signal objects (Content-Type: application/json)',
    );
  }
  const items: unknown[] = Array.isArray(body) ? body : [body];
  if (items.length > maxBatch) {
    throw new AppError(
      'payload_too_large',
      `A batch holds at most ${maxBatch} signals; this one has ${items.length}`,
      {
        details: { max_batch_size: maxBatch, received: items.length },
      },
    );
  }
  const problems: FieldError[] = [];
  const parsed: SignalInput[] = [];
  items.forEach((item, i) => {
    const r = schema.safeParse(item);
    if (r.success) parsed.push(r.data);
    else problems.push(...fieldErrors(r.error, Array.isArray(body) ? `body.${i}` : 'body'));
  });
  if (problems.length > 0) {
    throw new AppError(
      'invalid_request',
      `Invalid signal(s): ${problems
        .slice(0, 5)
        .map((p) => `${p.path}: ${p.message}`)
        .join('; ')}`,
      { details: problems },
    );
  }
  return parsed;
}

/**
 * Routes, classes and stores a batch for the authenticated product under its owner's monthly signal
 * quota (README, "Plans and quotas"): all or nothing.
 * @returns the number of signals accepted
 * @param cached the key's owner as authenticated (possibly from {@link ApiKeyCache}); re-read when a
 *   signal names a context it does not list or the insert meets a deleted context
 * @param location the path of the batch in field errors: `body` (HTTP) or `arguments.signals` (MCP)
 * @throws AppError `invalid_request` (400) for a context_id of another product (or one deleted meanwhile);
 *   `unauthorized` (401) when the product was deleted since its key was authenticated;
 *   `quota_exceeded` (429, Retry-After until the month resets) when the batch would cross the limit
 */
export async function acceptSignals(
  repo: SignalRepository,
  keys: ApiKeyCache<KeyOwner>,
  cached: KeyOwner,
  signals: SignalInput[],
  now: Date,
  location = 'body',
): Promise<number> {
  if (signals.length === 0) return 0;
  let owner = cached;
  let rows: RoutedSignal[];
  try {
    rows = routeSignals(signals, owner.contexts, location);
  } catch (err) {
    // A context created since the owner was cached: read it again before refusing.
    if (!isAppError(err)) throw err;
    owner = (await keys.refresh(owner.apiKeyHash)) ?? owner;
    rows = routeSignals(signals, owner.contexts, location);
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
      });
      break;
    } catch (err) {
      if (err instanceof UnstorableTextError) {
        throw new AppError(
          'invalid_request',
          'A signal type or payload contains a NUL character or an unpaired surrogate, which cannot be stored',
          { cause: err },
        );
      }
      if (isProductForeignKeyViolation(err)) {
        // The product was deleted since its key was authenticated: the key no longer exists.
        keys.invalidate((cached) => cached.productId === owner.productId);
        throw new AppError('unauthorized', 'API key invalid', { cause: err });
      }
      if (!isContextForeignKeyViolation(err)) throw err;
      // A context deleted since the owner was cached (or meanwhile): route again with fresh contexts.
      if (attempt > 0)
        throw new AppError('invalid_request', 'context_id does not belong to this product', { cause: err });
      owner = (await keys.refresh(owner.apiKeyHash)) ?? owner;
      rows = routeSignals(signals, owner.contexts, location);
    }
  }
  const limit = PLAN_LIMITS[owner.plan].signalsPerMonth;
  if (!outcome.ok) {
    const resetsAt = nextMonthStart(now);
    throw new AppError(
      SIGNAL_FEEDBACK_ERRORS.quota_exceeded,
      `Monthly signal limit of the ${owner.plan} plan reached: ${outcome.used} of ${limit} used, this batch has ${signals.length}`,
      {
        details: {
          plan: owner.plan,
          limit,
          used: outcome.used,
          requested: signals.length,
          resets_at: resetsAt.toISOString(),
        },
        headers: {
          'Retry-After': String(Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))),
        },
      },
    );
  }
  return outcome.inserted;
}
