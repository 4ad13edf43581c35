// skill-router's routing index alone, in plain node (no HTTP, no PostgreSQL): the heap it takes, the
// typed arrays it holds outside the heap and the time one route takes at BENCH_SKILLS skills
// (default 10,000 and 100,000), with directories drawn like bench/skill-router.ts's (a 1,500-word
// vocabulary, 2-word names, 3 capability tags, 12-word descriptions, 1-3 chains) and 6-word tasks, a
// third with a chain, a third with budgets; then the cost of a large vocabulary (a million distinct
// lexemes, as registrations written to inflate it would bring).
// Results in docs/benchmarks.md, "skill-router: routing and verification".
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';
import { RoutingIndex, type RoutableSkill } from '@repo/skill-router/bench';
import { prng } from './prng';

const SIZES = (process.env.BENCH_SKILLS ?? '10000,100000').split(',').map(Number);
const ROUTES = Number(process.env.BENCH_ROUTES ?? 2000);

// A full collection before each reading, so that it counts what the index keeps: on the JavaScript
// heap, and in typed arrays outside it.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as (() => void) | undefined;
const usedMb = () => {
  // Twice: the second finishes freeing the array buffers the first found unreachable.
  gc?.();
  gc?.();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return { heap: heapUsed / 2 ** 20, outside: arrayBuffers / 2 ** 20 };
};

function measure(size: number): Record<string, number> {
  const rand = prng(42);
  const vocab = Array.from({ length: 1500 }, (_, i) => `w${i.toString(36)}x`);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const chains = ['solana', 'ethereum', 'base', 'arbitrum', 'polygon', 'bitcoin'];
  const before = usedMb();
  const index = new RoutingIndex();
  const t0 = performance.now();
  for (let i = 0; i < size; i++) {
    const name = [pick(vocab), pick(vocab), 'agent'];
    const caps = [pick(vocab), pick(vocab), pick(vocab)];
    const description = Array.from({ length: 12 }, () => pick(vocab));
    const skill: RoutableSkill = {
      skillId: `bench-${i}`,
      name: name.join(' '),
      endpoint: `https://skills.example.com/${i}`,
      chains: [...new Set(Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(chains)))],
      priceUsd: rand() < 0.1 ? 0 : Math.round(rand() * 200) / 10_000,
      routeTerms: [...new Set([...name, ...caps, ...description])],
      matchTerms: [...new Set([...caps, ...description])],
      successRate24h: 0.7 + rand() * 0.3,
      avgLatencyMs: 20 + rand() * 900,
      calls30d: Math.floor(rand() * 5000),
      ratingSum: 60,
      ratingCount: 20,
      state: 'active',
    };
    index.upsert(skill);
  }
  // As the service does after a full load.
  index.trim();
  const loadMs = performance.now() - t0;
  const after = usedMb();
  // Every measured task is new: the index remembers the answers of the tasks it ranked.
  const tasks = Array.from({ length: 200 + ROUTES }, (_, i) => ({
    taskTerms: Array.from({ length: 6 }, () => pick(vocab)),
    ...(i % 3 === 0
      ? { chains: [pick(chains)] }
      : i % 3 === 1
        ? { maxPriceUsd: 0.01, maxLatencyMs: 500 }
        : {}),
  }));
  for (let i = 0; i < 200; i++) index.route(tasks[i]!, 10);
  let matched = 0;
  const times: number[] = [];
  for (let i = 0; i < ROUTES; i++) {
    const start = performance.now();
    matched += index.route(tasks[200 + i]!, 10).total;
    times.push(performance.now() - start);
  }
  // The last 200 again: remembered answers.
  const cached: number[] = [];
  for (let i = ROUTES - 200; i < ROUTES; i++) {
    const start = performance.now();
    index.route(tasks[200 + i]!, 10);
    cached.push(performance.now() - start);
  }
  cached.sort((x, y) => x - y);
  times.sort((x, y) => x - y);
  const q = (p: number) => Math.round((times[Math.floor(p * (times.length - 1))] ?? NaN) * 1000);
  return {
    skills: size,
    heap_mb: Math.round(after.heap - before.heap),
    array_buffers_mb: Math.round(after.outside - before.outside),
    build_ms: Math.round(loadMs),
    matches_mean: Math.round(matched / ROUTES),
    route_p50_us: q(0.5),
    route_p99_us: q(0.99),
    remembered_p50_us: Math.round((cached[cached.length >> 1] ?? NaN) * 1000),
  };
}

/**
 * What a vocabulary costs, as registrants could grow it: BENCH_VOCAB_SKILLS skills (default 2,000),
 * each with BENCH_VOCAB_TERMS (default 500) lexemes no other skill has, about a million in all.
 */
function measureVocabulary(): Record<string, number> {
  const skills = Number(process.env.BENCH_VOCAB_SKILLS ?? 2000);
  const perSkill = Number(process.env.BENCH_VOCAB_TERMS ?? 500);
  const before = usedMb();
  const index = new RoutingIndex();
  const t0 = performance.now();
  for (let i = 0; i < skills; i++) {
    const terms = Array.from({ length: perSkill }, (_, j) => `q${i.toString(36)}z${j.toString(36)}`);
    index.upsert({
      skillId: `vocab-${i}`,
      name: 'vocabulary agent',
      endpoint: `https://skills.example.com/v${i}`,
      chains: ['solana'],
      priceUsd: 0.001,
      routeTerms: terms,
      matchTerms: terms,
      successRate24h: 1,
      avgLatencyMs: 100,
      calls30d: 0,
      ratingSum: 0,
      ratingCount: 0,
      state: 'active',
    });
  }
  index.trim();
  const loadMs = performance.now() - t0;
  const after = usedMb();
  const lexemes = skills * perSkill;
  const heap = after.heap - before.heap;
  const outside = after.outside - before.outside;
  return {
    skills,
    lexemes,
    heap_mb: Math.round(heap),
    array_buffers_mb: Math.round(outside),
    heap_bytes_per_lexeme: Math.round((heap * 2 ** 20) / lexemes),
    array_buffer_bytes_per_lexeme: Math.round((outside * 2 ** 20) / lexemes),
    build_ms: Math.round(loadMs),
  };
}

const results = SIZES.map(measure);
const vocabulary = measureVocabulary();
process.stdout.write(
  JSON.stringify(
    {
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model,
        node: process.version,
        loadavg: os.loadavg(),
      },
      gc: Boolean(gc),
      results,
      vocabulary,
    },
    null,
    2,
  ) + '\n',
);
