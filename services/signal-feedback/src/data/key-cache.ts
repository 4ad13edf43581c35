import type { KeyOwner, SignalRepository } from './signals';

/**
 * A short-lived in-process cache of API key lookups (key hash -> product, plan, contexts), so the
 * ingestion hot path costs one database round trip instead of two. Entries live `ttlMs`; routing
 * re-reads the owner when a signal names a context the entry does not know or the insert hits a deleted
 * context, and this process drops a product's entry when its contexts change. A rotated or deleted
 * key is dropped on every replica by the `signal_feedback_keys` notification ({@link invalidateProduct});
 * while that listener is down the cache is off ({@link setCaching}). Other replicas see context list
 * and plan changes within `ttlMs` (README, "API keys", its "Caching of API keys" paragraph).
 */
export class KeyOwnerCache {
  private readonly entries = new Map<string, { owner: KeyOwner; expires: number }>();
  private caching = true;

  /**
   * @param repo where owners are read
   * @param ttlMs entry lifetime in ms; 0 disables the cache
   * @param maxEntries bound on memory: the oldest entry is dropped beyond it
   */
  constructor(
    private readonly repo: SignalRepository,
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  /** The owner of a key hash, from the cache when fresh. */
  async get(apiKeyHash: string, now = Date.now()): Promise<KeyOwner | undefined> {
    const hit = this.entries.get(apiKeyHash);
    if (hit && hit.expires > now) return hit.owner;
    return this.refresh(apiKeyHash, now);
  }

  /** Reads the owner from the database and caches it (unknown keys are not cached). */
  async refresh(apiKeyHash: string, now = Date.now()): Promise<KeyOwner | undefined> {
    const owner = await this.repo.findKeyOwner(apiKeyHash);
    this.entries.delete(apiKeyHash);
    if (owner && this.ttlMs > 0 && this.caching) {
      if (this.entries.size >= this.maxEntries) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
      this.entries.set(apiKeyHash, { owner, expires: now + this.ttlMs });
    }
    return owner;
  }

  /**
   * Turns the cache on (the key-change listener hears every replica) or off, dropping every entry
   * (changes may be missed: every lookup reads the database until it is back on).
   */
  setCaching(on: boolean): void {
    this.caching = on;
    this.entries.clear();
  }

  /** Drops the entry of a product (its contexts or key changed, here or on another replica). */
  invalidateProduct(productId: string): void {
    for (const [hash, e] of this.entries) if (e.owner.productId === productId) this.entries.delete(hash);
  }
}
