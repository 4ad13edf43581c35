import { fieldErrors, isAppError, type ValidationIssue } from '@repo/errors';
import type { SignalRow } from '../data/signals';
import { SignalInput } from '../schemas/signals';
import { routeSignals, type ClassifyingContext } from './signals';

/**
 * How far back an imported signal's `timestamp` may be, in milliseconds: 400 days (README, "Importing
 * history"), a year of history plus a month. The public API keeps its 7 days.
 */
export const IMPORT_MAX_PAST_MS = 400 * 24 * 3_600_000;

/**
 * Longest line of an import file, in bytes: 64 KiB, the public endpoint's body limit (README,
 * "Importing history"). A longer line is refused without being held in memory.
 */
export const IMPORT_MAX_LINE_BYTES = 64 * 1024;

/** One line of an import file: the row to store, or why the line is refused. */
export type ImportLine = { ok: true; row: SignalRow } | { ok: false; issues: ValidationIssue[] };

/**
 * Parses one NDJSON line of a history import (README, "Importing history"): one signal in the wire
 * shape of POST /api/signals, validated by the same {@link SignalInput} schema, whose `timestamp` is
 * required and lies in `[now − 400 days, now]`, and whose `context_id` (if any) is one of the product's
 * contexts; then routed and classed as the endpoint does.
 * @param text the line, without its newline
 * @param contexts the product's contexts
 * @param now the time of the import: the bounds of `timestamp`
 * @returns the routed row (with `occurredAt` as ISO 8601 UTC), or the field errors (paths relative to
 *   the signal: `timestamp`, `payload.x`, `(root)` for a line that is not JSON)
 */
export function parseImportLine(text: string, contexts: ClassifyingContext[], now: Date): ImportLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, issues: [{ path: '(root)', code: 'invalid_format', message: 'is not valid JSON' }] };
  }
  const parsed = SignalInput.safeParse(value);
  if (!parsed.success) return { ok: false, issues: fieldErrors(parsed.error, undefined, value) };
  const signal = parsed.data;
  if (signal.timestamp === undefined)
    return {
      ok: false,
      issues: [{ path: 'timestamp', code: 'required', message: 'is required: imported history is dated' }],
    };
  const at = Date.parse(signal.timestamp);
  if (Number.isNaN(at))
    return {
      ok: false,
      issues: [{ path: 'timestamp', code: 'invalid_format', message: 'is not a valid ISO 8601 date-time' }],
    };
  if (at > now.getTime())
    return {
      ok: false,
      issues: [
        {
          path: 'timestamp',
          code: 'too_big',
          message: `is in the future (the import started at ${now.toISOString()})`,
        },
      ],
    };
  if (at < now.getTime() - IMPORT_MAX_PAST_MS)
    return {
      ok: false,
      issues: [{ path: 'timestamp', code: 'too_small', message: 'is more than 400 days old' }],
    };
  try {
    const [row] = routeSignals([signal], contexts, 'line', [new Date(at).toISOString()]);
    if (!row) throw new Error('routing returned no row');
    return { ok: true, row };
  } catch (err) {
    if (!isAppError(err)) throw err;
    return {
      ok: false,
      issues: [{ path: 'context_id', code: 'invalid_value', message: 'is not a context of this product' }],
    };
  }
}
