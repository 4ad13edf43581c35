// signal-feedback benchmark (targets and results in docs/benchmarks.md, "signal-feedback: signal
// ingestion"):
//  POST /api/signals with batches of 100 signals for BENCH_DURATION_S (default 20) seconds at
//  BENCH_CONNECTIONS (default 16) connections: signals per second sustained (target >= 10,000), as a
//  ratio to a raw `pg` multi-row INSERT of the same rows into the same table with the same concurrency
//  and duration, the two alternated for BENCH_ROUNDS (default 3) rounds so each ratio compares
//  neighbours on a shared machine; resident memory of the service after the run, with its breakdown
//  (V8 heap by space, external memory, the rest of the anonymous memory, mapped files) from /proc and
//  the service's own /metrics.
// The service runs from its build exactly as its container does (node dist/main.js, plus
// BENCH_NODE_ARGS when given; logging at info to a discarded stdout) in its own process; autocannon
// and the pg baseline run here. Requests rotate over BENCH_PRODUCTS products of as many Scale users, and
// the month's usage is reset before each round, so the monthly quota (500,000) never interferes.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'pg';
import { describeMemory, memory, type MemoryBreakdown } from './memory';
import { buildService, migrateDatabase, runBench } from './service-setup';

const ROOT = path.resolve(__dirname, '..');
const SERVICE_DIR = path.join(ROOT, 'services/signal-feedback');
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PRODUCTS = Number(process.env.BENCH_PRODUCTS ?? 8);
const BATCH = 100;
const PORT = Number(process.env.BENCH_SIGNAL_FEEDBACK_PORT ?? 13002);
const METRICS_PORT = Number(process.env.BENCH_SIGNAL_FEEDBACK_METRICS_PORT ?? 13102);
const METRICS_URL = `http://127.0.0.1:${METRICS_PORT}`;
/** Alternated rounds of the service and the raw `pg` baseline. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/signal_feedback_bench';
const SKIP_BUILD = process.env.BENCH_SKIP_BUILD === '1';
/** Extra node flags for the service, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile a run. */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const BASE = `http://127.0.0.1:${PORT}`;

const children: ChildProcess[] = [];
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** CPU time the process has used so far, in ms (user and kernel; /proc counts in 1/100 s). */
function cpuMs(pid: number): { user: number; system: number } {
  // The fields after the parenthesised command name: state is field 3, utime 14 and stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
}

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

/** A realistic batch: checkout events with small payloads, routed to two contexts. */
function batchFor(
  contexts: [string, string],
): { type: string; payload: Record<string, unknown>; context_id: string }[] {
  return Array.from({ length: BATCH }, (_, i) => {
    const failed = i % 3 === 0;
    return {
      type: failed ? 'payment_failed' : i % 3 === 1 ? 'checkout_completed' : 'page_view',
      payload: failed
        ? { step: 'payment', error_code: i % 2 ? 'card_declined' : '3ds_timeout', attempt: i }
        : { step: 'confirm', total_cents: 1000 + i },
      context_id: contexts[i % 2]!,
    };
  });
}

async function setupProducts(
  pool: Pool,
): Promise<{ key: string; productId: string; contexts: [string, string] }[]> {
  const out = [];
  for (let i = 0; i < PRODUCTS; i++) {
    const signup = await fetch(`${BASE}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `bench-${Date.now()}-${i}@example.com`, password: 'bench password 123' }),
    });
    const me = await json<{ csrf_token: string; user: { id: string } }>(signup);
    const cookie = (signup.headers.getSetCookie()[0] ?? '').split(';')[0] ?? '';
    await pool.query(`UPDATE users SET plan = 'scale' WHERE id = $1`, [me.user.id]);
    const headers = { 'content-type': 'application/json', cookie, 'x-csrf-token': me.csrf_token };
    const product = await json<{ id: string; api_key: string }>(
      await fetch(`${BASE}/api/products`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: `bench ${i}` }),
      }),
    );
    const ctx = async (name: string, pos: string, neg: string) =>
      (
        await json<{ id: string }>(
          await fetch(`${BASE}/api/context`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              product_id: product.id,
              name,
              content: name,
              positive_signals: [pos],
              negative_signals: [neg],
            }),
          }),
        )
      ).id;
    out.push({
      key: product.api_key,
      productId: product.id,
      contexts: [
        await ctx('Checkout', 'checkout_completed', 'payment_failed'),
        await ctx('Browse', 'page_view', 'search_empty'),
      ] as [string, string],
    });
  }
  return out;
}

/** The baseline: the same rows as multi-row INSERTs straight into `signals`, CONNECTIONS at a time. */
async function rawInsert(
  pool: Pool,
  products: { productId: string; contexts: [string, string] }[],
): Promise<{ signals: number; seconds: number }> {
  const rowsFor = products.map((p) => {
    const values: unknown[] = [];
    const tuples = batchFor(p.contexts).map((s, j) => {
      values.push(
        p.productId,
        s.context_id,
        s.type,
        JSON.stringify(s.payload),
        s.type === 'payment_failed' ? 'negative' : 'positive',
      );
      const b = j * 5;
      return `($${b + 1}::uuid, $${b + 2}::uuid, $${b + 3}, $${b + 4}::jsonb, $${b + 5}::"Sentiment")`;
    });
    return {
      text: `INSERT INTO signals (product_id, context_id, type, payload, sentiment) VALUES ${tuples.join(', ')}`,
      values,
    };
  });
  let inserted = 0;
  const started = Date.now();
  const deadline = started + DURATION_S * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, w) => {
      let i = w;
      while (Date.now() < deadline) {
        const q = rowsFor[i++ % rowsFor.length]!;
        const r = await pool.query(q.text, q.values);
        inserted += r.rowCount ?? 0;
      }
    }),
  );
  return { signals: inserted, seconds: (Date.now() - started) / 1000 };
}

async function main(): Promise<void> {
  log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}`,
  );
  if (!SKIP_BUILD) buildService(ROOT, '@repo/signal-feedback', log);
  await migrateDatabase(DATABASE_URL, path.join(SERVICE_DIR, 'prisma/migrations'), log);
  const pool = new Pool({ connectionString: DATABASE_URL, max: CONNECTIONS });
  await pool.query(
    'TRUNCATE signals, proposals, usage_counters, sessions, contexts, products, users, rate_limits, analysis_runs CASCADE',
  );

  const service = spawn('node', [...NODE_ARGS, 'dist/main.js'], {
    cwd: SERVICE_DIR,
    env: {
      ...process.env,
      // The container's NODE_ENV=production adds only the boot-time refusal of loopback hosts and
      // default credentials, which this machine's PostgreSQL and RabbitMQ are; no request path reads it.
      NODE_ENV: 'development',
      PORT: String(PORT),
      METRICS_PORT: String(METRICS_PORT),
      HOST: '127.0.0.1',
      DATABASE_URL,
      LOG_LEVEL: 'info',
      ANALYSIS_INTERVAL_MS: '0',
      DATABASE_POOL_SIZE: String(CONNECTIONS),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(service);
  const pid = service.pid!;
  await waitFor(async () => (await fetch(`${BASE}/readyz`)).ok, 'signal-feedback');
  const booted = await memory(pid, METRICS_URL);
  log(`memory after boot: ${describeMemory(booted)}`);
  const products = await setupProducts(pool);
  const bodies = products.map((p) => ({ key: p.key, body: JSON.stringify(batchFor(p.contexts)) }));
  const setUp = await memory(pid, METRICS_URL);
  log(`memory after ${products.length} sign-ups, products and contexts: ${describeMemory(setUp)}`);
  log(`${products.length} Scale products ready; warming up`);

  let n = 0;
  const request = {
    method: 'POST' as const,
    path: '/api/signals',
    setupRequest: (req: autocannon.Request) => {
      const b = bodies[n++ % bodies.length]!;
      return { ...req, headers: { 'content-type': 'application/json', 'x-api-key': b.key }, body: b.body };
    },
  };
  await new Promise<void>((resolve, reject) =>
    autocannon({ url: BASE, connections: CONNECTIONS, duration: 3, requests: [request] }, (e) =>
      e ? reject(e) : resolve(),
    ),
  );

  const countSignals = async () =>
    Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM signals')).rows[0]?.n ?? 0);
  const rounds: {
    service: autocannon.Result;
    serviceRate: number;
    /** The service's CPU time per request answered, in ms. */
    cpuPerRequest: { user: number; system: number };
    rowsStored: number;
    rawRate: number;
    memory: MemoryBreakdown;
  }[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    log(
      `round ${round}/${ROUNDS}: POST /api/signals, batches of ${BATCH}, ${CONNECTIONS} connections, ${DURATION_S} s`,
    );
    // A round stores about a million signals: without this, the third one ran into the quota (429s).
    await pool.query('DELETE FROM usage_counters');
    const before = await countSignals();
    const cpuBefore = cpuMs(pid);
    const result = await new Promise<autocannon.Result>((resolve, reject) =>
      autocannon(
        { url: BASE, connections: CONNECTIONS, duration: DURATION_S, requests: [request] },
        (e, r) => (e ? reject(e) : resolve(r)),
      ),
    );
    const cpuAfter = cpuMs(pid);
    const after = await countSignals();
    const mem = await memory(pid, METRICS_URL);
    if (result.non2xx > 0 || result.errors > 0)
      log(`WARNING: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    // Requests in flight when the warm-up or the run stops are stored without being counted there: at
    // most one per connection each time.
    const acknowledged = result['2xx'] * BATCH;
    if (after - before < acknowledged || after - before > acknowledged + 2 * CONNECTIONS * BATCH) {
      log(`WARNING: ${after - before} rows stored for ${acknowledged} signals acknowledged`);
    }
    log(
      `round ${round}/${ROUNDS}: raw pg multi-row INSERT of the same rows, ${CONNECTIONS} connections, ${DURATION_S} s`,
    );
    const raw = await rawInsert(pool, products);
    const entry = {
      service: result,
      serviceRate: acknowledged / DURATION_S,
      cpuPerRequest: {
        user: (cpuAfter.user - cpuBefore.user) / Math.max(1, result.requests.total),
        system: (cpuAfter.system - cpuBefore.system) / Math.max(1, result.requests.total),
      },
      rowsStored: after - before,
      rawRate: raw.signals / raw.seconds,
      memory: mem,
    };
    rounds.push(entry);
    log(
      `round ${round}/${ROUNDS}: service ${Math.round(entry.serviceRate)} signals/s (p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms), raw pg ${Math.round(entry.rawRate)} signals/s, ratio ${(entry.serviceRate / entry.rawRate).toFixed(3)}; service CPU per request ${entry.cpuPerRequest.user.toFixed(2)} ms user + ${entry.cpuPerRequest.system.toFixed(2)} ms system; ${describeMemory(mem)}`,
    );
  }

  // The service has been idle for the last raw pg round: what V8's memory reducer hands back by then.
  const rested = await memory(pid, METRICS_URL);
  log(`memory after ${DURATION_S} s idle: ${describeMemory(rested)}`);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const last = rounds[rounds.length - 1]!;
  const ratios = rounds.map((r) => Number((r.serviceRate / r.rawRate).toFixed(3)));
  const summary = {
    machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, node ${process.version}`,
    nodeArgs: NODE_ARGS,
    durationSeconds: DURATION_S,
    rounds: ROUNDS,
    connections: CONNECTIONS,
    batch: BATCH,
    service: {
      requestsPerSecond: Math.round(mean(rounds.map((r) => r.service.requests.average))),
      signalsPerSecond: Math.round(mean(rounds.map((r) => r.serviceRate))),
      latencyMs: {
        p50: Math.max(...rounds.map((r) => r.service.latency.p50)),
        p99: Math.max(...rounds.map((r) => r.service.latency.p99)),
      },
      non2xx: rounds.reduce((k, r) => k + r.service.non2xx, 0),
      cpuMsPerRequest: {
        user: Number(mean(rounds.map((r) => r.cpuPerRequest.user)).toFixed(3)),
        system: Number(mean(rounds.map((r) => r.cpuPerRequest.system)).toFixed(3)),
      },
      rowsStored: rounds.reduce((k, r) => k + r.rowsStored, 0),
    },
    rawPg: { signalsPerSecond: Math.round(mean(rounds.map((r) => r.rawRate))) },
    // The mean of the per-round ratios: each compares two runs measured side by side.
    ratio: Number(mean(ratios).toFixed(2)),
    roundRatios: ratios,
    memoryMb: { rss: Math.round(last.memory.rss), peak: Math.round(last.memory.peak) },
    memoryBreakdownMb: { afterBoot: booted, afterSetup: setUp, afterRun: last.memory, afterIdle: rested },
  };
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  const m = last.memory;
  process.stdout.write(
    [
      '',
      '| measure | result | target |',
      '|---|---|---|',
      `| POST /api/signals, batches of ${BATCH}, ${CONNECTIONS} connections, ${ROUNDS} × ${DURATION_S} s | ${summary.service.signalsPerSecond.toLocaleString('en-US')} signals/s (${summary.service.requestsPerSecond} req/s, p50 ≤ ${summary.service.latencyMs.p50} ms, p99 ≤ ${summary.service.latencyMs.p99} ms) | ≥ 10,000 signals/s |`,
      `| service CPU per request (user + system) | ${summary.service.cpuMsPerRequest.user} + ${summary.service.cpuMsPerRequest.system} ms | — |`,
      `| raw pg multi-row INSERT, same rows, same concurrency, alternated | ${summary.rawPg.signalsPerSecond.toLocaleString('en-US')} signals/s | — |`,
      `| ratio service / raw pg (mean of the rounds) | ${summary.ratio} (rounds: ${ratios.join(', ')}) | ≥ 0.8 |`,
      `| service resident memory after the run (peak) | ${summary.memoryMb.rss} MB (${summary.memoryMb.peak} MB) | ≤ 200 MB |`,
      `| ... of which | files ${m.files}, V8 heap ${m.heap.total} (young ${m.heap.young}, old ${m.heap.old}, large objects ${m.heap.largeObjects}, code ${m.heap.code}), external ${m.external}, other native ${m.otherNative} MB | — |`,
      `| idle after boot / after set-up / ${DURATION_S} s after the run | ${booted.rss} MB / ${setUp.rss} MB / ${rested.rss} MB | — |`,
      '',
    ].join('\n'),
  );
  await pool.end();
}

runBench(main, children);
