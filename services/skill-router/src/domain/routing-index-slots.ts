// The routing index's per-slot columns: each skill's metrics, factors and lengths, and the marks of the route in progress.
import type { RouteState } from '../data/route-candidates';
import type { RoutableSkill } from '../data/routing-rows';
import { fit } from './routing-index-storage';
import { latencyFitValue, popularityValue, priceFitValue, reliabilityValue } from './scoring';

// How a slot holds a lexeme, in the low two bits of a posting entry (`slot << 2 | kind`) and of a
// slot's own term entry (`termId << 2 | kind`).
/** One of the capability and description lexemes and in the route vector: it matches and counts for capability_match. */
export const MATCH = 0;
/** In the name alone: it matches, it does not count. */
export const NAME_ONLY = 1;
/** A capability or description lexeme missing from the route vector: it counts without matching (none in practice, kept exact). */
export const COUNT_ONLY = 2;

/** A slot's {@link RouteState} as a number: 0 is `active` (routed), the others are only named by receipts. */
export const ROUTE_STATES: readonly RouteState[] = ['active', 'unhealthy', 'degraded', 'unverified_version'];

/**
 * The per-slot columns of a {@link RoutingIndex}, typed arrays indexed by slot (1,024 slots at
 * first, doubled as needed): the slot's entry counts and text lengths, the skill's metrics and its
 * query-independent factors, and the scratch of the route in progress.
 */
export class SlotColumns {
  /** How many of the slot's term entries are chains. */
  chainCount = new Int32Array(1024);
  /** How many of the slot's term entries after its chains are capability and description lexemes. */
  matchCount = new Int32Array(1024);
  /** UTF-8 bytes of the slot's skill id, then of its name, in the index's text. */
  idBytes = new Int32Array(1024);
  nameBytes = new Int32Array(1024);
  /** The skill's {@link ROUTE_STATES} number (0: active). */
  state = new Uint8Array(1024);
  priceUsd = new Float64Array(1024);
  /** NaN: unknown. */
  avgLatencyMs = new Float64Array(1024);
  successRate24h = new Float64Array(1024);
  calls30d = new Float64Array(1024);
  ratingSum = new Float64Array(1024);
  ratingCount = new Float64Array(1024);
  priceFit = new Float64Array(1024);
  latencyFit = new Float64Array(1024);
  reliability = new Float64Array(1024);
  popularity = new Float64Array(1024);
  /** Scratch of the route in progress: the route that last met a slot, its shared lexemes, its chains. */
  seenBy = new Int32Array(1024);
  shared = new Int32Array(1024);
  chainHits = new Int32Array(1024);
  chainSeenBy = new Int32Array(1024);
  /** Scratch of the route in progress: the slot's similarity to the task's embedding (NaN: none). */
  similarity = new Float64Array(1024);
  private routes = 0;

  /** Writes a skill's metrics and factors into its slot, and clears the slot's route marks. */
  set(slot: number, skill: RoutableSkill): void {
    const state = ROUTE_STATES.indexOf(skill.state);
    if (state < 0) throw new Error(`unknown route state ${String(skill.state)}`);
    this.state[slot] = state;
    this.priceUsd[slot] = skill.priceUsd;
    this.avgLatencyMs[slot] = skill.avgLatencyMs ?? NaN;
    this.successRate24h[slot] = skill.successRate24h;
    this.calls30d[slot] = skill.calls30d;
    this.ratingSum[slot] = skill.ratingSum;
    this.ratingCount[slot] = skill.ratingCount;
    this.priceFit[slot] = priceFitValue(skill.priceUsd);
    this.latencyFit[slot] = latencyFitValue(skill.avgLatencyMs);
    this.reliability[slot] = reliabilityValue(skill.successRate24h);
    this.popularity[slot] = popularityValue(skill.calls30d, skill.ratingSum, skill.ratingCount);
    this.seenBy[slot] = 0;
    this.chainSeenBy[slot] = 0;
  }

  /** The mark of a new route (the marks are Int32: they start over before they overflow). */
  nextRoute(): number {
    if (this.routes >= 0x7fff_fffe) {
      this.routes = 0;
      this.seenBy.fill(0);
      this.chainSeenBy.fill(0);
    }
    return ++this.routes;
  }

  /** Makes every column long enough for `slot`. */
  grow(slot: number): void {
    const f64 = (n: number) => new Float64Array(n);
    const i32 = (n: number) => new Int32Array(n);
    this.state = fit(this.state, slot, (n) => new Uint8Array(n));
    this.idBytes = fit(this.idBytes, slot, i32);
    this.chainCount = fit(this.chainCount, slot, i32);
    this.matchCount = fit(this.matchCount, slot, i32);
    this.nameBytes = fit(this.nameBytes, slot, i32);
    this.priceUsd = fit(this.priceUsd, slot, f64);
    this.avgLatencyMs = fit(this.avgLatencyMs, slot, f64);
    this.successRate24h = fit(this.successRate24h, slot, f64);
    this.calls30d = fit(this.calls30d, slot, f64);
    this.ratingSum = fit(this.ratingSum, slot, f64);
    this.ratingCount = fit(this.ratingCount, slot, f64);
    this.priceFit = fit(this.priceFit, slot, f64);
    this.latencyFit = fit(this.latencyFit, slot, f64);
    this.reliability = fit(this.reliability, slot, f64);
    this.popularity = fit(this.popularity, slot, f64);
    this.seenBy = fit(this.seenBy, slot, i32);
    this.shared = fit(this.shared, slot, i32);
    this.chainHits = fit(this.chainHits, slot, i32);
    this.chainSeenBy = fit(this.chainSeenBy, slot, i32);
    this.similarity = fit(this.similarity, slot, f64);
  }

  /** Gives back the room kept for growth beyond `slots` (never below 1,024 slots). */
  trim(slots: number): void {
    const keep = Math.max(1024, slots);
    const cut = <T extends Float64Array | Int32Array | Uint8Array>(array: T): T =>
      array.length > keep ? (array.slice(0, keep) as T) : array;
    this.state = cut(this.state);
    this.idBytes = cut(this.idBytes);
    this.chainCount = cut(this.chainCount);
    this.matchCount = cut(this.matchCount);
    this.nameBytes = cut(this.nameBytes);
    this.priceUsd = cut(this.priceUsd);
    this.avgLatencyMs = cut(this.avgLatencyMs);
    this.successRate24h = cut(this.successRate24h);
    this.calls30d = cut(this.calls30d);
    this.ratingSum = cut(this.ratingSum);
    this.ratingCount = cut(this.ratingCount);
    this.priceFit = cut(this.priceFit);
    this.latencyFit = cut(this.latencyFit);
    this.reliability = cut(this.reliability);
    this.popularity = cut(this.popularity);
    this.seenBy = cut(this.seenBy);
    this.shared = cut(this.shared);
    this.chainHits = cut(this.chainHits);
    this.chainSeenBy = cut(this.chainSeenBy);
    this.similarity = cut(this.similarity);
  }
}
