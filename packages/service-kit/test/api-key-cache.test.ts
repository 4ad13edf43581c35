import { createApiKeyCache, hashApiKey, type ApiKeyCacheOptions } from '../src/index';

interface Owner {
  productId: string;
  keyHash: string;
}

/** A cache over an in-memory key table, counting its loads. */
function cacheOver(table: Map<string, Owner>, options: Partial<ApiKeyCacheOptions<Owner>> = {}) {
  const loads: string[] = [];
  const cache = createApiKeyCache<Owner>({
    load: async (hash) => {
      loads.push(hash);
      return table.get(hash);
    },
    keyHashOf: (owner) => owner.keyHash,
    ttlMs: 1_000,
    ...options,
  });
  return { cache, loads };
}

const keyA = hashApiKey('key-a');
const keyB = hashApiKey('key-b');
const ownerA: Owner = { productId: 'p1', keyHash: keyA };
const ownerB: Owner = { productId: 'p2', keyHash: keyB };

describe('createApiKeyCache', () => {
  it('When a found key is read again within ttlMs, then it is answered from memory; after ttlMs it is read again', async () => {
    const { cache, loads } = cacheOver(new Map([[keyA, ownerA]]));
    expect(await cache.get(keyA, 0)).toBe(ownerA);
    expect(await cache.get(keyA, 999)).toBe(ownerA);
    expect(loads).toHaveLength(1);
    expect(await cache.get(keyA, 1_000)).toBe(ownerA);
    expect(loads).toHaveLength(2);
  });

  it('When a key is unknown, then it is not cached: every lookup reads, and it works once it is stored', async () => {
    const table = new Map<string, Owner>();
    const { cache, loads } = cacheOver(table);
    expect(await cache.get(keyA, 0)).toBeUndefined();
    expect(await cache.get(keyA, 1)).toBeUndefined();
    expect(loads).toHaveLength(2);
    table.set(keyA, ownerA);
    expect(await cache.get(keyA, 2)).toBe(ownerA);
  });

  it('When load answers null, then the key is unknown', async () => {
    const cache = createApiKeyCache<Owner>({
      load: async () => null,
      keyHashOf: (o) => o.keyHash,
      ttlMs: 1_000,
    });
    expect(await cache.get(keyA)).toBeUndefined();
  });

  it('When the stored hash differs from the presented one, then nothing is answered or cached', async () => {
    const { cache, loads } = cacheOver(new Map([[keyA, ownerB]]));
    expect(await cache.get(keyA, 0)).toBeUndefined();
    expect(await cache.get(keyA, 1)).toBeUndefined();
    expect(loads).toHaveLength(2);
  });

  it('When ttlMs is 0, then every lookup reads the database', async () => {
    const { cache, loads } = cacheOver(new Map([[keyA, ownerA]]), { ttlMs: 0 });
    await cache.get(keyA, 0);
    await cache.get(keyA, 0);
    expect(loads).toHaveLength(2);
  });

  it('When a key is revoked and its owner invalidated, then the next lookup reads the database and refuses it', async () => {
    const table = new Map([
      [keyA, ownerA],
      [keyB, ownerB],
    ]);
    const { cache, loads } = cacheOver(table);
    await cache.get(keyA, 0);
    await cache.get(keyB, 0);
    table.delete(keyA);
    cache.invalidate((owner) => owner.productId === 'p1');
    expect(await cache.get(keyA, 1)).toBeUndefined();
    expect(await cache.get(keyB, 1)).toBe(ownerB);
    expect(loads).toEqual([keyA, keyB, keyA]);
  });

  it('When an invalidation happens while a lookup is in flight, then its answer is not cached', async () => {
    const table = new Map([[keyA, ownerA]]);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { cache, loads } = cacheOver(table, {
      load: async (hash) => {
        loads.push(hash);
        const owner = table.get(hash);
        await gate;
        return owner;
      },
    });
    const inFlight = cache.get(keyA, 0);
    table.delete(keyA);
    cache.invalidate((owner) => owner.productId === 'p1');
    release();
    expect(await inFlight).toBe(ownerA);
    expect(await cache.get(keyA, 1)).toBeUndefined();
    expect(loads).toHaveLength(2);
  });

  it('When caching is off, then every lookup reads; turning it on or off drops every entry', async () => {
    const { cache, loads } = cacheOver(new Map([[keyA, ownerA]]), { caching: false });
    await cache.get(keyA, 0);
    await cache.get(keyA, 0);
    expect(loads).toHaveLength(2);
    cache.setCaching(true);
    await cache.get(keyA, 0);
    await cache.get(keyA, 0);
    expect(loads).toHaveLength(3);
    cache.setCaching(true);
    await cache.get(keyA, 0);
    expect(loads).toHaveLength(4);
  });

  it('When refresh is called, then the owner is read again and the fresh one is cached', async () => {
    const table = new Map([[keyA, ownerA]]);
    const { cache, loads } = cacheOver(table);
    await cache.get(keyA, 0);
    const changed = { ...ownerA, productId: 'p1-renamed' };
    table.set(keyA, changed);
    expect(await cache.refresh(keyA, 1)).toBe(changed);
    expect(await cache.get(keyA, 2)).toBe(changed);
    expect(loads).toHaveLength(2);
  });

  it('When more than maxEntries keys are found, then the one read longest ago is dropped', async () => {
    const keys = ['k1', 'k2', 'k3'].map(hashApiKey);
    const table = new Map(keys.map((hash, i) => [hash, { productId: `p${i}`, keyHash: hash }]));
    const { cache, loads } = cacheOver(table, { maxEntries: 2 });
    for (const hash of keys) await cache.get(hash, 0);
    loads.length = 0;
    await cache.get(keys[1] as string, 0);
    await cache.get(keys[2] as string, 0);
    expect(loads).toEqual([]);
    await cache.get(keys[0] as string, 0);
    expect(loads).toEqual([keys[0]]);
  });
});
