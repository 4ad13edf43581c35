// market-intel benchmarks (targets and results in docs/benchmarks.md):
//  1. unpaid 402 challenge throughput of market-intel and of the reference middleware x402-express 1.2
//     (bench/x402-express-server.ts), each as a ratio to a bare Express JSON route, the three measured
//     alternately for BENCH_ROUNDS rounds (target: market-intel >= 0.9 and above x402-express);
//  2. paid requests with fresh signatures at 32 concurrent clients on the local ledger, after
//     BENCH_PAID_WARMUP unmeasured ones: throughput as a ratio to the bare route measured right
//     before and after (target 2 × 0.044), p50/p99 latency (target p99 <= 50 ms), the part spent
//     in Solana RPC (from the service's /metrics), and the CPU time of market-intel's main thread per
//     paid request against the bare server's per request (from /proc: a measure the other processes
//     sharing the cores move less than they move throughput), and the CPU those other processes
//     (PostgreSQL, the ledger, this load generator) spend per paid request;
//  3. paid requests in the official x402 exact SVM scheme (`PAYMENT-SIGNATURE` with a transaction
//     the official client signed and market-intel settles through the official facilitator), at a
//     few concurrencies: p50/p99 and where the time goes (settlement, our verification RPC, the rest);
//  4. replays of a used signature on a synchronous endpoint, ratio to the bare route measured
//     alternately with it (target >= 0.8);
//  5. resident memory of market-intel after the run (target <= 200 MB).
// The ledger, market-intel, the bare server and the x402-express server each run in their own
// process; every figure is also printed as a ratio to the bare route. The load generator
// (autocannon) runs here. market-intel runs from its build (node dist/main.js), logging at info, with
// the ledger's fee payer and merchant wallet (so every 402 also carries PAYMENT-REQUIRED) and, unless
// BENCH_RPC_TIMING=0, the timing preload of bench/rpc-timing.ts.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import ts from 'typescript';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { x402Client, x402HTTPClient } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { ComputeBudgetProgram, Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import type * as SplToken from '@solana/spl-token' with { 'resolution-mode': 'import' };
import { applyMigrations, ensureDatabase } from '@repo/db-migrate';
import { fundWallet, getLocalnetInfo, rpcUrlFor } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { Client } from 'pg';
import type { TimingSnapshot } from './rpc-timing';
import { startScript } from './start-script';

// spl-token ships a CommonJS build with ESM-only typings (see packages/solana-localnet/src/deps.ts).
const { createTransferCheckedInstruction, getAssociatedTokenAddressSync } =
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('@solana/spl-token') as typeof SplToken;

const ROOT = path.resolve(__dirname, '..');
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PAID_REQUESTS = Number(process.env.BENCH_PAID_REQUESTS ?? 3000);
/** Paid requests sent first and not measured: the paid path's code and statements warmed, as the 402's are. */
const PAID_WARMUP = Number(process.env.BENCH_PAID_WARMUP ?? 300);
const LEDGER_PORT = Number(process.env.BENCH_LEDGER_PORT ?? 18899);
const MI_PORT = Number(process.env.BENCH_MARKET_INTEL_PORT ?? 13001);
const MI_METRICS_PORT = Number(process.env.BENCH_MARKET_INTEL_METRICS_PORT ?? 13101);
const BARE_PORT = Number(process.env.BENCH_BARE_PORT ?? 13099);
const PEER_PORT = Number(process.env.BENCH_PEER_PORT ?? 13098);
/** Rounds of the alternated measurements (bare, x402-express, market-intel; bare, replay). */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/market_intel_bench';
const GAPS = '/api/v1/scout/gaps?sector=fintech&limit=5';
/** Extra node flags for market-intel, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile a run. */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** Run the paid phase only (for profiling it); the other numbers are then meaningless. */
const ONLY_PAID = process.env.BENCH_ONLY_PAID === '1';
/** Skip the build step (when dist is current). */
const SKIP_BUILD = process.env.BENCH_SKIP_BUILD === '1';
/**
 * Official-scheme payments per measured concurrency; 0 starts market-intel without a fee payer (no
 * official scheme, no `PAYMENT-REQUIRED`), as before it offered one.
 */
const OFFICIAL_REQUESTS = Number(process.env.BENCH_OFFICIAL_REQUESTS ?? 300);
/** The concurrencies the official scheme is measured at. */
const OFFICIAL_CONNECTIONS = (process.env.BENCH_OFFICIAL_CONNECTIONS ?? '8,32')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
/** Preload bench/rpc-timing.ts into market-intel (settlement and facilitator RPC timing); `0`: off. */
const RPC_TIMING = process.env.BENCH_RPC_TIMING !== '0';
/**
 * market-intel's fast-path switches as it inherits them from this process (docs/architecture.md, "Fast
 * paths"): `X402_HOT_PATH=false pnpm bench market-intel` measures the full path alone. Printed with the
 * figures, unset ones as their default.
 */
const FAST_PATHS = Object.fromEntries(
  ['X402_HOT_PATH', 'X402_DEFER_VERIFIED_MARK', 'REPORT_CACHE'].map((name) => [
    name,
    process.env[name]?.trim() || 'true',
  ]),
);

const children: ChildProcess[] = [];
/** Scratch directory (the compiled timing preload and its snapshots), removed at the end. */
let tmp: string | undefined;
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

function start(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): ChildProcess {
  const child = spawn(cmd, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * One autocannon run, with its wall time in seconds measured here, from the start to the last
 * response: autocannon's own `duration` and per-second mean move in whole seconds, and its callback
 * comes at the next whole second after the last response of a run of `amount` requests — about 10 %
 * of a run of a few thousand paid requests.
 */
function run(opts: autocannon.Options): Promise<autocannon.Result & { wallSeconds: number }> {
  const started = performance.now();
  let last = started;
  return new Promise((resolve, reject) => {
    const instance = autocannon(opts, (err, result) =>
      err ? reject(err) : resolve({ ...result, wallSeconds: (last - started) / 1000 }),
    );
    instance.on('response', () => {
      last = performance.now();
    });
  });
}

function rssMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** CPU time of a process's main thread and of all its threads, and the main thread's run-queue wait, in ms. */
interface CpuTimes {
  mainMs: number;
  allMs: number;
  mainWaitMs: number;
}

/**
 * CPU times of `pid` from `/proc/<pid>/task/<tid>/schedstat` (nanoseconds on the CPU, nanoseconds
 * runnable but waiting for one): a machine's speed changes the throughput of every phase, a busy
 * neighbour only the wait.
 */
function cpuTimes(pid: number): CpuTimes {
  const read = (tid: string) => {
    const [run = '0', wait = '0'] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
    return { run: Number(run) / 1e6, wait: Number(wait) / 1e6 };
  };
  const main = read(String(pid));
  let allMs = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      allMs += read(tid).run;
    } catch {
      // a thread that ended in between
    }
  }
  return { mainMs: main.run, allMs, mainWaitMs: main.wait };
}

/**
 * CPU time in ms (all threads, from schedstat) of the processes beside market-intel that a paid
 * request makes work — PostgreSQL's (backends and the WAL writer) and the ledger's — read in one pass
 * over `/proc`, and of this one (the load generator).
 */
function besideCpuMs(): { postgresMs: number; ledgerMs: number; loadMs: number } {
  const usage = process.cpuUsage();
  let postgresMs = 0;
  let ledgerMs = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (comm === 'postgres') postgresMs += cpuTimes(Number(pid)).allMs;
      else if (
        comm === 'node' &&
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('solana-localnet/src/cli.ts')
      )
        ledgerMs += cpuTimes(Number(pid)).allMs;
    } catch {
      // a process that ended in between, or another user's
    }
  }
  return { postgresMs, ledgerMs, loadMs: (usage.user + usage.system) / 1000 };
}

/** What `pid` spent between two {@link cpuTimes} readings. */
function cpuSpent(before: CpuTimes, after: CpuTimes): CpuTimes {
  return {
    mainMs: after.mainMs - before.mainMs,
    allMs: after.allMs - before.allMs,
    mainWaitMs: after.mainWaitMs - before.mainWaitMs,
  };
}

async function scrapeRpc(): Promise<{ sum: number; count: number; buckets: [number, number][] }> {
  const text = await (await fetch(`http://127.0.0.1:${MI_METRICS_PORT}/metrics`)).text();
  const line = (re: RegExp) => text.split('\n').filter((l) => re.test(l));
  const sum = line(/^x402_verification_rpc_seconds_sum\{.*network="solana"/).reduce(
    (n, l) => n + Number(l.split(' ').pop()),
    0,
  );
  const count = line(/^x402_verification_rpc_seconds_count\{.*network="solana"/).reduce(
    (n, l) => n + Number(l.split(' ').pop()),
    0,
  );
  const buckets = line(/^x402_verification_rpc_seconds_bucket\{.*network="solana"/).map(
    (l): [number, number] => {
      const le = /le="([^"]+)"/.exec(l)?.[1] ?? '+Inf';
      return [le === '+Inf' ? Infinity : Number(le), Number(l.split(' ').pop())];
    },
  );
  return { sum, count, buckets };
}

function quantileFromBuckets(before: [number, number][], after: [number, number][], q: number): number {
  const deltas = after.map(([le, n], i) => [le, n - (before[i]?.[1] ?? 0)] as [number, number]);
  const total = deltas[deltas.length - 1]?.[1] ?? 0;
  const target = total * q;
  const hit = deltas.find(([, n]) => n >= target);
  return hit ? hit[0] * 1000 : NaN;
}

/** Signs and sends `count` distinct USDC payments of `amount` to `payTo`, returns their signatures. */
async function preparePayments(
  rpcUrl: string,
  payer: Keypair,
  mint: string,
  payTo: string,
  amount: bigint,
  count: number,
): Promise<string[]> {
  const connection = new Connection(rpcUrl, 'confirmed');
  const mintKey = new PublicKey(mint);
  const source = getAssociatedTokenAddressSync(mintKey, payer.publicKey);
  const signatures: string[] = [];
  let blockhash = (await connection.getLatestBlockhash()).blockhash;
  for (let i = 0; i < count; i += 8) {
    if (i % 400 === 0) blockhash = (await connection.getLatestBlockhash()).blockhash;
    const batch = Array.from({ length: Math.min(8, count - i) }, (_, j) => {
      // A distinct compute-unit price makes every transaction (and signature) unique.
      const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
        ComputeBudgetProgram.setComputeUnitPrice({ microLamports: i + j + 1 }),
        createTransferCheckedInstruction(source, mintKey, new PublicKey(payTo), payer.publicKey, amount, 6),
      );
      tx.sign(payer);
      return connection.sendRawTransaction(tx.serialize(), { skipPreflight: false });
    });
    signatures.push(...(await Promise.all(batch)));
  }
  return signatures;
}

/** The `q` quantile (0..1, nearest rank) of `xs`, NaN when empty. */
function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length ? (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN) : NaN;
}

/** Count, mean, p50 and p99 of durations in milliseconds (rounded to 0.1 ms). */
function summary(ms: readonly number[]): { n: number; mean: number; p50: number; p99: number } {
  const d = (x: number) => Math.round(x * 10) / 10;
  return {
    n: ms.length,
    mean: d(ms.length ? ms.reduce((a, b) => a + b, 0) / ms.length : NaN),
    p50: d(quantile(ms, 0.5)),
    p99: d(quantile(ms, 0.99)),
  };
}

/**
 * Transpiles bench/rpc-timing.ts to CommonJS in `dir` (market-intel runs on plain node) and returns
 * the file to `--require`.
 */
function compileTimingPreload(dir: string): string {
  const source = readFileSync(path.join(__dirname, 'rpc-timing.ts'), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  });
  const file = path.join(dir, 'rpc-timing.cjs');
  writeFileSync(file, outputText);
  return file;
}

/**
 * Asks the timing preload in `pid` for what it recorded since the last call (SIGUSR2) and resets it.
 * @throws Error when it does not answer within 5 s
 */
async function takeTiming(pid: number, file: string): Promise<TimingSnapshot> {
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
async function prepareOfficialPayments(
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

/** One measured concurrency of the official scheme; durations in milliseconds. */
interface OfficialRun {
  connections: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** Answers over the run's wall time (the run is a few seconds: autocannon's per-second mean would count a partial last second). */
  rps: number;
  /** Client-side latency (autocannon): whole request, queueing in market-intel included. */
  p50: number;
  p99: number;
  mean: number;
  /** Wall time of the official facilitator's `settle` (verify + simulate, co-sign, send, confirm). */
  settlements?: ReturnType<typeof summary> & { succeeded: number };
  /** The facilitator's JSON-RPC calls by method (simulateTransaction, sendTransaction, getSignatureStatuses...). */
  facilitatorRpc?: Record<string, ReturnType<typeof summary>>;
  /** getSignatureStatuses calls per settlement (1: confirmed at the first poll, no 250 ms sleep). */
  statusPollsPerSettlement?: number;
  /** Mean settlement time outside its RPC calls (checks, signing, sleeps, event-loop waits). */
  facilitatorOffRpcMeanMs?: number;
  /** market-intel's own verification after settlement (`x402_verification_rpc_seconds`). */
  verificationRpc: { n: number; meanMs: number; p50Ms: number; p99Ms: number };
  /** Mean latency minus mean settlement minus mean verification RPC: claim, rate limits, mark verified, handler, store, HTTP, queueing. */
  restMeanMs?: number;
}

type RpcScrape = Awaited<ReturnType<typeof scrapeRpc>>;

/** Puts one official-scheme run's numbers together (see {@link OfficialRun}). */
function officialRun(
  connections: number,
  result: autocannon.Result & { wallSeconds: number },
  timing: TimingSnapshot | undefined,
  before: RpcScrape,
  after: RpcScrape,
): OfficialRun {
  const d = (x: number) => Math.round(x * 10) / 10;
  const verifications = after.count - before.count;
  const verificationRpc = {
    n: verifications,
    meanMs: d(verifications ? ((after.sum - before.sum) / verifications) * 1000 : NaN),
    p50Ms: quantileFromBuckets(before.buckets, after.buckets, 0.5),
    p99Ms: quantileFromBuckets(before.buckets, after.buckets, 0.99),
  };
  const run: OfficialRun = {
    connections,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    rps: d(result.requests.total / result.wallSeconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: d(result.latency.mean),
    verificationRpc,
  };
  if (!timing) return run;
  const settlements = { ...summary(timing.settle.ms), succeeded: timing.settle.succeeded };
  const facilitatorRpc = Object.fromEntries(
    Object.entries(timing.rpc).map(([method, ms]) => [method, summary(ms)]),
  );
  const mean = (method: string) => facilitatorRpc[method]?.mean ?? 0;
  const polls = settlements.n ? (facilitatorRpc.getSignatureStatuses?.n ?? 0) / settlements.n : NaN;
  if (settlements.succeeded !== result.requests.total)
    log(`warning: ${settlements.succeeded} settlements for ${result.requests.total} answers`);
  return {
    ...run,
    settlements,
    facilitatorRpc,
    statusPollsPerSettlement: d(polls * 100) / 100,
    facilitatorOffRpcMeanMs: d(
      settlements.mean -
        mean('simulateTransaction') -
        mean('sendTransaction') -
        polls * mean('getSignatureStatuses'),
    ),
    restMeanMs: d(result.latency.mean - settlements.mean - verificationRpc.meanMs),
  };
}

/** The Markdown rows of one official-scheme run. */
function officialRows(o: OfficialRun, bareRps: number): string[] {
  const rpc = (method: string) => {
    const s = o.facilitatorRpc?.[method];
    return s ? `${method} ${s.mean} ms (p99 ${s.p99})` : `${method} -`;
  };
  return [
    `| paid, official scheme, ${o.connections} clients | ${o.rps} req/s, ratio ${Math.round((o.rps / bareRps) * 1000) / 1000}; p50 ${o.p50} ms, p99 ${o.p99} ms, mean ${o.mean} ms (${o.non2xx} non-2xx, ${o.errors} errors) | |`,
    ...(o.settlements
      ? [
          `| of which facilitator settlement | p50 ${o.settlements.p50} ms, p99 ${o.settlements.p99} ms, mean ${o.settlements.mean} ms: ${rpc('simulateTransaction')}, ${rpc('sendTransaction')}, ${o.statusPollsPerSettlement} × ${rpc('getSignatureStatuses')}, ${o.facilitatorOffRpcMeanMs} ms outside RPC | |`,
        ]
      : []),
    `| of which our verification RPC | mean ${o.verificationRpc.meanMs} ms, p50 ≤ ${o.verificationRpc.p50Ms} ms, p99 ≤ ${o.verificationRpc.p99Ms} ms | |`,
    ...(o.restMeanMs === undefined ? [] : [`| of which the rest (mean) | ${o.restMeanMs} ms | |`]),
  ];
}

async function main(): Promise<void> {
  log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}`,
  );
  log('building market-intel');
  const build = SKIP_BUILD
    ? { status: 0 }
    : spawnSync(
        'pnpm',
        ['exec', 'turbo', 'run', 'build', '--filter=@repo/market-intel...', '--output-logs=errors-only'],
        { cwd: ROOT, stdio: 'inherit' },
      );
  if (build.status !== 0) throw new Error('build failed');

  log('starting the ledger, the database and the servers');
  // BENCH_LEDGER_URL reuses a ledger started elsewhere (e.g. under a profiler).
  const ledgerUrl = process.env.BENCH_LEDGER_URL ?? `http://127.0.0.1:${LEDGER_PORT}`;
  if (!process.env.BENCH_LEDGER_URL) {
    start(
      'pnpm',
      [
        'exec',
        'tsx',
        '--conditions=@repo/source',
        'packages/solana-localnet/src/cli.ts',
        'start',
        '--memory',
        '--port',
        String(LEDGER_PORT),
      ],
      {},
    );
  }
  await waitFor(async () => Boolean(await getLocalnetInfo(ledgerUrl)), 'the ledger');
  const info = await getLocalnetInfo(rpcUrlFor(ledgerUrl, 'solana'));

  await ensureDatabase(DATABASE_URL);
  await applyMigrations({
    databaseUrl: DATABASE_URL,
    migrationsDir: path.join(ROOT, 'services/market-intel/prisma/migrations'),
    log: { info: () => undefined, warn: log },
  });
  const pg = new Client({ connectionString: DATABASE_URL });
  await pg.connect();
  await pg.query('TRUNCATE x402_payments');
  await pg.end();
  const imported = spawnSync(
    'pnpm',
    [
      'exec',
      'tsx',
      '--conditions=@repo/source',
      'src/entry-points/cli/import-report.ts',
      'fixtures/sample-report.json',
      '--shift-to-now',
      '--if-empty',
    ],
    {
      cwd: path.join(ROOT, 'services/market-intel'),
      env: { ...process.env, DATABASE_URL },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  if (imported.status !== 0) throw new Error(`importing the sample report failed (exit ${imported.status})`);

  const { command: startCmd, args: startArgs } = startScript(path.join(ROOT, 'services/market-intel'));
  tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-market-intel-'));
  const timingFile = path.join(tmp, 'timing.json');
  const preload = RPC_TIMING ? ['--require', compileTimingPreload(tmp)] : [];
  const official = OFFICIAL_REQUESTS > 0;
  const mi = start(
    startCmd,
    [...NODE_ARGS, ...preload, ...startArgs],
    {
      PORT: String(MI_PORT),
      METRICS_PORT: String(MI_METRICS_PORT),
      // Every 402 and paid request computes its request reference, as production does with a secret.
      X402_REFERENCE_SECRET: 'a benchmark reference secret of 32+ bytes',
      // One client pays 32 at a time here: above the default limit of attempts in flight.
      X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT: '1000000',
      HOST: '127.0.0.1',
      DATABASE_URL,
      DATABASE_POOL_SIZE: '20',
      SOLANA_RPC_URL: info.rpcUrl,
      USDC_MINT: info.mint,
      MERCHANT_TOKEN_ACCOUNT: info.merchantTokenAccount,
      LOG_LEVEL: 'info',
      // The container's NODE_ENV=production adds only the boot-time refusal of loopback hosts and
      // default credentials, which this machine's PostgreSQL and RabbitMQ are; no request path reads it.
      NODE_ENV: 'development',
      // The official scheme, as the dev stack passes it (scripts/stack.ts). The settlement rate limits
      // (60 per payer and 120 per client a minute by default) would refuse a benchmark's one payer and
      // one address after the first hundred payments: raised, still checked on every settlement.
      ...(official
        ? {
            X402_FEE_PAYER_KEYPAIR: info.feePayerKeypairPath,
            MERCHANT_WALLET: info.merchantOwner,
            X402_SETTLEMENTS_PER_MINUTE_PER_PAYER: '1000000',
            X402_SETTLEMENTS_PER_MINUTE_PER_CLIENT: '1000000',
          }
        : {}),
      ...(RPC_TIMING
        ? {
            BENCH_RPC_TIMING_OUT: timingFile,
            // The file market-intel's @repo/x402-solana loads, so that the preload patches that very class.
            BENCH_FACILITATOR_MODULE: require.resolve('@x402/svm/exact/facilitator', {
              paths: [path.join(ROOT, 'packages/x402-solana')],
            }),
          }
        : {}),
    },
    path.join(ROOT, 'services/market-intel'),
  );
  start('pnpm', ['exec', 'tsx', 'bench/bare-server.ts'], { PORT: String(BARE_PORT) });
  start('pnpm', ['exec', 'tsx', 'bench/x402-express-server.ts'], { PORT: String(PEER_PORT) });
  const BARE = `http://127.0.0.1:${BARE_PORT}/bare`;
  const PEER = `http://127.0.0.1:${PEER_PORT}/protected-route`;
  await waitFor(async () => (await fetch(`http://127.0.0.1:${MI_PORT}/livez`)).ok, 'market-intel');
  await waitFor(async () => (await fetch(BARE)).ok, 'the bare server');
  await waitFor(async () => (await fetch(PEER)).status === 402, 'the x402-express server');
  const barePid = Number(await (await fetch(`http://127.0.0.1:${BARE_PORT}/pid`)).text());

  const bench = (url: string, extra: Partial<autocannon.Options> = {}) =>
    run({ url, connections: CONNECTIONS, duration: DURATION_S, ...extra });

  log('warming up');
  await bench(BARE, { duration: 2 });
  await bench(PEER, { duration: 2 });
  if (!ONLY_PAID) await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, { duration: 2 });

  const rounds = ONLY_PAID ? 1 : ROUNDS;
  log(`1/4 402 challenge: bare Express, x402-express and market-intel alternated, ${rounds} round(s)`);
  const challengeOffersV2 = Boolean(
    (await fetch(`http://127.0.0.1:${MI_PORT}${GAPS}`)).headers.get('payment-required'),
  );
  const challengeRounds: {
    bare: number;
    peer: number;
    challenge: number;
    cold: number;
    challenge402: number;
  }[] = [];
  let nonce = 0;
  for (let i = 0; i < rounds; i++) {
    const bareRun = await bench(BARE, { duration: ONLY_PAID ? 1 : DURATION_S });
    const peerRun = await bench(PEER, { duration: ONLY_PAID ? 1 : DURATION_S });
    const challengeRun = await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
      duration: ONLY_PAID ? 1 : DURATION_S,
    });
    // Every request a URL never asked before (an extra query parameter the route ignores but the
    // request reference covers): the full path, which the first ask of each URL takes.
    const coldRun = await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
      duration: ONLY_PAID ? 1 : DURATION_S,
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `${GAPS}&nonce=${nonce++}` }) }],
    });
    challengeRounds.push({
      bare: bareRun.requests.average,
      peer: peerRun.requests.average,
      challenge: challengeRun.requests.average,
      cold: coldRun.requests.average,
      challenge402: challengeRun['4xx'],
    });
    log(
      `  round ${i + 1}: bare ${Math.round(bareRun.requests.average)}, x402-express ${Math.round(peerRun.requests.average)}, market-intel ${Math.round(challengeRun.requests.average)} (every URL new: ${Math.round(coldRun.requests.average)}) req/s`,
    );
  }

  log(`2/4 preparing ${PAID_WARMUP} + ${PAID_REQUESTS} fresh payments`);
  const payer = Keypair.generate();
  await fundWallet({
    rpcUrl: info.rpcUrl,
    owner: payer.publicKey.toBase58(),
    usdcAtomic: BigInt(PAID_WARMUP + PAID_REQUESTS + 10) * 100_000n,
    lamports: 100e9,
  });
  const signatures = await preparePayments(
    info.rpcUrl,
    payer,
    info.mint,
    info.merchantTokenAccount,
    100_000n,
    PAID_WARMUP + PAID_REQUESTS,
  );
  const payFresh = (fresh: string[]) => {
    let next = 0;
    return run({
      url: `http://127.0.0.1:${MI_PORT}`,
      connections: CONNECTIONS,
      amount: fresh.length,
      requests: [
        {
          method: 'GET',
          path: GAPS,
          setupRequest: (req) => ({
            ...req,
            headers: {
              ...req.headers,
              'x-payment': encodePaymentHeader('solana', fresh[next++ % fresh.length] ?? ''),
            },
          }),
        },
      ],
    });
  };
  log(`2/4 warming up the paid path (${PAID_WARMUP} payments)`);
  if (PAID_WARMUP > 0) await payFresh(signatures.slice(0, PAID_WARMUP));
  // The bare route right before and right after: the paid run's ratio is to their mean, as the other
  // measures are to the bare runs alternated with them.
  const bareCpu0 = cpuTimes(barePid);
  const bareBeforePaid = await bench(BARE, { duration: 5 });
  const bareCpu1 = cpuTimes(barePid);
  const rpcBefore = await scrapeRpc();
  log(`2/4 paying with fresh signatures at ${CONNECTIONS} connections`);
  const paidCpu0 = cpuTimes(mi.pid ?? 0);
  const beside0 = besideCpuMs();
  const paid = await payFresh(signatures.slice(PAID_WARMUP));
  const paidCpu = cpuSpent(paidCpu0, cpuTimes(mi.pid ?? 0));
  const beside1 = besideCpuMs();
  const rpcAfter = await scrapeRpc();
  const bareCpu2 = cpuTimes(barePid);
  const bareAfterPaid = await bench(BARE, { duration: 5 });
  const bareCpu = cpuSpent(bareCpu0, bareCpu1);
  const bareCpuAfter = cpuSpent(bareCpu2, cpuTimes(barePid));
  // CPU per request of each side's main thread, in microseconds.
  const bareUsPerRequest =
    ((bareCpu.mainMs + bareCpuAfter.mainMs) * 1000) /
    (bareBeforePaid.requests.total + bareAfterPaid.requests.total);
  const paidUsPerRequest = (paidCpu.mainMs * 1000) / paid.requests.total;
  const bareBesidePaid = (bareBeforePaid.requests.average + bareAfterPaid.requests.average) / 2;
  const rpcCount = rpcAfter.count - rpcBefore.count;
  const rpcMean = rpcCount ? ((rpcAfter.sum - rpcBefore.sum) / rpcCount) * 1000 : NaN;

  const officialRuns: OfficialRun[] = [];
  if (official) {
    // Agents pay as the README's official client would, each from its own wallet; the fee payer pays the fees.
    const prepare = (count: number) =>
      prepareOfficialPayments(`http://127.0.0.1:${MI_PORT}${GAPS}`, info.rpcUrl, info.mint, count);
    const pay = (headers: string[], connections: number) => {
      let i = 0;
      return run({
        url: `http://127.0.0.1:${MI_PORT}`,
        connections,
        amount: headers.length,
        requests: [
          {
            method: 'GET',
            path: GAPS,
            setupRequest: (req) => ({
              ...req,
              headers: { ...req.headers, 'payment-signature': headers[i++ % headers.length] ?? '' },
            }),
          },
        ],
      });
    };
    log('3/4 warming up the official scheme (20 payments, 4 connections)');
    await pay(await prepare(20), 4);
    for (const connections of OFFICIAL_CONNECTIONS) {
      log(`3/4 preparing ${OFFICIAL_REQUESTS} official-scheme payments with the official client`);
      const headers = await prepare(OFFICIAL_REQUESTS);
      const before = await scrapeRpc();
      if (RPC_TIMING) await takeTiming(mi.pid ?? 0, timingFile);
      log(`3/4 paying in the official scheme at ${connections} connections`);
      const result = await pay(headers, connections);
      const timing = RPC_TIMING ? await takeTiming(mi.pid ?? 0, timingFile) : undefined;
      officialRuns.push(officialRun(connections, result, timing, before, await scrapeRpc()));
    }
  }

  log(`4/4 replays of one used signature, alternated with the bare route, ${rounds} round(s)`);
  const replayRounds: { bare: number; replay: number; non2xx: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const bareRun = await bench(BARE, { duration: ONLY_PAID ? 1 : DURATION_S });
    const replayRun = await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
      duration: ONLY_PAID ? 1 : DURATION_S,
      headers: { 'x-payment': encodePaymentHeader('solana', signatures[0] ?? '') },
    });
    replayRounds.push({
      bare: bareRun.requests.average,
      replay: replayRun.requests.average,
      non2xx: replayRun.non2xx,
    });
  }

  const mem = rssMb(mi.pid ?? 0);
  const r = (x: number) => Math.round(x * 100) / 100;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const bareRps = mean([...challengeRounds.map((c) => c.bare), ...replayRounds.map((c) => c.bare)]);
  const results = {
    machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}, node ${process.version}`,
    loadAverage: os.loadavg().map(r),
    fastPaths: FAST_PATHS,
    rounds,
    bareRps: r(bareRps),
    challengeRps: r(mean(challengeRounds.map((c) => c.challenge))),
    // Each ratio is the mean of the per-round ratios: a round's figures were measured side by side.
    challengeRatio: r(mean(challengeRounds.map((c) => c.challenge / c.bare))),
    challenge402: challengeRounds.reduce((n, c) => n + c.challenge402, 0),
    challengeOffersV2,
    coldChallengeRps: r(mean(challengeRounds.map((c) => c.cold))),
    coldChallengeRatio: r(mean(challengeRounds.map((c) => c.cold / c.bare))),
    peerRps: r(mean(challengeRounds.map((c) => c.peer))),
    peerRatio: r(mean(challengeRounds.map((c) => c.peer / c.bare))),
    challengeRounds: challengeRounds.map((c) => ({
      bare: r(c.bare),
      peer: r(c.peer),
      challenge: r(c.challenge),
    })),
    paid: {
      requests: paid.requests.total,
      non2xx: paid.non2xx,
      errors: paid.errors,
      rps: r(paid.requests.total / paid.wallSeconds),
      bareRps: r(bareBesidePaid),
      ratio: Math.round((paid.requests.total / paid.wallSeconds / bareBesidePaid) * 1000) / 1000,
      p50: paid.latency.p50,
      p99: paid.latency.p99,
      mean: r(paid.latency.mean),
      mainThreadUsPerRequest: r(paidUsPerRequest),
      allThreadsUsPerRequest: r((paidCpu.allMs * 1000) / paid.requests.total),
      mainThreadWaitShare: r(paidCpu.mainWaitMs / (paidCpu.mainMs + paidCpu.mainWaitMs)),
      bareMainThreadUsPerRequest: r(bareUsPerRequest),
      cpuRatio: Math.round((bareUsPerRequest / paidUsPerRequest) * 1000) / 1000,
      // The other processes on the same cores, per paid request (µs): what market-intel waits behind.
      postgresUsPerRequest: r(((beside1.postgresMs - beside0.postgresMs) * 1000) / paid.requests.total),
      ledgerUsPerRequest: r(((beside1.ledgerMs - beside0.ledgerMs) * 1000) / paid.requests.total),
      loadGeneratorUsPerRequest: r(((beside1.loadMs - beside0.loadMs) * 1000) / paid.requests.total),
      rpcVerifications: rpcCount,
      rpcMeanMs: r(rpcMean),
      rpcP50Ms: quantileFromBuckets(rpcBefore.buckets, rpcAfter.buckets, 0.5),
      rpcP99Ms: quantileFromBuckets(rpcBefore.buckets, rpcAfter.buckets, 0.99),
    },
    official: officialRuns,
    replayRps: r(mean(replayRounds.map((c) => c.replay))),
    replayRatio: r(mean(replayRounds.map((c) => c.replay / c.bare))),
    replayNon2xx: replayRounds.reduce((n, c) => n + c.non2xx, 0),
    rssMb: r(mem.rss),
    peakRssMb: r(mem.peak),
  };
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(
    [
      '',
      '| measure | result | target |',
      '|---|---|---|',
      `| bare Express JSON route | ${results.bareRps} req/s, ratio 1 | |`,
      `| x402-express 1.2 unpaid 402 (its README's route) | ${results.peerRps} req/s, ratio ${results.peerRatio} | |`,
      `| market-intel unpaid 402 challenge${challengeOffersV2 ? ' (with PAYMENT-REQUIRED)' : ''}, one URL | ${results.challengeRps} req/s, ratio ${results.challengeRatio} | ≥ 0.9 and above x402-express |`,
      `| market-intel unpaid 402, every URL new (the full path) | ${results.coldChallengeRps} req/s, ratio ${results.coldChallengeRatio} | |`,
      `| paid, fresh signatures, ${CONNECTIONS} clients (after ${PAID_WARMUP} unmeasured) | ${results.paid.rps} req/s, ratio ${results.paid.ratio} to the bare route measured right before and after it (${results.paid.bareRps} req/s); p50 ${results.paid.p50} ms, p99 ${results.paid.p99} ms (${results.paid.non2xx} non-2xx) | 2 × 0.044 |`,
      `| its CPU: market-intel's main thread per paid request, against the bare route's per request | ${results.paid.mainThreadUsPerRequest} µs (all threads ${results.paid.allThreadsUsPerRequest} µs; main thread waiting for a core ${Math.round(results.paid.mainThreadWaitShare * 100)} % of its runnable time) against ${results.paid.bareMainThreadUsPerRequest} µs: ratio ${results.paid.cpuRatio} | |`,
      `| beside it, per paid request: PostgreSQL's processes, the ledger, the load generator (autocannon, here) | ${results.paid.postgresUsPerRequest} µs, ${results.paid.ledgerUsPerRequest} µs, ${results.paid.loadGeneratorUsPerRequest} µs of CPU | |`,
      `| of which Solana RPC per verification | mean ${results.paid.rpcMeanMs} ms, p50 ≤ ${results.paid.rpcP50Ms} ms, p99 ≤ ${results.paid.rpcP99Ms} ms | |`,
      ...officialRuns.flatMap((o) => officialRows(o, results.bareRps)),
      `| replay of a used signature | ${results.replayRps} req/s, ratio ${results.replayRatio} | ≥ 0.8 |`,
      `| market-intel resident memory after the run | ${results.rssMb} MB (peak ${results.peakRssMb} MB) | ≤ 200 MB |`,
      '',
    ].join('\n'),
  );
}

function stopAll(): void {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}

main().then(
  () => {
    stopAll();
    process.exit(0);
  },
  (err: unknown) => {
    console.error(err);
    stopAll();
    process.exit(1);
  },
);
