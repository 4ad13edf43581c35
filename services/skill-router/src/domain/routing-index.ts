import { LRUCache } from 'lru-cache';
import type { CandidateRecord } from '../data/route-candidates';
import type { RoutableSkill } from '../data/routing-rows';
import {
  latencyFitValue,
  popularityValue,
  priceFitValue,
  reliabilityValue,
  scoreSkill,
  weightedScore,
  type RouteQuery,
  type ScoredSkill,
} from './scoring';

/** A route answered from the index: the best matches, explained, and how many skills matched. */
export interface IndexRoute {
  matches: ScoredSkill<CandidateRecord>[];
  /** Active skills sharing a lexeme with the task and passing the chain filter. */
  total: number;
}

/**
 * The skills of one lexeme, as slot numbers: `match` where it is one of the capability and
 * description lexemes (it matches and counts for capability_match), `nameOnly` where it is in the
 * name alone (it matches, it does not count), `countOnly` where it is a capability or description
 * lexeme missing from the route vector (it counts without matching; none in practice, kept exact).
 */
interface Posting {
  /** The one copy of the lexeme every record holding it shares. */
  term: string;
  match: number[];
  nameOnly: number[];
  countOnly: number[];
}

/** Most ranked answers kept per index (about 3 KB each with ten explained matches). */
const ANSWER_CACHE_MAX = 1_000;

const removeSlot = (list: number[], slot: number): void => {
  const at = list.indexOf(slot);
  if (at < 0) return;
  list[at] = list[list.length - 1] as number;
  list.pop();
};

/** The typed array, or one twice as long when `slot` does not fit, with the old values kept. */
function fit<T extends Float64Array | Int32Array>(array: T, slot: number, make: (n: number) => T): T {
  if (slot < array.length) return array;
  const grown = make(Math.max(slot + 1, array.length * 2));
  grown.set(array);
  return grown;
}

/**
 * The in-memory routing index of one replica (README, "Routing and the score"): every active skill
 * in a numbered slot, its query-independent factors (`price_fit` and `latency_fit` without a budget
 * or a limit, `reliability`, `popularity`) in typed arrays indexed by slot, and postings from each
 * lexeme of its name, capabilities and description to the slots that have it; chains have postings
 * too. A route walks the postings of the task's lexemes (marking each slot it meets and counting its
 * shared capability and description lexemes), then scores the matching slots with the same factor
 * functions and the same {@link weightedScore} as the SQL ranking, touching only typed arrays, and
 * explains the best `limit`. It equals {@link rankSkills} over the SQL candidates without their
 * candidate cut (a property-based test checks it). Synchronous: a route never sees half an update.
 */
export class RoutingIndex {
  private slots = new Map<string, number>();
  private records: (RoutableSkill | undefined)[] = [];
  private free: number[] = [];
  private postings = new Map<string, Posting>();
  private chainPostings = new Map<string, number[]>();
  private priceUsd = new Float64Array(1024);
  private avgLatencyMs = new Float64Array(1024);
  private priceFit = new Float64Array(1024);
  private latencyFit = new Float64Array(1024);
  private reliability = new Float64Array(1024);
  private popularity = new Float64Array(1024);
  /** Scratch of the route in progress: the route that last met a slot, its shared lexemes, its chains. */
  private seenBy = new Int32Array(1024);
  private shared = new Int32Array(1024);
  private chainHits = new Int32Array(1024);
  private chainSeenBy = new Int32Array(1024);
  private routes = 0;
  /**
   * Answers ranked since the index last changed, by query: an answer is a function of the index and
   * the query alone, and agents repeat tasks. Emptied by every upsert and remove; callers never
   * change an answer they are given.
   */
  private answers = new LRUCache<string, IndexRoute>({ max: ANSWER_CACHE_MAX });

  /** Active skills in the index. */
  get size(): number {
    return this.slots.size;
  }

  /** Whether the index holds the skill. */
  has(skillId: string): boolean {
    return this.slots.has(skillId);
  }

  /** Adds an active skill, or replaces what the index held for its id. */
  upsert(skill: RoutableSkill): void {
    this.answers.clear();
    this.remove(skill.skillId);
    const slot = this.free.pop() ?? this.records.length;
    this.grow(slot);
    // One copy per lexeme (the posting's), so that 100,000 records do not each hold their own.
    const routeTerms = [...new Set(skill.routeTerms)].map((t) => this.posting(t).term);
    const matchTerms = [...new Set(skill.matchTerms)].map((t) => this.posting(t).term);
    const chains = [...new Set(skill.chains)];
    this.records[slot] = { ...skill, routeTerms, matchTerms, chains };
    this.slots.set(skill.skillId, slot);
    this.priceUsd[slot] = skill.priceUsd;
    this.avgLatencyMs[slot] = skill.avgLatencyMs ?? NaN;
    this.priceFit[slot] = priceFitValue(skill.priceUsd);
    this.latencyFit[slot] = latencyFitValue(skill.avgLatencyMs);
    this.reliability[slot] = reliabilityValue(skill.successRate24h);
    this.popularity[slot] = popularityValue(skill.calls30d, skill.ratingSum, skill.ratingCount);
    this.seenBy[slot] = 0;
    this.chainSeenBy[slot] = 0;
    const counted = new Set(matchTerms);
    for (const term of routeTerms)
      (counted.has(term) ? this.posting(term).match : this.posting(term).nameOnly).push(slot);
    const routed = new Set(routeTerms);
    for (const term of matchTerms) if (!routed.has(term)) this.posting(term).countOnly.push(slot);
    for (const chain of chains) {
      let list = this.chainPostings.get(chain);
      if (!list) this.chainPostings.set(chain, (list = []));
      list.push(slot);
    }
  }

  /** Drops a skill (no longer active, or gone); unknown ids are ignored. */
  remove(skillId: string): void {
    const slot = this.slots.get(skillId);
    if (slot === undefined) return;
    this.answers.clear();
    const record = this.records[slot];
    this.slots.delete(skillId);
    this.records[slot] = undefined;
    this.free.push(slot);
    if (!record) return;
    for (const term of new Set([...record.routeTerms, ...record.matchTerms])) {
      const posting = this.postings.get(term);
      if (!posting) continue;
      removeSlot(posting.match, slot);
      removeSlot(posting.nameOnly, slot);
      removeSlot(posting.countOnly, slot);
      if (posting.match.length + posting.nameOnly.length + posting.countOnly.length === 0)
        this.postings.delete(term);
    }
    for (const chain of record.chains) {
      const list = this.chainPostings.get(chain);
      if (!list) continue;
      removeSlot(list, slot);
      if (list.length === 0) this.chainPostings.delete(chain);
    }
  }

  /**
   * Ranks the active skills for a route query.
   * @param query the task's lexemes (as PostgreSQL computes them), chains and budgets
   * @param limit how many matches to return, with their reasons
   */
  route(query: RouteQuery, limit: number): IndexRoute {
    const taskTerms = [...new Set(query.taskTerms)];
    if (taskTerms.length === 0 || limit <= 0) return { matches: [], total: 0 };
    const key = JSON.stringify([
      taskTerms,
      query.chains ?? null,
      query.maxPriceUsd ?? null,
      query.maxLatencyMs ?? null,
      limit,
    ]);
    const known = this.answers.get(key);
    if (known) return known;
    const answer = this.rank(taskTerms, query, limit);
    this.answers.set(key, answer);
    return answer;
  }

  /** {@link route} without the cache: walks the postings and scores the matches. */
  private rank(taskTerms: string[], query: RouteQuery, limit: number): IndexRoute {
    if (this.routes >= 0x7fff_fffe) {
      // The marks are Int32: start over before they overflow.
      this.routes = 0;
      this.seenBy.fill(0);
      this.chainSeenBy.fill(0);
    }
    const routeId = ++this.routes;
    const { seenBy, shared } = this;
    const candidates: number[] = [];
    const postings: Posting[] = [];
    for (const term of taskTerms) {
      const posting = this.postings.get(term);
      if (!posting) continue;
      postings.push(posting);
      for (const slot of posting.match) {
        if (seenBy[slot] !== routeId) {
          seenBy[slot] = routeId;
          shared[slot] = 0;
          candidates.push(slot);
        }
        shared[slot] = (shared[slot] as number) + 1;
      }
      for (const slot of posting.nameOnly) {
        if (seenBy[slot] === routeId) continue;
        seenBy[slot] = routeId;
        shared[slot] = 0;
        candidates.push(slot);
      }
    }
    // After every slot met was reset: lexemes that count without matching.
    for (const posting of postings)
      for (const slot of posting.countOnly)
        if (seenBy[slot] === routeId) shared[slot] = (shared[slot] as number) + 1;

    const wanted = [...new Set(query.chains ?? [])];
    const { chainHits, chainSeenBy } = this;
    if (wanted.length > 0) {
      // Chain hits from whichever side is shorter: the chains' postings or the matching slots.
      const chainLists = wanted.map((chain) => this.chainPostings.get(chain) ?? []);
      const viaPostings = chainLists.reduce((n, list) => n + list.length, 0) < candidates.length;
      if (viaPostings) {
        for (const list of chainLists) {
          for (const slot of list) {
            if (seenBy[slot] !== routeId) continue;
            if (chainSeenBy[slot] !== routeId) {
              chainSeenBy[slot] = routeId;
              chainHits[slot] = 0;
            }
            chainHits[slot] = (chainHits[slot] as number) + 1;
          }
        }
      } else {
        for (const slot of candidates) {
          const supported = (this.records[slot] as RoutableSkill).chains;
          let hits = 0;
          for (const chain of wanted) if (supported.includes(chain)) hits++;
          if (hits === 0) continue;
          chainSeenBy[slot] = routeId;
          chainHits[slot] = hits;
        }
      }
    }

    const { maxPriceUsd, maxLatencyMs } = query;
    const terms = taskTerms.length;
    let total = 0;
    // The best `limit` so far, best first (a sorted window: limit is at most 100).
    const topSlots: number[] = [];
    const topScores: number[] = [];
    const topIds: string[] = [];
    for (const slot of candidates) {
      let chainMatch = 1;
      if (wanted.length > 0) {
        if (chainSeenBy[slot] !== routeId) continue;
        chainMatch = (chainHits[slot] as number) / wanted.length;
      }
      total++;
      const latency = this.avgLatencyMs[slot] as number;
      const score = weightedScore(
        (shared[slot] as number) / terms,
        chainMatch,
        maxPriceUsd === undefined
          ? (this.priceFit[slot] as number)
          : priceFitValue(this.priceUsd[slot] as number, maxPriceUsd),
        this.reliability[slot] as number,
        maxLatencyMs === undefined
          ? (this.latencyFit[slot] as number)
          : latencyFitValue(Number.isNaN(latency) ? null : latency, maxLatencyMs),
        this.popularity[slot] as number,
      );
      const full = topSlots.length === limit;
      const lastScore = topScores[topScores.length - 1];
      if (full && lastScore !== undefined && score < lastScore) continue;
      const skillId = (this.records[slot] as RoutableSkill).skillId;
      if (full && score === lastScore && skillId > (topIds[topIds.length - 1] as string)) continue;
      let at = topSlots.length;
      while (at > 0) {
        const before = topScores[at - 1] as number;
        if (score < before || (score === before && skillId > (topIds[at - 1] as string))) break;
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

    const task = new Set(taskTerms);
    const matches: ScoredSkill<CandidateRecord>[] = [];
    for (const slot of topSlots) {
      const s = this.records[slot] as RoutableSkill;
      // The reasons name the shared lexemes only, as a SQL candidate carries them.
      const candidate: CandidateRecord = {
        skillId: s.skillId,
        name: s.name,
        endpoint: s.endpoint,
        chains: s.chains,
        priceUsd: s.priceUsd,
        matchTerms: s.matchTerms.filter((t) => task.has(t)),
        successRate24h: s.successRate24h,
        avgLatencyMs: s.avgLatencyMs,
        calls30d: s.calls30d,
        ratingSum: s.ratingSum,
        ratingCount: s.ratingCount,
      };
      const scored = scoreSkill(candidate, query, true);
      if (scored) matches.push(scored);
    }
    return { matches, total };
  }

  private posting(term: string): Posting {
    let posting = this.postings.get(term);
    if (!posting) this.postings.set(term, (posting = { term, match: [], nameOnly: [], countOnly: [] }));
    return posting;
  }

  private grow(slot: number): void {
    const f64 = (n: number) => new Float64Array(n);
    const i32 = (n: number) => new Int32Array(n);
    this.priceUsd = fit(this.priceUsd, slot, f64);
    this.avgLatencyMs = fit(this.avgLatencyMs, slot, f64);
    this.priceFit = fit(this.priceFit, slot, f64);
    this.latencyFit = fit(this.latencyFit, slot, f64);
    this.reliability = fit(this.reliability, slot, f64);
    this.popularity = fit(this.popularity, slot, f64);
    this.seenBy = fit(this.seenBy, slot, i32);
    this.shared = fit(this.shared, slot, i32);
    this.chainHits = fit(this.chainHits, slot, i32);
    this.chainSeenBy = fit(this.chainSeenBy, slot, i32);
  }
}
