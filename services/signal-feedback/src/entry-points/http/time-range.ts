import { validationError } from '@repo/errors';

/** How far back a range without `from` reaches: 7 days, in milliseconds. */
const DEFAULT_SPAN_MS = 7 * 24 * 3_600_000;

/**
 * The `[from, to)` range of a query with optional ISO 8601 `from` and `to` (README, "Dashboard",
 * range and bucket): `to` defaults to `now`, `from` to 7 days before `to`.
 * @throws AppError `invalid_request` (400) at `query.from` when `from` is not before `to`
 */
export function queryRange(query: { from?: string; to?: string }, now: Date): { from: Date; to: Date } {
  const to = query.to !== undefined ? new Date(query.to) : now;
  const from = query.from !== undefined ? new Date(query.from) : new Date(to.getTime() - DEFAULT_SPAN_MS);
  if (from.getTime() >= to.getTime())
    throw validationError([{ path: 'query.from', code: 'custom', message: 'must be before `to`' }]);
  return { from, to };
}
