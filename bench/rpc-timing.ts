// Preloaded into market-intel by bench/market-intel.ts (`node --require`, transpiled to CommonJS when the
// benchmark starts) to see where an official-scheme payment's time goes without changing market-intel:
//  - every call of the official facilitator's `ExactSvmScheme.settle` (verify with its simulation,
//    co-sign, send, confirm), wall time and outcome;
//  - every JSON-RPC call made through the global `fetch` (that is @solana/kit's HTTP transport, so the
//    facilitator's simulateTransaction / sendTransaction / getSignatureStatuses; the payment verifier
//    has its own undici pool and is not seen here: its time is market-intel's
//    `x402_verification_rpc_seconds`), wall time by method, response body included.
// On SIGUSR2 it writes what it recorded since the last SIGUSR2 to $BENCH_RPC_TIMING_OUT (JSON,
// {@link TimingSnapshot}) and starts over. The facilitator module is $BENCH_FACILITATOR_MODULE (the file
// market-intel's @repo/x402-solana resolves, so the patched prototype is the one it uses).
import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

/** What the preload hands back on SIGUSR2, all durations in milliseconds. */
export interface TimingSnapshot {
  /** `ExactSvmScheme.settle` calls: wall time of each, and how many settled (`success: true`). */
  settle: { ms: number[]; succeeded: number };
  /** JSON-RPC calls through the global `fetch`, by method: wall time of each, answer read. */
  rpc: Record<string, number[]>;
}

type Settle = (this: unknown, ...args: unknown[]) => Promise<{ success?: boolean }>;

let snapshot: TimingSnapshot = { settle: { ms: [], succeeded: 0 }, rpc: {} };

const out = process.env.BENCH_RPC_TIMING_OUT;
const facilitatorModule = process.env.BENCH_FACILITATOR_MODULE;

if (facilitatorModule) {
  const facilitator = createRequire(__filename)(facilitatorModule) as {
    ExactSvmScheme: { prototype: { settle: Settle } };
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

process.on('SIGUSR2', () => {
  if (!out) return;
  writeFileSync(`${out}.tmp`, JSON.stringify(snapshot));
  renameSync(`${out}.tmp`, out);
  snapshot = { settle: { ms: [], succeeded: 0 }, rpc: {} };
});
