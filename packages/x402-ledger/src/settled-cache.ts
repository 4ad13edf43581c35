import type { ClaimOutcome, ClaimRequest, PaymentRecord } from './types';

/** Completed answers larger than this (bytes of body) are not kept in memory. */
const SETTLED_CACHE_MAX_BODY = 256 * 1024;

/**
 * Completed payments kept in memory so replays skip the database (README, "A payment is bound to its
 * request"): completed rows never change, so the copy is exact on every replica. Bounded by a count
 * and by the bytes of stored answers (UTF-16 code units of their text), least recently used first out.
 */
export class SettledCache {
  /** Completed payments by signature, least recently used first, with the bytes each holds. */
  private readonly settled = new Map<string, { record: PaymentRecord; bytes: number }>();
  private settledBytes = 0;

  /**
   * @param maxSize most payments kept (0: none)
   * @param maxBytes most bytes of stored answers kept
   */
  constructor(
    private readonly maxSize: number,
    private readonly maxBytes: number,
  ) {}

  /** The completed payment of `signature`, now the most recently used, or `undefined`. */
  get(signature: string): PaymentRecord | undefined {
    const known = this.settled.get(signature);
    if (!known) return undefined;
    this.settled.delete(signature);
    this.settled.set(signature, known);
    return known.record;
  }

  /**
   * Keeps a completed payment for later replays, evicting the least recently used beyond the count
   * and byte bounds.
   */
  remember(record: PaymentRecord): void {
    const response = record.response;
    const bytes =
      record.signature.length +
      (response ? response.body.length + JSON.stringify(response.headers).length : 0) +
      (record.requestHash?.length ?? 0);
    if (
      this.maxSize <= 0 ||
      (response && response.body.length > SETTLED_CACHE_MAX_BODY) ||
      bytes > this.maxBytes ||
      this.settled.has(record.signature)
    )
      return;
    this.settled.set(record.signature, { record, bytes });
    this.settledBytes += bytes;
    for (const [signature, entry] of this.settled) {
      if (this.settled.size <= this.maxSize && this.settledBytes <= this.maxBytes) break;
      this.settled.delete(signature);
      this.settledBytes -= entry.bytes;
    }
  }
}

/**
 * The outcome of a claim on a completed payment: another endpoint or network, a job conflict, another
 * request of the same synchronous endpoint (refused as another endpoint is: the stored answer is the
 * paying request's, and its signature is public on chain), or a replay.
 */
export function settledOutcome(record: PaymentRecord, request: ClaimRequest): ClaimOutcome {
  if (record.endpoint !== request.endpoint || record.network !== request.network) {
    return { outcome: 'other_endpoint', record };
  }
  if (record.kind === 'async' || record.jobId !== null || !record.response) {
    // Only the request that paid learns its job id: the id is all GET /jobs/{id} asks for.
    const same = record.requestHash !== null && record.requestHash === request.requestHash;
    return { outcome: 'conflict', record, jobId: same ? record.jobId : null };
  }
  if (record.requestHash !== (request.requestHash ?? null)) return { outcome: 'other_endpoint', record };
  return { outcome: 'replay', record, response: record.response };
}
