// The routing index's storage, all of it in typed arrays outside the JavaScript heap, so that what
// registrants control (how many skills, and how many distinct lexemes their texts bring) costs no
// heap: a V8 heap limit then bounds the service's own objects only (docs/benchmarks.md,
// "skill-router: routing and verification").

import { randomBytes } from 'node:crypto';

type Numbers = Int32Array | Uint16Array | Buffer | Float32Array;

/** The typed array, or one twice as long when `slot` does not fit, with the old values kept. */
export function fit<T extends Float64Array | Int32Array | Uint8Array>(
  array: T,
  slot: number,
  make: (n: number) => T,
): T {
  if (slot < array.length) return array;
  const grown = make(Math.max(slot + 1, array.length * 2));
  grown.set(array);
  return grown;
}

/**
 * Jenkins' one-at-a-time hash over the UTF-16 code units, started from `seed`, as a non-negative
 * int32: V8 hashes its own strings (a `Map`'s keys) the same way, from a random seed per process.
 */
export function hashOf(text: string, seed: number): number {
  let hash = seed | 0;
  for (let i = 0; i < text.length; i++) {
    hash = (hash + text.charCodeAt(i)) | 0;
    hash = (hash + (hash << 10)) | 0;
    hash ^= hash >>> 6;
  }
  hash = (hash + (hash << 3)) | 0;
  hash ^= hash >>> 11;
  hash = (hash + (hash << 15)) | 0;
  return hash & 0x7fffffff;
}

/** A growable list of int32 values in a typed array; order is not kept by {@link IntList.pop}. */
export class IntList {
  items = new Int32Array(4);
  length = 0;

  push(value: number): void {
    if (this.length === this.items.length) {
      const grown = new Int32Array(this.length * 2);
      grown.set(this.items);
      this.items = grown;
    }
    this.items[this.length++] = value;
  }

  /** The last value, removed; `undefined` when empty. */
  pop(): number | undefined {
    return this.length === 0 ? undefined : this.items[--this.length];
  }
}

/**
 * Variable-length values per slot packed in one typed array: a slot's values are contiguous
 * (`start`, `size`); replacing or freeing them leaves a hole, and when the array is full the live
 * values are copied into a new one twice their size (which drops the holes).
 */
export class SlotArena<A extends Numbers> {
  data: A;
  start: Int32Array;
  size: Int32Array;
  /** Values written, holes included. */
  private used = 0;
  /** Values of the slots (`used` minus the holes). */
  private live = 0;

  /**
   * @param capacity values to make room for at first (more are made room for when needed)
   * @param slots slots to make room for at first
   */
  constructor(
    private readonly make: (n: number) => A,
    capacity: number,
    slots: number,
  ) {
    this.data = make(Math.max(1024, capacity));
    this.start = new Int32Array(Math.max(1024, slots));
    this.size = new Int32Array(Math.max(1024, slots));
  }

  /**
   * Room for `n` values of `slot`, whose previous values are dropped.
   * @returns the offset of the first of them in {@link data} (read it after the call: it may move)
   */
  alloc(slot: number, n: number): number {
    this.free(slot);
    return this.resize(slot, n);
  }

  /**
   * Room for `n` values of `slot`, its first values kept (as many as fit).
   * @returns the offset of the first of them in {@link data} (read it after the call: it may move)
   */
  resize(slot: number, n: number): number {
    this.start = fit(this.start, slot, (m) => new Int32Array(m));
    this.size = fit(this.size, slot, (m) => new Int32Array(m));
    const old = this.size[slot] as number;
    if (this.used + n > this.data.length) this.compact(n);
    const from = this.start[slot] as number;
    const at = this.used;
    if (old > 0) this.data.copyWithin(at, from, from + Math.min(old, n));
    this.start[slot] = at;
    this.size[slot] = n;
    this.used += n;
    this.live += n - old;
    return at;
  }

  free(slot: number): void {
    if (slot >= this.size.length) return;
    this.live -= this.size[slot] as number;
    this.size[slot] = 0;
  }

  /** Drops the holes and the room kept for growth; `slots` is how many slots there are. */
  trim(slots: number): void {
    if (this.data.length > Math.max(1024, this.live)) this.compact(0, 1);
    const keep = Math.max(1024, slots);
    if (this.start.length > keep) {
      this.start = this.start.slice(0, keep);
      this.size = this.size.slice(0, keep);
    }
  }

  /**
   * Copies the live values into a new array with room for `extra` more, `growth` times what they
   * need (at least 1,024 values), dropping the holes.
   */
  private compact(extra: number, growth = 2): void {
    const { start, size, data } = this;
    const next = this.make(Math.max(1024, growth * (this.live + extra)));
    let at = 0;
    for (let slot = 0; slot < size.length; slot++) {
      const n = size[slot] as number;
      if (n === 0) continue;
      const from = start[slot] as number;
      // Uint16Array and Buffer share `set` and `subarray`; TypeScript cannot unify the union's overloads.
      (next as Int32Array).set((data as Int32Array).subarray(from, from + n), at);
      start[slot] = at;
      at += n;
    }
    this.data = next;
    this.used = at;
  }
}

/**
 * Numbers (0, 1, …) filed under strings that are kept elsewhere: an open-addressing table of
 * `number + 1` (0: empty), at most half full, probed linearly from the string's {@link hashOf},
 * with each number's hash kept beside it; `equals(number, key)` reads the string where its owner
 * keeps it. Each table hashes from a random seed of its own: registrants choose the lexemes, and
 * with a known hash they could choose thousands that probe the same run of places, making every
 * lookup and insertion walk it (a `Map`, which this replaces, is protected the same way).
 */
export class HashedNumbers {
  private table = new Int32Array(2048);
  private hashes = new Int32Array(1024);
  /** Numbers in the table. */
  private count = 0;

  private readonly seed = randomBytes(4).readInt32LE();

  constructor(private readonly equals: (n: number, key: string) => boolean) {}

  /** The hash `key` is filed under in this table. */
  hash(key: string): number {
    return hashOf(key, this.seed);
  }

  /** The number filed under `key` (whose {@link hash} is `hash`), or -1. */
  find(key: string, hash = this.hash(key)): number {
    const { table } = this;
    const mask = table.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const entry = table[i] as number;
      if (entry === 0) return -1;
      if (this.hashes[entry - 1] === hash && this.equals(entry - 1, key)) return entry - 1;
    }
  }

  /** Files `n` (not in the table yet) under the string whose {@link hash} is `hash`. */
  add(n: number, hash: number): void {
    this.hashes = fit(this.hashes, n, (m) => new Int32Array(m));
    this.hashes[n] = hash;
    if ((this.count + 1) * 2 > this.table.length) this.rehash(this.table.length * 2);
    this.place(n);
    this.count++;
  }

  /** Takes `n` out of the table (backward-shift deletion: no tombstones). */
  delete(n: number): void {
    const { table } = this;
    const mask = table.length - 1;
    let hole = (this.hashes[n] as number) & mask;
    while (table[hole] !== n + 1) hole = (hole + 1) & mask;
    for (let j = (hole + 1) & mask; table[j] !== 0; j = (j + 1) & mask) {
      const home = (this.hashes[(table[j] as number) - 1] as number) & mask;
      // The entry at j moves into the hole when its probe from `home` passes the hole.
      const passes = hole <= j ? home <= hole || home > j : home <= hole && home > j;
      if (!passes) continue;
      table[hole] = table[j] as number;
      hole = j;
    }
    table[hole] = 0;
    this.count--;
  }

  /** Gives back the room kept for growth; `numbers` is one more than the highest number in use. */
  trim(numbers: number): void {
    const keep = Math.max(1024, numbers);
    if (this.hashes.length > keep) this.hashes = this.hashes.slice(0, keep);
    let size = 2048;
    while (size < this.count * 2) size *= 2;
    if (size < this.table.length) this.rehash(size);
  }

  private place(n: number): void {
    const { table } = this;
    const mask = table.length - 1;
    let i = (this.hashes[n] as number) & mask;
    while (table[i] !== 0) i = (i + 1) & mask;
    table[i] = n + 1;
  }

  /** Builds the table again with `size` (a power of two) places. */
  private rehash(size: number): void {
    const old = this.table;
    this.table = new Int32Array(size);
    for (const entry of old) if (entry !== 0) this.place(entry - 1);
  }
}

/**
 * Postings by key (a lexeme or a chain) and by number: each posting is a list of int32 entries
 * (the routing index's `slot << 2 | kind` for lexemes, `slot` for chains) in one {@link SlotArena}
 * (its capacity the arena's `size`, its {@link length} here), and each key is kept as UTF-16 code
 * units in another (exact for any string, a lone surrogate included). Nothing here is on the
 * JavaScript heap but the free numbers; numbers of dropped postings are reused.
 */
export class PostingTable {
  /** Each posting's entries (`entries.size[id]` is its capacity). */
  readonly entries = new SlotArena((n) => new Int32Array(n), 0, 0);
  /** Entries in use, per posting. */
  length = new Int32Array(1024);
  /** Per posting, entries of kind COUNT_ONLY (lexemes only): a route looks for them only when there are any. */
  countOnly = new Int32Array(1024);
  /** Per posting, entries counted by {@link add} to be filled in later (see {@link makeRoomForDeferred}). */
  private deferred = new Int32Array(1024);
  private readonly keys = new SlotArena((n) => new Uint16Array(n), 0, 0);
  /** 1 where a posting is in use. */
  private inUse = new Uint8Array(1024);
  private readonly byKey = new HashedNumbers((id, key) => this.spells(id, key));
  private readonly freeIds = new IntList();
  /** Numbers ever used (free ones included). */
  private ids = 0;

  /** The number of the posting of `key`, or -1. */
  get(key: string): number {
    return this.byKey.find(key);
  }

  /** The number of the posting of `key`, created empty when there is none. */
  intern(key: string): number {
    const hash = this.byKey.hash(key);
    const found = this.byKey.find(key, hash);
    if (found >= 0) return found;
    const id = this.freeIds.pop() ?? this.ids++;
    this.length = fit(this.length, id, (n) => new Int32Array(n));
    this.countOnly = fit(this.countOnly, id, (n) => new Int32Array(n));
    this.deferred = fit(this.deferred, id, (n) => new Int32Array(n));
    this.inUse = fit(this.inUse, id, (n) => new Uint8Array(n));
    this.length[id] = 0;
    this.countOnly[id] = 0;
    this.deferred[id] = 0;
    this.inUse[id] = 1;
    const at = this.keys.alloc(id, key.length);
    const data = this.keys.data;
    for (let i = 0; i < key.length; i++) data[at + i] = key.charCodeAt(i);
    this.byKey.add(id, hash);
    return id;
  }

  /** The key of a posting in use. */
  keyOf(id: number): string {
    const from = this.keys.start[id] as number;
    return String.fromCharCode(...this.keys.data.subarray(from, from + (this.keys.size[id] as number)));
  }

  /** Appends an entry to a posting, doubling its capacity when it is full. */
  push(id: number, value: number): void {
    const n = this.length[id] as number;
    const capacity = this.entries.size[id] ?? 0;
    if (n === capacity) this.entries.resize(id, Math.max(4, capacity * 2));
    this.entries.data[(this.entries.start[id] as number) + n] = value;
    this.length[id] = n + 1;
  }

  /**
   * Adds an entry to a posting now, or, with `later`, only counts it: during a full load the entries
   * are filled in afterwards at their exact size ({@link makeRoomForDeferred}, then {@link push})
   * instead of doubled and copied along the way.
   */
  add(id: number, value: number, later: boolean): void {
    if (later) this.deferred[id] = (this.deferred[id] as number) + 1;
    else this.push(id, value);
  }

  /** Changes a posting's count of COUNT_ONLY entries by `delta`. */
  countOnlyBy(id: number, delta: number): void {
    this.countOnly[id] = (this.countOnly[id] as number) + delta;
  }

  /** Empties every posting, with room for exactly the entries {@link add} counted for later. */
  makeRoomForDeferred(): void {
    this.forEach((id) => {
      this.entries.alloc(id, this.deferred[id] as number);
      this.length[id] = 0;
    });
    this.deferred.fill(0);
  }

  /**
   * Removes one occurrence of `value` from a posting (its last entry takes its place, and half the
   * room goes back once three quarters are unused); `false` when absent.
   */
  remove(id: number, value: number): boolean {
    const items = this.entries.data;
    const from = this.entries.start[id] as number;
    const n = this.length[id] as number;
    for (let i = from; i < from + n; i++) {
      if (items[i] !== value) continue;
      items[i] = items[from + n - 1] as number;
      this.length[id] = n - 1;
      const capacity = this.entries.size[id] as number;
      if (n - 1 > 0 && (n - 1) * 4 <= capacity && capacity > 4) this.entries.resize(id, capacity >> 1);
      return true;
    }
    return false;
  }

  /** Forgets a posting (empty by now) and frees its number. */
  drop(id: number): void {
    this.byKey.delete(id);
    this.entries.free(id);
    this.keys.free(id);
    this.inUse[id] = 0;
    this.freeIds.push(id);
  }

  /** Calls `each` with the number of every posting in use. */
  forEach(each: (id: number) => void): void {
    for (let id = 0; id < this.ids; id++) if (this.inUse[id] === 1) each(id);
  }

  /** Drops the holes and the room kept for growth (after a full load). */
  trim(): void {
    this.entries.trim(this.ids);
    this.keys.trim(this.ids);
    this.byKey.trim(this.ids);
  }

  /** Whether the posting `id`'s key is `key`. */
  private spells(id: number, key: string): boolean {
    const n = this.keys.size[id] as number;
    if (n !== key.length) return false;
    const data = this.keys.data;
    const from = this.keys.start[id] as number;
    for (let i = 0; i < n; i++) if (data[from + i] !== key.charCodeAt(i)) return false;
    return true;
  }
}
