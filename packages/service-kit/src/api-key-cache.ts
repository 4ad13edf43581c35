import { hashesEqual } from './api-keys';

/** Options of {@link createApiKeyCache}. */
export interface ApiKeyCacheOptions<Owner> {
  /**
   * Reads what a key hash belongs to from the database.
   * @returns the owner, or `undefined` or `null` when no key has this hash
   */
  load(keyHash: string): Promise<Owner | null | undefined>;
  /** The stored key hash of an owner (lowercase hex SHA-256), compared in constant time with the presented one. */
  keyHashOf(owner: Owner): string;
  /** How long a found owner is reused without a lookup, in milliseconds; 0 disables the cache. */
  ttlMs: number;
  /** Most entries kept (default 10,000); beyond it the one read from the database longest ago is dropped. */
  maxEntries?: number;
  /**
   * Whether caching starts on (default `true`). A cache that a change listener keeps current starts
   * off and is turned on once the listener hears every replica ({@link ApiKeyCache.setCaching}).
   */
  caching?: boolean;
}

/**
 * A short-lived in-process cache of API key lookups by key hash (see {@link createApiKeyCache}).
 * `now` parameters are epoch milliseconds (default `Date.now()`).
 */
export interface ApiKeyCache<Owner> {
  /**
   * The owner of a key hash: from memory while its entry is younger than `ttlMs`, else read again.
   * @returns `undefined` when no stored key has this hash
   * @throws whatever `load` throws
   */
  get(keyHash: string, now?: number): Promise<Owner | undefined>;
  /**
   * Reads the owner from the database, replacing its entry (an unknown key leaves none).
   * @returns `undefined` when no stored key has this hash
   * @throws whatever `load` throws
   */
  refresh(keyHash: string, now?: number): Promise<Owner | undefined>;
  /**
   * Turns caching on or off, dropping every entry either way. Off, every lookup reads the database:
   * for while the change listener is down and revocations on other replicas may be missed.
   */
  setCaching(on: boolean): void;
  /** Drops every entry whose owner matches (its key was revoked or its owner changed, here or on another replica). */
  invalidate(matches: (owner: Owner) => boolean): void;
}

/**
 * The one API key cache of the services (services/signal-feedback/README.md "API keys", its "Caching
 * of API keys" paragraph; services/skill-router/README.md "Keys"), so that an authenticated request
 * costs no extra database round trip:
 *
 * - A found owner is reused for `ttlMs` milliseconds, then read again. Unknown keys are never cached
 *   (no negative caching): a key is usable as soon as its creation commits.
 * - At most `maxEntries` entries; beyond it the one read from the database longest ago is dropped.
 * - An owner is only answered, and only cached, when its stored hash equals the presented one in
 *   constant time ({@link hashesEqual}).
 * - Revocation: {@link ApiKeyCache.invalidate} drops entries at once. A service whose keys can be
 *   revoked calls it from a `listenForNotifications` listener on a channel its revoking transaction
 *   notifies, and passes the listener's `onListening` to {@link ApiKeyCache.setCaching}, so a revoked
 *   key stops working on every replica as soon as the revocation commits (with the listener down, the
 *   cache is off). Without such a listener a revoked key works on other replicas for up to `ttlMs`.
 * - A lookup that was in flight when an invalidation (or `setCaching`) happened answers what it read
 *   but caches nothing, so an owner read before a revocation cannot outlive it in the cache.
 */
export function createApiKeyCache<Owner>(options: ApiKeyCacheOptions<Owner>): ApiKeyCache<Owner> {
  const { load, keyHashOf, ttlMs } = options;
  const maxEntries = options.maxEntries ?? 10_000;
  const entries = new Map<string, { owner: Owner; expires: number }>();
  let caching = options.caching ?? true;
  // Bumped by every invalidation: a lookup that started before one must not cache what it read.
  let generation = 0;

  const refresh = async (keyHash: string, now = Date.now()): Promise<Owner | undefined> => {
    const startedIn = generation;
    const loaded = await load(keyHash);
    entries.delete(keyHash);
    // The lookup is by hash; the constant-time comparison guards against any non-exact index match.
    const owner = loaded != null && hashesEqual(keyHashOf(loaded), keyHash) ? loaded : undefined;
    if (owner !== undefined && ttlMs > 0 && caching && startedIn === generation) {
      if (entries.size >= maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      entries.set(keyHash, { owner, expires: now + ttlMs });
    }
    return owner;
  };

  return {
    async get(keyHash, now = Date.now()) {
      const hit = entries.get(keyHash);
      if (hit && hit.expires > now) return hit.owner;
      return refresh(keyHash, now);
    },
    refresh,
    setCaching(on) {
      caching = on;
      generation++;
      entries.clear();
    },
    invalidate(matches) {
      generation++;
      for (const [hash, entry] of entries) if (matches(entry.owner)) entries.delete(hash);
    },
  };
}
