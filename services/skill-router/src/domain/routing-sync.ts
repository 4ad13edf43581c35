import type { RoutableSkill, RoutingChanges } from '../data/routing-rows';
import { RoutingIndex, type IndexRoute } from './routing-index';
import type { RouteQuery } from './scoring';

/** Where the index reads the directory (data/routing-rows.ts). */
export interface RoutingStore {
  listedPage(after: string | null, size: number): Promise<RoutableSkill[]>;
  listed(skillIds: readonly string[]): Promise<RoutableSkill[]>;
  changedSince(since: Date | null): Promise<RoutingChanges>;
}

/** Settings of {@link RoutingIndexSync}. */
export interface RoutingSyncOptions {
  /**
   * Rows per read: a page of a full load, or a batch of skills re-read after changes. Each row's
   * lexeme arrays are on the heap until the index has copied them (up to about 100 KB for a
   * description of 5,000 characters written as distinct words), so this bounds the heap a read takes.
   */
  pageSize: number;
  /**
   * How far before the previous check's instant a watermark check looks again, in milliseconds:
   * longer than any write transaction, so a write that committed after the previous check but was
   * stamped before it is still found.
   */
  marginMs: number;
  /** A full load finished: how many skills, in how many milliseconds. */
  onLoaded?(skills: number, ms: number): void;
  /** Skills re-read after notifications or a watermark check. */
  onApplied?(skills: number, cause: 'notification' | 'watermark'): void;
}

/**
 * Keeps one replica's {@link RoutingIndex} equal to the directory (README, "Routing and the score").
 * A full load at start and whenever the change listener (re)connects; then every notification of a
 * skill id re-reads that skill; a periodic watermark check re-reads what was written since the last
 * check (a notification the listener missed without noticing) and reloads when the number of listed
 * skills still differs twice in a row (rows deleted by hand). Every read-and-apply runs one after
 * another, so an older read never overwrites a newer one. Routes use the index only while it is
 * {@link RoutingIndexSync.current}; otherwise they fall back to the SQL ranking.
 */
export class RoutingIndexSync {
  private index = new RoutingIndex();
  private listening = false;
  /** Bumped by every (re)connection of the listener: a load counts only for the one it followed. */
  private generation = 0;
  private loadedGeneration = -1;
  private readonly pending = new Set<string>();
  private flushScheduled = false;
  private watermark: Date | null = null;
  private countMismatches = 0;
  /** The read-and-apply in progress (loads, notifications and watermark checks run one at a time). */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: RoutingStore,
    private readonly options: RoutingSyncOptions,
  ) {}

  /** `true` while the index is loaded and changes are heard: routes may be answered from it. */
  get current(): boolean {
    return this.listening && this.loadedGeneration === this.generation;
  }

  /**
   * The database's clock at the last watermark check or full load: every write committed and
   * stamped before it (less the stamping lag the margin covers) is in the index; `null` before the
   * first load (README, "Routing receipts").
   */
  get snapshotAt(): Date | null {
    return this.watermark;
  }

  /** Active skills in the index. */
  get size(): number {
    return this.index.size;
  }

  /** Whether the index holds the skill. */
  has(skillId: string): boolean {
    return this.index.has(skillId);
  }

  /** Ranks from the index (see {@link RoutingIndex.route}); callers check {@link current} first. */
  route(query: RouteQuery, limit: number): IndexRoute {
    return this.index.route(query, limit);
  }

  /**
   * The change listener's state: on `true` (connected, at start or again) the index is loaded in
   * full, since whatever was written while nobody listened was missed.
   */
  listeningChanged(listening: boolean): void {
    this.listening = listening;
    if (!listening) return;
    const generation = ++this.generation;
    void this.serially(() => this.load(generation)).catch(() => undefined);
  }

  /** A notification: the skill's routing columns were written; re-read it soon. */
  notified(skillId: string): void {
    this.pending.add(skillId);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // After the current I/O phase, so a burst of notifications is read back in one query.
    setImmediate(() => {
      this.flushScheduled = false;
      void this.serially(() => this.flush('notification')).catch(() => undefined);
    });
  }

  /**
   * One watermark round (nothing while the listener is down): loads in full when no load counts
   * yet, as after a load that failed; otherwise re-reads the skills written
   * since the previous check (minus the margin) and any notified skill a failed read left pending,
   * and reloads when the count of listed skills (active or named by receipts) differs from the index twice in a row.
   * @returns whether it did any work
   * @throws whatever PostgreSQL throws (the loop backs off and tries again)
   */
  async check(): Promise<boolean> {
    return this.serially(async () => {
      // Without the listener nothing is current anyway; its (re)connection starts the next load.
      if (!this.listening) return false;
      if (this.loadedGeneration !== this.generation) {
        await this.load(this.generation);
        return true;
      }
      const since = this.watermark && new Date(this.watermark.getTime() - this.options.marginMs);
      const changes = await this.store.changedSince(since);
      for (const id of changes.skillIds) this.pending.add(id);
      const applied = await this.flush('watermark');
      this.watermark = changes.checkedAt;
      if (this.pending.size === 0 && changes.listedSkills !== this.index.held) {
        if (++this.countMismatches >= 2) {
          await this.load(this.generation);
          return true;
        }
      } else {
        this.countMismatches = 0;
      }
      return applied > 0;
    });
  }

  /**
   * Loads the index in full now, after whatever read is in progress: for writes that bypass the
   * service (an operator's SQL, a test's fixtures), which no notification announces.
   * @throws whatever PostgreSQL throws
   */
  async reloadNow(): Promise<void> {
    await this.serially(() => this.load(this.generation));
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work);
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async load(generation: number): Promise<void> {
    const started = performance.now();
    const { checkedAt, listedSkills } = await this.store.changedSince(null);
    const next = new RoutingIndex(listedSkills);
    let after: string | null = null;
    for (;;) {
      const page = await this.store.listedPage(after, this.options.pageSize);
      for (const skill of page) next.upsert(skill);
      const last = page[page.length - 1];
      if (!last || page.length < this.options.pageSize) break;
      after = last.skillId;
    }
    next.trim();
    this.index = next;
    // What was written during the load is found by the next check from the load's start.
    this.watermark = checkedAt;
    this.countMismatches = 0;
    if (generation > this.loadedGeneration) this.loadedGeneration = generation;
    this.options.onLoaded?.(next.size, performance.now() - started);
    await this.flush('notification');
  }

  /** Re-reads the pending skills and applies them; on failure they stay pending for the next round. */
  private async flush(cause: 'notification' | 'watermark'): Promise<number> {
    let applied = 0;
    while (this.pending.size > 0) {
      const ids = [...this.pending].slice(0, this.options.pageSize);
      for (const id of ids) this.pending.delete(id);
      let rows: RoutableSkill[];
      try {
        rows = await this.store.listed(ids);
      } catch (err) {
        for (const id of ids) this.pending.add(id);
        throw err;
      }
      const listed = new Set<string>();
      for (const skill of rows) {
        this.index.upsert(skill);
        listed.add(skill.skillId);
      }
      for (const id of ids) if (!listed.has(id)) this.index.remove(id);
      applied += ids.length;
    }
    if (applied > 0) this.options.onApplied?.(applied, cause);
    return applied;
  }
}
