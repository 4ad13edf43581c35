import { LRUCache } from 'lru-cache';
import type { CandidateRecord } from '../data/route-candidates';
import type { RoutableSkill } from '../data/routing-rows';
import { REJECTED_MAX, rejectionOf, type RejectedCandidate } from './route-receipts';
import { scoreSkill, type RouteQuery, type ScoredSkill } from './scoring';
import { rankSlots } from './routing-index-ranking';
import { COUNT_ONLY, MATCH, NAME_ONLY, ROUTE_STATES, SlotColumns } from './routing-index-slots';
import { HashedNumbers, PostingTable, SlotArena } from './routing-index-storage';

/** A route answered from the index: the best matches, explained, and how many skills matched. */
export interface IndexRoute {
  matches: ScoredSkill<CandidateRecord>[];
  /** Active skills sharing a lexeme with the task and passing the chain filter. */
  total: number;
  /**
   * The nearest skills sharing a lexeme with the task that the route removed (not routable, or by the
   * chain filter), at most {@link REJECTED_MAX} (README, "Routing receipts").
   */
  rejected: RejectedCandidate[];
}

/** Most ranked answers kept per index. */
const ANSWER_CACHE_MAX = 1_000;
/**
 * Most bytes of ranked answers kept per index (estimated by {@link answerBytes}): an answer of ten
 * explained matches takes about 15 KB, one of a hundred about 150 KB, so the entry count alone
 * would let a thousand large answers hold 150 MB of heap. 4 MiB is about 270 answers of ten.
 */
const ANSWER_CACHE_MAX_BYTES = 4 * 2 ** 20;

/** A lone surrogate: a string UTF-8 cannot carry unchanged. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The in-memory routing index of one replica (README, "Routing and the score"): every active skill,
 * and every skill a route names among its rejected candidates (README, "Routing receipts"), in a
 * numbered slot with its route state, its query-independent factors (`price_fit` and `latency_fit` without a budget
 * or a limit, `reliability`, `popularity`) and its metrics in typed arrays indexed by slot, and
 * postings from each lexeme of its name, capabilities and description to the slots that have it;
 * chains have postings too. A slot's lexemes and chains are numbers packed in one typed array, its
 * name and endpoint UTF-8 in another, so that the index holds a few hundred bytes per skill, almost
 * all of them outside the JavaScript heap (docs/benchmarks.md, "skill-router: routing and
 * verification"). A route walks the postings of the task's lexemes (marking each slot it meets and
 * counting its shared capability and description lexemes), then scores the matching slots with the
 * same factor functions and the same {@link weightedScore} as the SQL ranking, touching only typed
 * arrays, and explains the best `limit`. It equals {@link rankSkills} over the SQL candidates without
 * their candidate cut (a property-based test checks it). Synchronous: a route never sees half an
 * update. The per-slot arrays are a {@link SlotColumns}; the ranking is {@link rankSlots}.
 */
export class RoutingIndex {
  /** Active skills in the index. */
  private skills = 0;
  /** Skills in the index, active or not. */
  private heldSkills = 0;
  /** Slots ever used (free ones included). */
  private slotCount = 0;
  private free: number[] = [];
  /**
   * Skill id to slot, the ids themselves in {@link text} (a Map of 100,000 id strings would hold
   * about 8 MB of heap). Ids with a lone surrogate are in `oddIds` instead.
   */
  private readonly ids = new HashedNumbers((slot, skillId) => this.idOf(slot) === skillId);
  private oddIds = new Map<string, number>();
  private readonly postings = new PostingTable();
  private readonly chainPostings = new PostingTable();
  /**
   * `true` while every change so far added a new skill (a full load): the postings are only
   * counted, then filled from {@link terms} at their exact size by the first route, removal,
   * replacement or {@link trim}, instead of doubled and copied along the way. Later changes update
   * them in place.
   */
  private postingsPending = true;
  /**
   * Each slot's chain numbers (its first `chainCount`), then its capability and description lexemes
   * in the order the row lists them (`termId << 2 | MATCH or COUNT_ONLY`, `matchCount` of them),
   * then its name-only lexemes (`termId << 2 | NAME_ONLY`).
   */
  private terms: SlotArena<Int32Array>;
  /** Each slot's skill id, name and endpoint, UTF-8: `idBytes` of id, then `nameBytes` of name. */
  private text: SlotArena<Buffer>;
  /** Each slot's unit embedding, if it has one (README, "Search by meaning"). */
  private vectors: SlotArena<Float32Array>;
  /** Of slots where one of them has a lone surrogate, which UTF-8 would change: kept as they are. */
  private oddText = new Map<number, { skillId: string; name: string; endpoint: string }>();
  /**
   * Of slots holding a tool imported from an MCP server, the tool's name (README, "MCP servers as
   * skills"); HTTP skills, almost all of them, have no entry and cost nothing here.
   */
  private mcpTools = new Map<number, string>();
  /** Each slot's entry counts, text lengths, metrics, factors and route marks. */
  private readonly columns = new SlotColumns();
  /**
   * Answers ranked since the index last changed, by query: an answer is a function of the index and
   * the query alone, and agents repeat tasks. Emptied by every upsert and remove; callers never
   * change an answer they are given.
   */
  private answers = new LRUCache<string, IndexRoute>({
    max: ANSWER_CACHE_MAX,
    maxSize: ANSWER_CACHE_MAX_BYTES,
    sizeCalculation: answerBytes,
  });

  /**
   * @param expectedSkills how many skills a full load is about to add (the active skills when it
   *   started), so that the arrays are made the right size once instead of doubled and copied
   *   along the way; any number works
   */
  constructor(expectedSkills = 0) {
    // About 16 lexemes and chains and 80 bytes of id, name and endpoint per skill; trim() gives
    // back what a full load did not use.
    this.terms = new SlotArena((n) => new Int32Array(n), expectedSkills * 16, expectedSkills);
    this.text = new SlotArena((n) => Buffer.alloc(n), expectedSkills * 80, expectedSkills);
    this.vectors = new SlotArena((n) => new Float32Array(n), 0, expectedSkills);
    if (expectedSkills > 1024) this.columns.grow(expectedSkills - 1);
  }

  /** Active skills in the index. */
  get size(): number {
    return this.skills;
  }

  /** Skills in the index, active or only named by receipts. */
  get held(): number {
    return this.heldSkills;
  }

  /** Whether the index holds the skill as active (routes may return it). */
  has(skillId: string): boolean {
    const slot = this.slotOf(skillId);
    return slot >= 0 && this.columns.state[slot] === 0;
  }

  /**
   * Adds a skill, or replaces what the index held for its id. Of the given objects it keeps
   * the id string and the string of a lexeme or chain no other skill has yet; everything else is
   * copied into the index's own arrays, so a loaded row is garbage once added.
   */
  upsert(skill: RoutableSkill): void {
    this.answers.clear();
    this.remove(skill.skillId);
    const slot = this.free.pop() ?? this.slotCount++;
    const { columns } = this;
    columns.grow(slot);
    if (skill.state === 'active') this.skills++;
    this.heldSkills++;

    const chains = [...new Set(skill.chains)];
    const matchTerms = [...new Set(skill.matchTerms)];
    const routed = new Set(skill.routeTerms);
    const counted = new Set(matchTerms);
    const nameOnly = [...routed].filter((t) => !counted.has(t));
    let at = this.terms.alloc(slot, chains.length + matchTerms.length + nameOnly.length);
    const entries = this.terms.data;
    const { postings, chainPostings, postingsPending } = this;
    for (const chain of chains) {
      const id = chainPostings.intern(chain);
      chainPostings.add(id, slot, postingsPending);
      entries[at++] = id;
    }
    const lexeme = (term: string, kind: number): void => {
      const id = postings.intern(term);
      if (kind === COUNT_ONLY) postings.countOnlyBy(id, 1);
      postings.add(id, (slot << 2) | kind, postingsPending);
      entries[at++] = (id << 2) | kind;
    };
    for (const term of matchTerms) lexeme(term, routed.has(term) ? MATCH : COUNT_ONLY);
    for (const term of nameOnly) lexeme(term, NAME_ONLY);
    columns.chainCount[slot] = chains.length;
    columns.matchCount[slot] = matchTerms.length;

    const { skillId, name, endpoint } = skill;
    if (LONE_SURROGATE.test(skillId) || LONE_SURROGATE.test(name) || LONE_SURROGATE.test(endpoint)) {
      this.oddText.set(slot, { skillId, name, endpoint });
      this.text.alloc(slot, 0);
      columns.idBytes[slot] = 0;
      columns.nameBytes[slot] = 0;
    } else {
      const idLength = Buffer.byteLength(skillId, 'utf8');
      const nameLength = Buffer.byteLength(name, 'utf8');
      const from = this.text.alloc(slot, idLength + nameLength + Buffer.byteLength(endpoint, 'utf8'));
      const data = this.text.data;
      data.write(skillId, from, 'utf8');
      data.write(name, from + idLength, 'utf8');
      data.write(endpoint, from + idLength + nameLength, 'utf8');
      columns.idBytes[slot] = idLength;
      columns.nameBytes[slot] = nameLength;
    }
    this.addId(skillId, slot);
    if (skill.mcpTool != null) this.mcpTools.set(slot, skill.mcpTool);

    columns.set(slot, skill);
    const embedding = skill.embedding;
    if (embedding && embedding.length > 0) {
      // The offset first: allocating may move the array.
      const at = this.vectors.alloc(slot, embedding.length);
      this.vectors.data.set(embedding, at);
    }
  }

  /**
   * After a full load: fills the postings at their exact size and gives back the room the
   * per-skill arrays keep for growth (up to half of them); later upserts grow them again. Changes no
   * answer.
   */
  trim(): void {
    this.fillPostings();
    const slots = this.slotCount;
    this.terms.trim(slots);
    this.text.trim(slots);
    this.vectors.trim(slots);
    this.columns.trim(slots);
    this.ids.trim(slots);
    this.postings.trim();
    this.chainPostings.trim();
  }

  /** Drops a skill (no longer listed, or gone); unknown ids are ignored. */
  remove(skillId: string): void {
    const slot = this.slotOf(skillId);
    if (slot < 0) return;
    this.fillPostings();
    this.answers.clear();
    this.dropId(skillId, slot);
    if (this.columns.state[slot] === 0) this.skills--;
    this.heldSkills--;
    this.free.push(slot);
    const entries = this.terms.data;
    const from = this.terms.start[slot] as number;
    const chains = this.columns.chainCount[slot] as number;
    const end = from + (this.terms.size[slot] as number);
    const { postings, chainPostings } = this;
    for (let i = from; i < from + chains; i++) {
      const id = entries[i] as number;
      chainPostings.remove(id, slot);
      if (chainPostings.length[id] === 0) chainPostings.drop(id);
    }
    for (let i = from + chains; i < end; i++) {
      const entry = entries[i] as number;
      const id = entry >> 2;
      const kind = entry & 3;
      postings.remove(id, (slot << 2) | kind);
      if (kind === COUNT_ONLY) postings.countOnlyBy(id, -1);
      if (postings.length[id] === 0) postings.drop(id);
    }
    this.terms.free(slot);
    this.text.free(slot);
    this.vectors.free(slot);
    this.oddText.delete(slot);
    this.mcpTools.delete(slot);
  }

  /**
   * Ranks the active skills for a route query.
   * @param query the task's lexemes (as PostgreSQL computes them), chains and budgets
   * @param limit how many matches to return, with their reasons
   */
  route(query: RouteQuery, limit: number): IndexRoute {
    const taskTerms = [...new Set(query.taskTerms)];
    if (taskTerms.length === 0 || limit <= 0) return { matches: [], total: 0, rejected: [] };
    const key = JSON.stringify([
      taskTerms,
      query.chains ?? null,
      query.maxPriceUsd ?? null,
      query.maxLatencyMs ?? null,
      limit,
      query.semantic ? [query.semantic.key, query.semantic.minSimilarity] : null,
    ]);
    const known = this.answers.get(key);
    if (known) return known;
    const answer = this.rank(taskTerms, query, limit);
    this.answers.set(key, answer);
    return answer;
  }

  /** {@link route} without the cache: ranks the slots ({@link rankSlots}) and explains the best. */
  private rank(taskTerms: string[], query: RouteQuery, limit: number): IndexRoute {
    this.fillPostings();
    const { postings, chainPostings, terms, columns, vectors, slotCount } = this;
    const ranked = rankSlots(
      { postings, chainPostings, terms, columns, vectors, slotCount, idOf: (slot) => this.idOf(slot) },
      taskTerms,
      query,
      limit,
      REJECTED_MAX,
    );
    const matches: ScoredSkill<CandidateRecord>[] = [];
    for (const slot of ranked.slots) {
      const candidate = this.candidate(slot, ranked.task);
      const similarity = this.columns.similarity[slot] as number;
      if (query.semantic && !Number.isNaN(similarity)) candidate.similarity = similarity;
      const scored = scoreSkill(candidate, query, true);
      if (scored) matches.push(scored);
    }
    const rejected = ranked.rejected.map((slot) => {
      const skill = this.candidate(slot, ranked.task);
      const state = ROUTE_STATES[this.columns.state[slot] as number] ?? 'active';
      return rejectionOf({ ...skill, state, sharedTerms: skill.matchTerms.length }, query, taskTerms.length);
    });
    return { matches, total: ranked.total, rejected };
  }

  /**
   * A slot as a SQL candidate carries it: its fields, and of its capability and description lexemes
   * only those in the task (what the reasons name), in the row's order.
   */
  private candidate(slot: number, task: Map<number, string>): CandidateRecord {
    const { columns } = this;
    const entries = this.terms.data;
    const from = this.terms.start[slot] as number;
    const chainsEnd = from + (columns.chainCount[slot] as number);
    const chains: string[] = [];
    for (let i = from; i < chainsEnd; i++) chains.push(this.chainPostings.keyOf(entries[i] as number));
    const matchTerms: string[] = [];
    for (let i = chainsEnd; i < chainsEnd + (columns.matchCount[slot] as number); i++) {
      const term = task.get((entries[i] as number) >> 2);
      if (term !== undefined) matchTerms.push(term);
    }
    let text = this.oddText.get(slot);
    if (!text) {
      const start = this.text.start[slot] as number;
      const idEnd = start + (columns.idBytes[slot] as number);
      const nameEnd = idEnd + (columns.nameBytes[slot] as number);
      const data = this.text.data;
      text = {
        skillId: data.toString('utf8', start, idEnd),
        name: data.toString('utf8', idEnd, nameEnd),
        endpoint: data.toString('utf8', nameEnd, start + (this.text.size[slot] as number)),
      };
    }
    const latency = columns.avgLatencyMs[slot] as number;
    const mcpTool = this.mcpTools.get(slot);
    return {
      skillId: text.skillId,
      name: text.name,
      endpoint: text.endpoint,
      ...(mcpTool === undefined ? {} : { mcpTool }),
      chains,
      priceUsd: columns.priceUsd[slot] as number,
      matchTerms,
      successRate24h: columns.successRate24h[slot] as number,
      avgLatencyMs: Number.isNaN(latency) ? null : latency,
      calls30d: columns.calls30d[slot] as number,
      ratingSum: columns.ratingSum[slot] as number,
      ratingCount: columns.ratingCount[slot] as number,
    };
  }

  /** Fills the postings counted while {@link postingsPending}, from every slot's entries. */
  private fillPostings(): void {
    if (!this.postingsPending) return;
    this.postingsPending = false;
    const { postings, chainPostings } = this;
    postings.makeRoomForDeferred();
    chainPostings.makeRoomForDeferred();
    const entries = this.terms.data;
    const { start, size } = this.terms;
    for (let slot = 0; slot < this.slotCount; slot++) {
      const from = start[slot] as number;
      const chainsEnd = from + (this.columns.chainCount[slot] as number);
      const end = from + (size[slot] as number);
      for (let i = from; i < chainsEnd; i++) chainPostings.push(entries[i] as number, slot);
      for (let i = chainsEnd; i < end; i++) {
        const entry = entries[i] as number;
        postings.push(entry >> 2, (slot << 2) | (entry & 3));
      }
    }
  }

  /** The skill id of a slot in use. */
  private idOf(slot: number): string {
    const odd = this.oddText.get(slot);
    if (odd) return odd.skillId;
    const start = this.text.start[slot] as number;
    return this.text.data.toString('utf8', start, start + (this.columns.idBytes[slot] as number));
  }

  /** The slot holding a skill id, or -1. */
  private slotOf(skillId: string): number {
    if (LONE_SURROGATE.test(skillId)) return this.oddIds.get(skillId) ?? -1;
    return this.ids.find(skillId);
  }

  /** Files a slot under its skill id (not in the index yet). */
  private addId(skillId: string, slot: number): void {
    if (LONE_SURROGATE.test(skillId)) this.oddIds.set(skillId, slot);
    else this.ids.add(slot, this.ids.hash(skillId));
  }

  /** Takes a slot's skill id out of the index. */
  private dropId(skillId: string, slot: number): void {
    if (LONE_SURROGATE.test(skillId)) this.oddIds.delete(skillId);
    else this.ids.delete(slot);
  }
}

/** About how many bytes of heap a ranked answer holds (its objects, numbers and strings), for the answer cache's bound. */
function answerBytes(answer: IndexRoute, key: string): number {
  let bytes = 200 + key.length;
  for (const { skill, reasons } of answer.matches) {
    bytes += 900 + skill.skillId.length + skill.name.length + skill.endpoint.length;
    bytes += 16 * (skill.chains.length + skill.matchTerms.length);
    for (const reason of reasons) bytes += 32 + reason.length;
  }
  for (const { skillId, name } of answer.rejected) bytes += 300 + skillId.length + name.length;
  return bytes;
}
