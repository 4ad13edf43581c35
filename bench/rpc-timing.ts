// Preloaded into market-intel and into the reference x402 v2 server (bench/x402-v2-server.ts) by
// bench/market-intel.ts (`node --require`, transpiled to CommonJS when the benchmark starts) to see where
// an official-scheme payment's time goes without changing either:
//  - every call of the official facilitator's `ExactSvmScheme.settle` (verify with its simulation,
//    co-sign, send, confirm), wall time and outcome, and of its verification `_verify` (the checks and
//    the simulation: run by `settle`, and by `verify`, which the reference middleware calls before the
//    handler): the peer's; market-intel's settlements are `ExactSvmSettler.settle` ($BENCH_SETTLER_MODULE,
//    the built module: its checks, co-signing, the send with its preflight and the confirmation);
//  - every statement through the `pg` module $BENCH_PG_MODULE (market-intel's claims, answers and
//    ledger rows), wall time from the call to the result, waiting for the connection's turn included;
//  - every JSON-RPC call made through the global `fetch` (that is @solana/kit's HTTP transport: the
//    peer's facilitator's simulateTransaction / sendTransaction / getSignatureStatuses), and every
//    settlement call of market-intel's pooled client `SolanaRpcClient` ($BENCH_RPC_CLIENT_MODULE, the
//    built module), wall time by method, response body included; the payment verifier's
//    getTransaction / getAccountInfo on that client are not counted here: their time is market-intel's
//    `x402_verification_rpc_seconds`.
// On SIGUSR2 it writes what it recorded since the last SIGUSR2 to $BENCH_RPC_TIMING_OUT (JSON,
// {@link TimingSnapshot}) and starts over. The facilitator module is $BENCH_FACILITATOR_MODULE (the file
// the process resolves, so the patched prototype is the one it uses).
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/** What the preload hands back on SIGUSR2, all durations in milliseconds. */
export interface TimingSnapshot {
  /**
   * `ExactSvmScheme.settle` (or `ExactSvmSettler.settle`) calls: wall time of each, and how many
   * settled (`success: true`, `ok: true`).
   */
  settle: { ms: number[]; succeeded: number };
  /** `ExactSvmScheme._verify` calls (inside `settle` or `verify`): wall time of each. */
  verify: number[];
  /** SQL statements through `pg`: wall time of each. */
  sql: number[];
  /** JSON-RPC calls through the global `fetch`, by method: wall time of each, answer read. */
  rpc: Record<string, number[]>;
  /** The CPU profile of the same span, when $BENCH_CPU_PROFILE_DIR is set (a `.cpuprofile` file). */
  profile?: string;
}

type Settle = (this: unknown, ...args: unknown[]) => Promise<{ success?: boolean }>;
type Verify = (this: unknown, ...args: unknown[]) => Promise<unknown>;
type Query = (this: unknown, ...args: unknown[]) => unknown;

const empty = (): TimingSnapshot => ({ settle: { ms: [], succeeded: 0 }, verify: [], sql: [], rpc: {} });
let snapshot = empty();

const out = process.env.BENCH_RPC_TIMING_OUT;
const facilitatorModule = process.env.BENCH_FACILITATOR_MODULE;
const pgModule = process.env.BENCH_PG_MODULE;

if (facilitatorModule) {
  const facilitator = createRequire(__filename)(facilitatorModule) as {
    ExactSvmScheme: { prototype: { settle: Settle; _verify: Verify } };
  };
  // The private step both `settle` and `verify` run (@x402/svm 2.27).
  const verify = facilitator.ExactSvmScheme.prototype._verify;
  facilitator.ExactSvmScheme.prototype._verify = async function timedVerify(
    this: unknown,
    ...args: unknown[]
  ) {
    const started = performance.now();
    try {
      return await verify.apply(this, args);
    } finally {
      snapshot.verify.push(performance.now() - started);
    }
  };
  const settle = facilitator.ExactSvmScheme.prototype.settle;
  facilitator.ExactSvmScheme.prototype.settle = async function timedSettle(
    this: unknown,
    ...args: unknown[]
  ) {
    const started = performance.now();
    const result = await settle.apply(this, args);
    snapshot.settle.ms.push(performance.now() - started);
    if (result.success) snapshot.settle.succeeded += 1;
    return result;
  };
}

const settlerModule = process.env.BENCH_SETTLER_MODULE;
if (settlerModule) {
  type SettlerSettle = (this: unknown, ...args: unknown[]) => Promise<{ ok?: boolean }>;
  const { ExactSvmSettler } = createRequire(__filename)(settlerModule) as {
    ExactSvmSettler: { prototype: { settle: SettlerSettle } };
  };
  const settle = ExactSvmSettler.prototype.settle;
  ExactSvmSettler.prototype.settle = async function timedSettle(this: unknown, ...args: unknown[]) {
    const started = performance.now();
    const result = await settle.apply(this, args);
    snapshot.settle.ms.push(performance.now() - started);
    if (result.ok) snapshot.settle.succeeded += 1;
    return result;
  };
}

if (pgModule) {
  const pg = createRequire(__filename)(pgModule) as { Client: { prototype: { query: Query } } };
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function timedQuery(this: unknown, ...args: unknown[]) {
    const started = performance.now();
    const record = () => snapshot.sql.push(performance.now() - started);
    // pg's Pool passes a callback; Prisma's adapter and the ledger's client await the promise.
    const callbackAt = args.findIndex((arg) => typeof arg === 'function');
    const callback = args[callbackAt] as ((...results: unknown[]) => unknown) | undefined;
    if (callback) {
      args[callbackAt] = function timedCallback(this: unknown, ...results: unknown[]) {
        record();
        return callback.apply(this, results);
      };
      return query.apply(this, args);
    }
    const result = query.apply(this, args);
    if (result instanceof Promise)
      return result.then(
        (value: unknown) => {
          record();
          return value;
        },
        (err: unknown) => {
          record();
          throw err;
        },
      );
    return result;
  };
}

const rpcClientModule = process.env.BENCH_RPC_CLIENT_MODULE;
if (rpcClientModule) {
  type Call = (this: unknown, method: string, params: unknown[]) => Promise<unknown>;
  const { SolanaRpcClient } = createRequire(__filename)(rpcClientModule) as {
    SolanaRpcClient: { prototype: { call: Call } };
  };
  const verification = new Set(['getTransaction', 'getAccountInfo']);
  // The private method every call of the client goes through.
  const call = SolanaRpcClient.prototype.call;
  SolanaRpcClient.prototype.call = async function timedCall(this: unknown, method, params) {
    if (verification.has(method)) return call.call(this, method, params);
    const started = performance.now();
    try {
      return await call.call(this, method, params);
    } finally {
      (snapshot.rpc[method] ??= []).push(performance.now() - started);
    }
  };
}

const originalFetch = globalThis.fetch;
globalThis.fetch = async function timedFetch(input, init) {
  const body = init?.body;
  const method = typeof body === 'string' ? /"method":\s*"([A-Za-z]+)"/.exec(body)?.[1] : undefined;
  if (method === undefined) return originalFetch(input, init);
  const started = performance.now();
  const response = await originalFetch(input, init);
  const text = await response.text();
  (snapshot.rpc[method] ??= []).push(performance.now() - started);
  return new Response(text, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};

// With $BENCH_CPU_PROFILE_DIR, a V8 CPU profile runs from one SIGUSR2 to the next, so that each
// measured run has a profile of its own (the snapshot names its file).
const profileDir = process.env.BENCH_CPU_PROFILE_DIR;
const profiler = profileDir ? new Session() : undefined;
let profiles = 0;
if (profiler) {
  profiler.connect();
  profiler.post('Profiler.enable', () => profiler.post('Profiler.start'));
}

/** Stops the running profile, writes it to $BENCH_CPU_PROFILE_DIR, starts the next; calls back with its file. */
function nextProfile(done: (file: string | undefined) => void): void {
  if (!profiler || !profileDir) return done(undefined);
  profiler.post('Profiler.stop', (err, result) => {
    const file = err ? undefined : join(profileDir, `${process.pid}-${++profiles}.cpuprofile`);
    if (file) writeFileSync(file, JSON.stringify(result.profile));
    profiler.post('Profiler.start', () => done(file));
  });
}

process.on('SIGUSR2', () => {
  if (!out) return;
  const taken = snapshot;
  snapshot = empty();
  nextProfile((profile) => {
    writeFileSync(`${out}.tmp`, JSON.stringify(profile ? { ...taken, profile } : taken));
    renameSync(`${out}.tmp`, out);
  });
});
