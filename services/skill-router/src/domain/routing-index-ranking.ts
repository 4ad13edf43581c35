// The routing index's ranking: the postings walk from the task's lexemes, the chain filter, and the best `limit` slots by score.
import type { PostingTable, SlotArena } from './routing-index-storage';
import { COUNT_ONLY as COUNT_ONLY_KIND, MATCH as MATCH_KIND, type SlotColumns } from './routing-index-slots';
import { capabilityValue, latencyFitValue, priceFitValue, weightedScore, type RouteQuery } from './scoring';

// Module constants, not imported bindings, in the postings walk: a bound import is read through the
// module's exports at every comparison (a getter under the test and bench loaders).
const MATCH = MATCH_KIND;
const COUNT_ONLY = COUNT_ONLY_KIND;

/** What a route reads of a {@link RoutingIndex} (its postings filled). */
export interface RankingSource {
  postings: PostingTable;
  chainPostings: PostingTable;
  /** Each slot's chain numbers, then its lexeme entries (`termId << 2 | kind`). */
  terms: SlotArena<Int32Array>;
  columns: SlotColumns;
  /** Each slot's unit embedding (none: size 0; README, "Search by meaning"). */
  vectors: SlotArena<Float32Array>;
  /** Slots ever used (free ones included). */
  slotCount: number;
  /** The skill id of a slot in use (read only when two scores tie). */
  idOf: (slot: number) => string;
}

/** The best slots of a route, best first, and what explaining them needs. */
export interface RankedSlots {
  /** At most `limit` slots, by score descending, then skill id ascending. */
  slots: number[];
  /** Active slots sharing a lexeme with the task and passing the chain filter. */
  total: number;
  /**
   * Of the slots sharing a lexeme with the task that the route removed (not active, or by the chain
   * filter), the nearest `rejectedMax` (README, "Routing receipts"): more shared capability and
   * description lexemes first, then skill id ascending.
   */
  rejected: number[];
  /** The task's lexemes the index knows, by posting number. */
  task: Map<number, string>;
}

/**
 * Ranks the slots for a route: walks the postings of the task's lexemes (marking each slot it meets
 * and counting its shared capability and description lexemes), with the task's embedding also every
 * active slot whose embedding is similar enough (README, "Search by meaning"), keeps the active
 * slots holding a wanted chain, and scores them with the same factor functions and {@link weightedScore} as the SQL
 * ranking (README, "Routing and the score"), touching only typed arrays.
 * @param taskTerms the task's distinct lexemes (at least one)
 * @param limit how many slots to keep (at least one; at most 100 keeps the sorted window cheap)
 * @param rejectedMax how many of the slots removed (not active, or by the chain filter) to keep (0: none)
 */
export function rankSlots(
  index: RankingSource,
  taskTerms: string[],
  query: RouteQuery,
  limit: number,
  rejectedMax = 0,
): RankedSlots {
  const { postings, chainPostings, columns } = index;
  const routeId = columns.nextRoute();
  const { seenBy, shared } = columns;
  const candidates: number[] = [];
  const items = postings.entries.data;
  const task = new Map<number, string>();
  for (const term of taskTerms) {
    const id = postings.get(term);
    if (id < 0) continue;
    task.set(id, term);
    const from = postings.entries.start[id] as number;
    const end = from + (postings.length[id] as number);
    for (let i = from; i < end; i++) {
      const entry = items[i] as number;
      const kind = entry & 3;
      if (kind === COUNT_ONLY) continue;
      const slot = entry >> 2;
      if (seenBy[slot] !== routeId) {
        seenBy[slot] = routeId;
        shared[slot] = 0;
        candidates.push(slot);
      }
      if (kind === MATCH) shared[slot] = (shared[slot] as number) + 1;
    }
  }
  // Search by meaning: every active slot whose embedding is near enough matches too, and every
  // slot met gets its similarity (NaN without an embedding of the task's length).
  const { similarity, state } = columns;
  const semantic = query.semantic;
  if (semantic) {
    const vector = semantic.vector;
    const dims = vector.length;
    const { data, start, size } = index.vectors;
    for (let slot = 0; slot < index.slotCount; slot++) {
      const seen = seenBy[slot] === routeId;
      if ((size[slot] ?? 0) !== dims) {
        if (seen) similarity[slot] = NaN;
        continue;
      }
      if (!seen && state[slot] !== 0) continue;
      const from = start[slot] as number;
      let sum = 0;
      for (let i = 0; i < dims; i++) sum += (data[from + i] as number) * (vector[i] as number);
      similarity[slot] = sum;
      if (!seen && sum >= semantic.minSimilarity) {
        seenBy[slot] = routeId;
        shared[slot] = 0;
        candidates.push(slot);
      }
    }
  }
  // After every slot met was reset: lexemes that count without matching.
  for (const id of task.keys()) {
    if (postings.countOnly[id] === 0) continue;
    const from = postings.entries.start[id] as number;
    const end = from + (postings.length[id] as number);
    for (let i = from; i < end; i++) {
      const entry = items[i] as number;
      if ((entry & 3) !== COUNT_ONLY) continue;
      const slot = entry >> 2;
      if (seenBy[slot] === routeId) shared[slot] = (shared[slot] as number) + 1;
    }
  }

  const wanted = [...new Set(query.chains ?? [])];
  const { chainHits, chainSeenBy } = columns;
  if (wanted.length > 0) {
    // Chain hits from whichever side is shorter: the chains' postings or the matching slots.
    // Chains the index does not know cannot be supported.
    const wantedIds = wanted.map((chain) => chainPostings.get(chain)).filter((id) => id >= 0);
    const viaPostings =
      wantedIds.reduce((n, id) => n + (chainPostings.length[id] as number), 0) < candidates.length;
    if (viaPostings) {
      const chainItems = chainPostings.entries.data;
      for (const id of wantedIds) {
        const from = chainPostings.entries.start[id] as number;
        const end = from + (chainPostings.length[id] as number);
        for (let i = from; i < end; i++) {
          const slot = chainItems[i] as number;
          if (seenBy[slot] !== routeId) continue;
          if (chainSeenBy[slot] !== routeId) {
            chainSeenBy[slot] = routeId;
            chainHits[slot] = 0;
          }
          chainHits[slot] = (chainHits[slot] as number) + 1;
        }
      }
    } else {
      const entries = index.terms.data;
      const { start } = index.terms;
      for (const slot of candidates) {
        const from = start[slot] as number;
        const end = from + (columns.chainCount[slot] as number);
        let hits = 0;
        for (let i = from; i < end; i++) if (wantedIds.includes(entries[i] as number)) hits++;
        if (hits === 0) continue;
        chainSeenBy[slot] = routeId;
        chainHits[slot] = hits;
      }
    }
  }

  const { maxPriceUsd, maxLatencyMs } = query;
  const { avgLatencyMs, priceFit, priceUsd, reliability, latencyFit, popularity } = columns;
  const terms = taskTerms.length;
  let total = 0;
  // The best `limit` so far, best first (a sorted window: limit is at most 100); their skill ids
  // are read from the text only when two scores tie.
  const topSlots: number[] = [];
  const topScores: number[] = [];
  const topIds: (string | undefined)[] = [];
  const idAt = (k: number): string => (topIds[k] ??= index.idOf(topSlots[k] as number));
  // The nearest slots the chain filter removed, the same way: a sorted window of at most rejectedMax.
  const rejected: number[] = [];
  const rejectedIds: (string | undefined)[] = [];
  const rejectedIdAt = (k: number): string => (rejectedIds[k] ??= index.idOf(rejected[k] as number));
  const reject = (slot: number): void => {
    const near = shared[slot] as number;
    const full = rejected.length === rejectedMax;
    const last = rejected.length - 1;
    if (full && (last < 0 || near < (shared[rejected[last] as number] as number))) return;
    let skillId: string | undefined;
    if (
      full &&
      near === shared[rejected[last] as number] &&
      (skillId = index.idOf(slot)) > rejectedIdAt(last)
    )
      return;
    let at = rejected.length;
    while (at > 0) {
      const before = shared[rejected[at - 1] as number] as number;
      if (near < before || (near === before && (skillId ??= index.idOf(slot)) > rejectedIdAt(at - 1))) break;
      at--;
    }
    rejected.splice(at, 0, slot);
    rejectedIds.splice(at, 0, skillId);
    if (rejected.length > rejectedMax) {
      rejected.pop();
      rejectedIds.pop();
    }
  };
  for (const slot of candidates) {
    if (state[slot] !== 0) {
      if (rejectedMax > 0) reject(slot);
      continue;
    }
    let chainMatch = 1;
    if (wanted.length > 0) {
      if (chainSeenBy[slot] !== routeId) {
        if (rejectedMax > 0) reject(slot);
        continue;
      }
      chainMatch = (chainHits[slot] as number) / wanted.length;
    }
    total++;
    const latency = avgLatencyMs[slot] as number;
    const lexical = (shared[slot] as number) / terms;
    const score = weightedScore(
      semantic ? capabilityValue(lexical, similarity[slot]) : lexical,
      chainMatch,
      maxPriceUsd === undefined
        ? (priceFit[slot] as number)
        : priceFitValue(priceUsd[slot] as number, maxPriceUsd),
      reliability[slot] as number,
      maxLatencyMs === undefined
        ? (latencyFit[slot] as number)
        : latencyFitValue(Number.isNaN(latency) ? null : latency, maxLatencyMs),
      popularity[slot] as number,
    );
    const full = topSlots.length === limit;
    const last = topSlots.length - 1;
    const lastScore = topScores[last];
    if (full && lastScore !== undefined && score < lastScore) continue;
    let skillId: string | undefined;
    if (full && score === lastScore && (skillId = index.idOf(slot)) > idAt(last)) continue;
    let at = topSlots.length;
    while (at > 0) {
      const before = topScores[at - 1] as number;
      if (score < before || (score === before && (skillId ??= index.idOf(slot)) > idAt(at - 1))) break;
      at--;
    }
    topSlots.splice(at, 0, slot);
    topScores.splice(at, 0, score);
    topIds.splice(at, 0, skillId);
    if (topSlots.length > limit) {
      topSlots.pop();
      topScores.pop();
      topIds.pop();
    }
  }
  return { slots: topSlots, total, task, rejected };
}
