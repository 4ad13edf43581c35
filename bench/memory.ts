// Where a benchmarked service's resident memory goes: /proc and the V8 figures of its /metrics.
import { readFileSync } from 'node:fs';

/** Where the service's resident memory is, in MB (rounded to 0.1). */
export interface MemoryBreakdown {
  rss: number;
  /** Highest RSS so far (VmHWM). */
  peak: number;
  /** Mapped files: the node binary and shared libraries. */
  files: number;
  /** Anonymous memory: the V8 heap, external memory and native allocations. */
  anonymous: number;
  /** V8 heap committed (heapTotal), and by space. */
  heap: { total: number; used: number; young: number; old: number; largeObjects: number; code: number };
  /** Memory V8 accounts outside its heap: Buffers and ArrayBuffers, WebAssembly memory, ... */
  external: number;
  /**
   * Anonymous memory neither heap nor external: malloc'd memory (arenas), compiled WebAssembly, stacks.
   * An estimate: the committed heap is not all resident until used, so it can go below zero at boot.
   */
  otherNative: number;
}

/**
 * A service's memory from /proc (resident sizes) and its /metrics (what V8 reports, through prom-client's
 * default metrics).
 * @param metricsUrl the origin of the service's metrics listener
 */
export async function memory(pid: number, metricsUrl: string): Promise<MemoryBreakdown> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const bytes = (metric: string, space?: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${metric}{`) && (!space || l.includes(`space="${space}"`)))
      .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  const space = (name: string) => bytes('nodejs_heap_space_size_total_bytes', name);
  const mb = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;
  const heapTotal = bytes('nodejs_heap_size_total_bytes');
  const external = bytes('nodejs_external_memory_bytes');
  const anonymous = kb('RssAnon') * 1024;
  return {
    rss: mb(kb('VmRSS') * 1024),
    peak: mb(kb('VmHWM') * 1024),
    files: mb((kb('RssFile') + kb('RssShmem')) * 1024),
    anonymous: mb(anonymous),
    heap: {
      total: mb(heapTotal),
      used: mb(bytes('nodejs_heap_size_used_bytes')),
      young: mb(space('new') + space('new_large_object')),
      old: mb(space('old')),
      largeObjects: mb(space('large_object') + space('code_large_object')),
      code: mb(space('code')),
    },
    external: mb(external),
    otherNative: mb(anonymous - heapTotal - external),
  };
}

/** One line of a {@link MemoryBreakdown}. */
export function describeMemory(m: MemoryBreakdown): string {
  return (
    `RSS ${m.rss} MB (peak ${m.peak}): files ${m.files}, anonymous ${m.anonymous} = V8 heap ${m.heap.total} ` +
    `(used ${m.heap.used}; young ${m.heap.young}, old ${m.heap.old}, large objects ${m.heap.largeObjects}, ` +
    `code ${m.heap.code}) + external ${m.external} + other native ${m.otherNative}`
  );
}
