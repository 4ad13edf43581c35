// The official-scheme measurement of bench/market-intel.ts: payments made by the official x402 v2 client
// (`@x402/fetch`'s `x402Client` with `@x402/svm`'s exact scheme), sent to market-intel and to its peer,
// the reference `@x402/express` v2 middleware with `@x402/svm`'s facilitator in-process
// (bench/x402-v2-server.ts), on the same ledger, alternated, at each concurrency. For each side: the
// throughput and latency, the CPU per payment of the server (main thread and all threads), of the
// ledger and of PostgreSQL, and where a payment's time goes (from the preload bench/rpc-timing.ts).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import type autocannon from 'autocannon';
import { Keypair } from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { x402Client, x402HTTPClient } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { fundWallet } from '@repo/solana-localnet';
import {
  besideCpuMs,
  besideSpent,
  cpuSpent,
  cpuTimes,
  quantileFromBuckets,
  run,
  summary,
  waitFor,
  type Beside,
  type RpcScrape,
} from './measure';
import type { TimingSnapshot } from './rpc-timing';

/**
 * Asks the timing preload in `pid` for what it recorded since the last call (SIGUSR2) and resets it.
 * @throws Error when it does not answer within 5 s
 */
export async function takeTiming(pid: number, file: string): Promise<TimingSnapshot> {
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  await waitFor(async () => existsSync(file), 'the timing snapshot', 5000);
  return JSON.parse(readFileSync(file, 'utf8')) as TimingSnapshot;
}

/**
 * `count` distinct `PAYMENT-SIGNATURE` headers made the way an official x402 v2 client makes them
 * (`x402Client` + `ExactSvmScheme` from `@x402/svm/exact/client`, from the `PAYMENT-REQUIRED` of a real
 * 402 of `url`), each by a wallet of its own funded with one price: many agents paying at once, as in
 * production. One wallet would not do: its payments for one request carry the same memo (the
 * request's reference), so they would be one transaction, and market-intel settles one payment per
 * wallet and token account at a time. Each is partially signed, not sent anywhere yet.
 * @throws Error when `url` answers no `PAYMENT-REQUIRED` (market-intel has no fee payer)
 */
export async function prepareOfficialPayments(
  url: string,
  rpcUrl: string,
  mint: string,
  count: number,
): Promise<string[]> {
  const res = await fetch(url);
  const http = new x402HTTPClient(new x402Client());
  if (res.status !== 402 || !res.headers.get('payment-required'))
    throw new Error(`${url} answered ${res.status} without PAYMENT-REQUIRED: is the fee payer set?`);
  const required = http.getPaymentRequiredResponse((name) => res.headers.get(name), await res.json());
  const offer = required.accepts[0];
  if (!offer) throw new Error('PAYMENT-REQUIRED offers nothing');
  const network = offer.network;
  const headers: string[] = [];
  for (let i = 0; i < count; i++) {
    const wallet = Keypair.generate();
    await fundWallet({ rpcUrl, owner: wallet.publicKey.toBase58(), usdcAtomic: BigInt(offer.amount) });
    const scheme = new ExactSvmScheme(await createKeyPairSignerFromBytes(wallet.secretKey), { rpcUrl });
    // The test mint is not one of the client's default assets: listed with a cap of 1 USDC.
    const client = new x402Client()
      .register(network, scheme)
      .setSpendControls({ allowedAssets: [{ network, asset: mint, maxAmountPerPayment: '1000000' }] });
    const header = new x402HTTPClient(client).encodePaymentSignatureHeader(
      await client.createPaymentPayload(required),
    );
    headers.push(header['PAYMENT-SIGNATURE'] ?? '');
  }
  if (new Set(headers).size !== count) throw new Error('the official client made identical payloads');
  return headers;
}

/** A server the official client pays: market-intel or the reference middleware. */
export interface OfficialTarget {
  /** How the tables name it. */
  label: string;
  /** Its origin, e.g. `http://127.0.0.1:13001`. */
  origin: string;
  /** The paid path and query, the same on both sides. */
  path: string;
  /** Its process (a node process: its threads are read from /proc). */
  pid: number;
  /** The file its timing preload writes on SIGUSR2. */
  timingFile: string;
  /** Its `x402_verification_rpc_seconds` (market-intel only: the peer does not verify on chain). */
  scrapeRpc?: () => Promise<RpcScrape>;
}

/** What one side spent per payment; CPU in microseconds, durations in milliseconds (means). */
export interface OfficialRun {
  label: string;
  connections: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** Answers over the run's wall time (the run is a few seconds: autocannon's per-second mean would count a partial last second). */
  rps: number;
  /** Client-side latency (autocannon): whole request, queueing in the server included. */
  p50: number;
  p99: number;
  mean: number;
  /** CPU per payment, µs: the server's main thread, all its threads, the ledger's, PostgreSQL's. */
  cpu: { mainUs: number; allUs: number; ledgerUs: number; postgresUs: number };
  /**
   * The settlement (verify, co-sign, send, confirm: the official facilitator's `settle`, or
   * market-intel's own `ExactSvmSettler.settle`): wall time, how many settled.
   */
  settlements: ReturnType<typeof summary> & { succeeded: number };
  /**
   * The facilitator's verification (its checks and `simulateTransaction`, inside `settle` and in
   * `verify`): calls per payment and mean wall time.
   */
  verify: { perPayment: number; meanMs: number };
  /** The facilitator's JSON-RPC calls by method (simulateTransaction, sendTransaction, getSignatureStatuses...). */
  facilitatorRpc: Record<string, ReturnType<typeof summary>>;
  /**
   * getSignatureStatuses calls per settlement (1: confirmed at the first poll; below 1: settlements
   * in flight shared a call, as market-intel's do).
   */
  statusPollsPerSettlement: number;
  /** Mean settlement time outside its RPC calls (checks, co-signing, event-loop waits). */
  facilitatorOffRpcMeanMs: number;
  /** The server's own on-chain verification after settlement (market-intel only). */
  verificationRpc?: { n: number; meanMs: number; p50Ms: number; p99Ms: number };
  /** SQL statements through `pg` per payment, and their wall time per payment. */
  sql: { perPayment: number; msPerPayment: number };
  /** Mean latency minus settlement, verification RPC and SQL: the answer, HTTP and the wait for a core. */
  restMeanMs: number;
  /** The server's CPU profile of the run (with `BENCH_CPU_PROFILE`; summarise with bench/cpu-profile.ts). */
  profile?: string;
}

const d = (x: number) => Math.round(x * 10) / 10;

/**
 * Pays `target` with `headers` at `connections` concurrent clients and measures the run (see
 * {@link OfficialRun}); the timing preload is reset first.
 * @throws Error when the target's timing preload does not answer within 5 s
 */
export async function measureOfficial(
  target: OfficialTarget,
  headers: string[],
  connections: number,
  beside: Beside,
): Promise<OfficialRun> {
  const rpcBefore = await target.scrapeRpc?.();
  await takeTiming(target.pid, target.timingFile);
  const cpu0 = cpuTimes(target.pid);
  const beside0 = besideCpuMs(beside);
  let i = 0;
  const result: autocannon.Result & { wallSeconds: number } = await run({
    url: target.origin,
    connections,
    amount: headers.length,
    requests: [
      {
        method: 'GET',
        path: target.path,
        setupRequest: (req) => ({
          ...req,
          headers: { ...req.headers, 'payment-signature': headers[i++ % headers.length] ?? '' },
        }),
      },
    ],
  });
  const cpu = cpuSpent(cpu0, cpuTimes(target.pid));
  const besideUsed = besideSpent(beside0, besideCpuMs(beside));
  const timing = await takeTiming(target.pid, target.timingFile);
  const rpcAfter = await target.scrapeRpc?.();
  const n = result.requests.total || 1;
  const perPayment = (ms: number) => d((ms * 1000) / n);

  const settlements = { ...summary(timing.settle.ms), succeeded: timing.settle.succeeded };
  const facilitatorRpc = Object.fromEntries(
    Object.entries(timing.rpc).map(([method, ms]) => [method, summary(ms)]),
  );
  const rpcMean = (method: string) => facilitatorRpc[method]?.mean ?? 0;
  const polls = settlements.n ? (facilitatorRpc.getSignatureStatuses?.n ?? 0) / settlements.n : NaN;
  const verifyTotal = timing.verify.reduce((a, b) => a + b, 0);
  const sqlTotal = timing.sql.reduce((a, b) => a + b, 0);
  let verificationRpc: OfficialRun['verificationRpc'];
  if (rpcBefore && rpcAfter) {
    const count = rpcAfter.count - rpcBefore.count;
    verificationRpc = {
      n: count,
      meanMs: d(count ? ((rpcAfter.sum - rpcBefore.sum) / count) * 1000 : NaN),
      p50Ms: quantileFromBuckets(rpcBefore.buckets, rpcAfter.buckets, 0.5),
      p99Ms: quantileFromBuckets(rpcBefore.buckets, rpcAfter.buckets, 0.99),
    };
  }
  if (settlements.succeeded !== result.requests.total)
    process.stderr.write(
      `bench: warning: ${target.label}: ${settlements.succeeded} settlements for ${result.requests.total} answers\n`,
    );
  return {
    label: target.label,
    connections,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    rps: d(result.requests.total / result.wallSeconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: d(result.latency.mean),
    cpu: {
      mainUs: perPayment(cpu.mainMs),
      allUs: perPayment(cpu.allMs),
      ledgerUs: perPayment(besideUsed.ledgerMs),
      postgresUs: perPayment(besideUsed.postgresMs),
    },
    settlements,
    verify: {
      perPayment: Math.round((timing.verify.length / n) * 100) / 100,
      meanMs: d(timing.verify.length ? verifyTotal / timing.verify.length : NaN),
    },
    facilitatorRpc,
    statusPollsPerSettlement: d(polls * 100) / 100,
    facilitatorOffRpcMeanMs: d(
      settlements.mean -
        rpcMean('simulateTransaction') -
        rpcMean('sendTransaction') -
        // A settlement waits for at least one whole call, even one it shares.
        Math.max(1, polls) * rpcMean('getSignatureStatuses'),
    ),
    ...(verificationRpc ? { verificationRpc } : {}),
    sql: { perPayment: Math.round((timing.sql.length / n) * 100) / 100, msPerPayment: d(sqlTotal / n) },
    restMeanMs: d(
      result.latency.mean -
        settlements.mean -
        (verificationRpc?.n ? (verificationRpc.n * verificationRpc.meanMs) / n : 0) -
        sqlTotal / n,
    ),
    ...(timing.profile ? { profile: timing.profile } : {}),
  };
}

/**
 * The Markdown table of the official scheme: one row per measure, one column per run (the runs of
 * one concurrency side by side, in the order they ran).
 */
export function officialTable(runs: readonly OfficialRun[], bareRps: number): string[] {
  if (!runs.length) return [];
  const rpc = (o: OfficialRun, method: string) => {
    const s = o.facilitatorRpc[method];
    return s ? `${s.mean} ms` : '-';
  };
  const rows: [string, (o: OfficialRun) => string][] = [
    ['clients', (o) => String(o.connections)],
    [
      'throughput (ratio to bare Express)',
      (o) => `${o.rps} req/s (${Math.round((o.rps / bareRps) * 1000) / 1000})`,
    ],
    ['latency p50 / p99 / mean', (o) => `${o.p50} / ${o.p99} / ${o.mean} ms`],
    ['non-2xx, errors', (o) => `${o.non2xx}, ${o.errors}`],
    [
      '**server CPU per payment**, main thread (all threads)',
      (o) => `**${o.cpu.mainUs} µs** (${o.cpu.allUs} µs)`,
    ],
    ['ledger CPU per payment', (o) => `${o.cpu.ledgerUs} µs`],
    ['PostgreSQL CPU per payment', (o) => `${o.cpu.postgresUs} µs`],
    [
      'settlement (verify, co-sign, send, confirm), mean / p99',
      (o) => `${o.settlements.mean} / ${o.settlements.p99} ms`,
    ],
    [
      'facilitator verify: calls per payment × mean',
      (o) =>
        o.verify.perPayment
          ? `${o.verify.perPayment} × ${o.verify.meanMs} ms`
          : 'none (own checks in the settlement)',
    ],
    ['of which simulateTransaction', (o) => rpc(o, 'simulateTransaction')],
    ['sendTransaction (with its preflight: market-intel)', (o) => rpc(o, 'sendTransaction')],
    [
      'confirm: getSignatureStatuses calls per settlement × mean',
      (o) => `${o.statusPollsPerSettlement} × ${rpc(o, 'getSignatureStatuses')}`,
    ],
    ['settlement outside RPC (checks, co-signing, waits)', (o) => `${o.facilitatorOffRpcMeanMs} ms`],
    [
      'our on-chain verification (getTransaction)',
      (o) =>
        !o.verificationRpc
          ? 'none'
          : o.verificationRpc.n === 0
            ? 'none (its settlement is its verification)'
            : `${Math.round((o.verificationRpc.n / o.requests) * 100) / 100} × ${o.verificationRpc.meanMs} ms`,
    ],
    ['SQL statements per payment (wall time)', (o) => `${o.sql.perPayment} (${o.sql.msPerPayment} ms)`],
    ['the rest: the answer, HTTP, waiting for a core', (o) => `${o.restMeanMs} ms`],
  ];
  return [
    `| official scheme | ${runs.map((o) => o.label).join(' | ')} |`,
    `|---|${runs.map(() => '---|').join('')}`,
    ...rows.map(([name, cell]) => `| ${name} | ${runs.map(cell).join(' | ')} |`),
  ];
}

/**
 * The price `url`'s 402 offers in its `PAYMENT-REQUIRED`, in atomic units.
 * @throws Error when `url` answers no `PAYMENT-REQUIRED` offer
 */
export async function offeredAmount(url: string): Promise<string> {
  const res = await fetch(url);
  if (res.status !== 402 || !res.headers.get('payment-required'))
    throw new Error(`${url} answered ${res.status} without PAYMENT-REQUIRED`);
  const required = new x402HTTPClient(new x402Client()).getPaymentRequiredResponse(
    (name) => res.headers.get(name),
    await res.json(),
  );
  const amount = required.accepts[0]?.amount;
  if (!amount) throw new Error(`${url} offers no price in PAYMENT-REQUIRED`);
  return amount;
}

/**
 * The official scheme's targets (docs/benchmarks.md, "Targets"), per concurrency measured, as
 * Markdown rows: market-intel's CPU per payment (all threads, mean of its runs) at most the peer's and
 * at most twice its CPU per push payment (`pushAllThreadsUs`, all threads, µs), and its throughput at
 * 32 clients at least the peer's.
 */
export function officialTargets(
  runs: readonly OfficialRun[],
  pushAllThreadsUs: number,
  ours: string,
): string[] {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const rows: string[] = [];
  for (const connections of [...new Set(runs.map((o) => o.connections))]) {
    const at = runs.filter((o) => o.connections === connections);
    const us = at.filter((o) => o.label === ours);
    const peer = at.filter((o) => o.label !== ours);
    if (!us.length || !peer.length) continue;
    const cpu = Math.round(mean(us.map((o) => o.cpu.allUs)));
    const peerCpu = Math.round(mean(peer.map((o) => o.cpu.allUs)));
    const rps = Math.round(mean(us.map((o) => o.rps)) * 10) / 10;
    const peerRps = Math.round(mean(peer.map((o) => o.rps)) * 10) / 10;
    const met = (ok: boolean) => (ok ? 'yes' : 'no');
    rows.push(
      `| ${connections} clients: CPU per official payment, all threads, against the peer's | ${cpu} µs against ${peerCpu} µs | at most the peer's | ${met(cpu <= peerCpu)} |`,
      `| ${connections} clients: CPU per official payment against 2 × per push payment | ${cpu} µs against 2 × ${Math.round(pushAllThreadsUs)} µs | ≤ 2 × push | ${met(cpu <= 2 * pushAllThreadsUs)} |`,
    );
    if (connections === 32)
      rows.push(
        `| 32 clients: official throughput against the peer's | ${rps} against ${peerRps} req/s | at least the peer's | ${met(rps >= peerRps)} |`,
      );
  }
  return rows.length
    ? ['| official-scheme target | measured | target | met |', '|---|---|---|---|', ...rows]
    : [];
}
