// market-intel benchmarks (targets and results in docs/benchmarks.md):
//  1. unpaid 402 challenge throughput of market-intel and of the reference middleware x402-express 1.2
//     (bench/x402-express-server.ts), each as a ratio to a bare Express JSON route, the three measured
//     alternately for BENCH_ROUNDS rounds (target: market-intel >= 0.9 and above x402-express); in
//     each round also market-intel's 402 with every request a URL never asked (target >= 0.5) and its
//     400 with every request a new URL with an unknown query parameter (target >= 0.5, as the 402);
//  2. paid requests with fresh signatures at 32 concurrent clients on the local ledger, after
//     BENCH_PAID_WARMUP unmeasured ones: throughput as a ratio to the bare route measured right
//     before and after (target 2 × 0.044), p50/p99 latency (target p99 <= 50 ms), the part spent
//     in Solana RPC (from the service's /metrics), and the CPU time of market-intel's main thread per
//     paid request against the bare server's per request (from /proc: a measure the other processes
//     sharing the cores move less than they move throughput), and the CPU those other processes
//     (PostgreSQL, the ledger, this load generator) spend per paid request;
//  3. paid requests in the official x402 exact SVM scheme (`PAYMENT-SIGNATURE` with a transaction
//     the official client signed and market-intel settles through the official facilitator), at a
//     few concurrencies, alternated with the same payments to the reference x402 v2 middleware
//     `@x402/express` and `@x402/svm`'s facilitator (bench/x402-v2-server.ts) on the same ledger: for
//     each, p50/p99, the CPU per payment of the server, the ledger and PostgreSQL, and where the time
//     goes (bench/official-scheme.ts);
//  4. replays of a used signature on a synchronous endpoint, ratio to the bare route measured
//     alternately with it (target >= 0.8);
//  5. resident memory of market-intel after the run (target <= 200 MB).
// The ledger, market-intel, the bare server and the x402-express server each run in their own
// process; every figure is also printed as a ratio to the bare route. The load generator
// (autocannon) runs here. market-intel runs from its build (node dist/main.js), logging at info, with
// the ledger's fee payer and merchant wallet (so every 402 also carries PAYMENT-REQUIRED) and, unless
// BENCH_RPC_TIMING=0, the timing preload of bench/rpc-timing.ts.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import ts from 'typescript';
import { ComputeBudgetProgram, Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import type * as SplToken from '@solana/spl-token' with { 'resolution-mode': 'import' };
import { applyMigrations, ensureDatabase } from '@repo/db-migrate';
import { fundWallet, getLocalnetInfo, rpcUrlFor } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { Client } from 'pg';
import {
  besideCpuMs,
  besideSpent,
  cpuSpent,
  cpuTimes,
  quantileFromBuckets,
  run,
  scrapeRpc,
  waitFor,
} from './measure';
import {
  measureOfficial,
  officialTable,
  offeredAmount,
  officialTargets,
  prepareOfficialPayments,
  takeTiming,
  type OfficialRun,
  type OfficialTarget,
} from './official-scheme';
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
const V2_PEER_PORT = Number(process.env.BENCH_V2_PEER_PORT ?? 13097);
/** Rounds of the alternated measurements (bare, x402-express, market-intel; bare, replay). */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/market_intel_bench';
const GAPS = '/api/v1/scout/gaps?sector=fintech&limit=5';
/** The URLs of the new-URL runs: a sector tag never asked before, then `&limit=5`. */
const COLD_GAPS = '/api/v1/scout/gaps?sector=fintech-';
const BESIDE = { database: new URL(DATABASE_URL).pathname.slice(1), ledgerPort: LEDGER_PORT };
const METRICS_URL = `http://127.0.0.1:${MI_METRICS_PORT}/metrics`;
/** Extra node flags for market-intel, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile a run. */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** Run the paid phase only (for profiling it); the other numbers are then meaningless. */
const ONLY_PAID = process.env.BENCH_ONLY_PAID === '1';
/** Run the official scheme only (for profiling it); the 402 rounds are one second each. */
const ONLY_OFFICIAL = process.env.BENCH_ONLY_OFFICIAL === '1';
/** Short 402 rounds and no replay phase: the run is for one paid phase. */
const ONE_PHASE = ONLY_PAID || ONLY_OFFICIAL;
/**
 * A directory for CPU profiles of each official-scheme run, of market-intel and of the peer, one file
 * per run (named in the JSON output; summarise with bench/cpu-profile.ts). Profiling costs CPU: the
 * run's CPU figures are then not comparable.
 */
const CPU_PROFILE_DIR = process.env.BENCH_CPU_PROFILE
  ? path.resolve(process.env.BENCH_CPU_PROFILE)
  : undefined;
/** Skip the build step (when dist is current). */
const SKIP_BUILD = process.env.BENCH_SKIP_BUILD === '1';
/**
 * Official-scheme payments per measured concurrency; 0 starts market-intel without a fee payer (no
 * official scheme, no `PAYMENT-REQUIRED`), as before it offered one.
 */
const OFFICIAL_REQUESTS = Number(process.env.BENCH_OFFICIAL_REQUESTS ?? 300);
/** Rounds of the official scheme, each one run of market-intel and one of the peer per concurrency. */
const OFFICIAL_ROUNDS = Math.max(1, Number(process.env.BENCH_OFFICIAL_ROUNDS ?? 1));
/** The concurrencies the official scheme is measured at. */
const OFFICIAL_CONNECTIONS = (process.env.BENCH_OFFICIAL_CONNECTIONS ?? '8,32')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
/**
 * Preload bench/rpc-timing.ts into market-intel (settlement, facilitator RPC and SQL timing); `0`: off,
 * which also skips the official scheme (its split needs the preload).
 */
const RPC_TIMING = process.env.BENCH_RPC_TIMING !== '0';
/**
 * market-intel's fast-path switches as it inherits them from this process (docs/architecture.md, "Fast
 * paths"): `X402_HOT_PATH=false pnpm bench market-intel` measures the full path alone. Printed with the
 * figures, unset ones as their default.
 */
/**
 * Sign-in-with-x on in market-intel (`X402_SIGN_IN_WITH_X=true`, as production runs; docs/payments.md,
 * "Signing in instead of paying again"): every 402 declares a fresh challenge, which needs the
 * official offer, so the fee payer is configured even with `BENCH_OFFICIAL_REQUESTS=0`; a replay of
 * a used payment without the payer's proof is then the full path's 402 (`siwx_required`), and the
 * replay phase measures those. Off by default (`NODE_ENV=development`).
 */
const SIGN_IN = process.env.BENCH_SIGN_IN_WITH_X === '1';
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

/** How many of a run's answers had `status`. */
function statusCount(result: autocannon.Result, status: number): number {
  const stats = (result as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats;
  return stats?.[String(status)]?.count ?? 0;
}

function rssMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
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
  if (CPU_PROFILE_DIR) mkdirSync(CPU_PROFILE_DIR, { recursive: true });
  const preloadFile = RPC_TIMING ? compileTimingPreload(tmp) : undefined;
  const preload = preloadFile ? ['--require', preloadFile] : [];
  const official = OFFICIAL_REQUESTS > 0;
  if (SIGN_IN) log('sign-in-with-x on: every 402 declares a fresh challenge; replays need a proof');
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
      X402_SIGN_IN_WITH_X: String(SIGN_IN),
      // The official scheme, as the dev stack passes it (scripts/stack.ts). The settlement rate limits
      // (60 per payer and 120 per client a minute by default) would refuse a benchmark's one payer and
      // one address after the first hundred payments: raised, still checked on every settlement.
      ...(official || SIGN_IN
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
            ...(CPU_PROFILE_DIR ? { BENCH_CPU_PROFILE_DIR: CPU_PROFILE_DIR } : {}),
            // The file market-intel's @repo/x402-solana loads, so that the preload patches that very class.
            BENCH_FACILITATOR_MODULE: require.resolve('@x402/svm/exact/facilitator', {
              paths: [path.join(ROOT, 'packages/x402-solana')],
            }),
            // The `pg` market-intel loads: its claims, answers and ledger rows.
            BENCH_PG_MODULE: require.resolve('pg', { paths: [path.join(ROOT, 'services/market-intel')] }),
            // The built JSON-RPC client market-intel's settlements call the ledger with.
            BENCH_RPC_CLIENT_MODULE: path.join(ROOT, 'packages/x402-solana/dist/rpc-client.js'),
            // The built settler whose `settle` is market-intel's settlement.
            BENCH_SETTLER_MODULE: path.join(ROOT, 'packages/x402-solana/dist/exact-svm.js'),
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
  if (!ONE_PHASE) await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, { duration: 2 });

  const rounds = ONE_PHASE ? 1 : ROUNDS;
  log(`1/4 402 challenge: bare Express, x402-express and market-intel alternated, ${rounds} round(s)`);
  const challengeOffersV2 = Boolean(
    (await fetch(`http://127.0.0.1:${MI_PORT}${GAPS}`)).headers.get('payment-required'),
  );
  const challengeRounds: {
    bare: number;
    peer: number;
    challenge: number;
    cold: number;
    /** 402s among the cold run's answers, and answers in all. */
    cold402: number;
    coldTotal: number;
    unknown: number;
    unknown400: number;
    unknownTotal: number;
    /** Main-thread CPU per request (µs) of the bare route, the new URLs' 402s and their 400s. */
    bareUs: number;
    coldUs: number;
    unknownUs: number;
    challenge402: number;
  }[] = [];
  let nonce = 0;
  let coldProfile: string | undefined;
  // Main-thread CPU per request (µs, schedstat) of a run of `pid`: what other processes on the cores
  // move far less than throughput.
  const cpuPerRequest = async (pid: number, measured: () => ReturnType<typeof bench>) => {
    const before = cpuTimes(pid);
    const result = await measured();
    const spent = cpuSpent(before, cpuTimes(pid));
    return { result, usPerRequest: (spent.mainMs * 1000) / Math.max(1, result.requests.total) };
  };
  for (let i = 0; i < rounds; i++) {
    const bareCpuRun = await cpuPerRequest(barePid, () =>
      bench(BARE, { duration: ONE_PHASE ? 1 : DURATION_S }),
    );
    const bareRun = bareCpuRun.result;
    const peerRun = await bench(PEER, { duration: ONE_PHASE ? 1 : DURATION_S });
    const challengeRun = await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
      duration: ONE_PHASE ? 1 : DURATION_S,
    });
    // Every request a URL never asked before (a sector never asked, valid: each is a 402 whose
    // resource and request reference are its own), then every request a new URL with a query
    // parameter the route does not declare (each a 400 unknown_parameter). With BENCH_CPU_PROFILE,
    // the first round's run of new URLs has a profile of its own.
    const profileCold = CPU_PROFILE_DIR && preloadFile && i === 0;
    if (profileCold) await takeTiming(mi.pid ?? 0, timingFile);
    const coldCpuRun = await cpuPerRequest(mi.pid ?? 0, () =>
      bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
        duration: ONE_PHASE ? 1 : DURATION_S,
        requests: [
          { method: 'GET', setupRequest: (req) => ({ ...req, path: `${COLD_GAPS}${nonce++}&limit=5` }) },
        ],
      }),
    );
    const coldRun = coldCpuRun.result;
    if (profileCold) coldProfile = (await takeTiming(mi.pid ?? 0, timingFile)).profile;
    const unknownCpuRun = await cpuPerRequest(mi.pid ?? 0, () =>
      bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
        duration: ONE_PHASE ? 1 : DURATION_S,
        requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `${GAPS}&nonce=${nonce++}` }) }],
      }),
    );
    const unknownRun = unknownCpuRun.result;
    challengeRounds.push({
      bare: bareRun.requests.average,
      peer: peerRun.requests.average,
      challenge: challengeRun.requests.average,
      cold: coldRun.requests.average,
      cold402: statusCount(coldRun, 402),
      coldTotal: coldRun.requests.total,
      unknown: unknownRun.requests.average,
      unknown400: statusCount(unknownRun, 400),
      unknownTotal: unknownRun.requests.total,
      bareUs: bareCpuRun.usPerRequest,
      coldUs: coldCpuRun.usPerRequest,
      unknownUs: unknownCpuRun.usPerRequest,
      challenge402: challengeRun['4xx'],
    });
    log(
      `  round ${i + 1}: bare ${Math.round(bareRun.requests.average)}, x402-express ${Math.round(peerRun.requests.average)}, market-intel ${Math.round(challengeRun.requests.average)} (every URL new: ${Math.round(coldRun.requests.average)}; with an unknown parameter, 400: ${Math.round(unknownRun.requests.average)}) req/s; main-thread CPU per request: bare ${Math.round(bareCpuRun.usPerRequest)}, every URL new ${Math.round(coldCpuRun.usPerRequest)}, unknown parameter ${Math.round(unknownCpuRun.usPerRequest)} µs`,
    );
  }

  // With the official scheme alone, a short push phase: its figures are then only indicative.
  const paidWarmup = ONLY_OFFICIAL ? 32 : PAID_WARMUP;
  const paidRequests = ONLY_OFFICIAL ? 320 : PAID_REQUESTS;
  log(`2/4 preparing ${paidWarmup} + ${paidRequests} fresh payments`);
  const payer = Keypair.generate();
  await fundWallet({
    rpcUrl: info.rpcUrl,
    owner: payer.publicKey.toBase58(),
    usdcAtomic: BigInt(paidWarmup + paidRequests + 10) * 100_000n,
    lamports: 100e9,
  });
  const signatures = await preparePayments(
    info.rpcUrl,
    payer,
    info.mint,
    info.merchantTokenAccount,
    100_000n,
    paidWarmup + paidRequests,
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
  log(`2/4 warming up the paid path (${paidWarmup} payments)`);
  if (paidWarmup > 0) await payFresh(signatures.slice(0, paidWarmup));
  // The bare route right before and right after: the paid run's ratio is to their mean, as the other
  // measures are to the bare runs alternated with them.
  const bareCpu0 = cpuTimes(barePid);
  const bareBeforePaid = await bench(BARE, { duration: 5 });
  const bareCpu1 = cpuTimes(barePid);
  const rpcBefore = await scrapeRpc(METRICS_URL);
  log(`2/4 paying with fresh signatures at ${CONNECTIONS} connections`);
  const paidCpu0 = cpuTimes(mi.pid ?? 0);
  const beside0 = besideCpuMs(BESIDE);
  const paid = await payFresh(signatures.slice(paidWarmup));
  const paidCpu = cpuSpent(paidCpu0, cpuTimes(mi.pid ?? 0));
  const beside = besideSpent(beside0, besideCpuMs(BESIDE));
  const rpcAfter = await scrapeRpc(METRICS_URL);
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
  if (official && !RPC_TIMING)
    log('3/4 skipped: the official scheme is measured with the timing preload only');
  if (official && RPC_TIMING) {
    log('3/4 starting the reference x402 v2 server (@x402/express, @x402/svm facilitator in-process)');
    const price = await offeredAmount(`http://127.0.0.1:${MI_PORT}${GAPS}`);
    const v2Timing = path.join(tmp, 'timing-v2.json');
    const v2 = start(
      process.execPath,
      ['--require', preloadFile ?? '', '--import', 'tsx', 'bench/x402-v2-server.ts'],
      {
        PORT: String(V2_PEER_PORT),
        BENCH_RPC_URL: info.rpcUrl,
        BENCH_MINT: info.mint,
        BENCH_PAY_TO: info.merchantOwner,
        BENCH_FEE_PAYER_KEYPAIR: info.feePayerKeypairPath,
        BENCH_PRICE_ATOMIC: price,
        BENCH_RPC_TIMING_OUT: v2Timing,
        ...(CPU_PROFILE_DIR ? { BENCH_CPU_PROFILE_DIR: CPU_PROFILE_DIR } : {}),
        BENCH_FACILITATOR_MODULE: require.resolve('@x402/svm/exact/facilitator'),
      },
    );
    const v2Origin = `http://127.0.0.1:${V2_PEER_PORT}`;
    await waitFor(async () => (await fetch(`${v2Origin}${GAPS}`)).status === 402, 'the x402 v2 server');
    const targets: OfficialTarget[] = [
      {
        label: 'market-intel',
        origin: `http://127.0.0.1:${MI_PORT}`,
        path: GAPS,
        pid: mi.pid ?? 0,
        timingFile,
        scrapeRpc: () => scrapeRpc(METRICS_URL),
      },
      { label: '@x402/express v2', origin: v2Origin, path: GAPS, pid: v2.pid ?? 0, timingFile: v2Timing },
    ];
    // Agents pay as the README's official client would, each from its own wallet; the fee payer pays the fees.
    const prepare = (target: OfficialTarget, count: number) =>
      prepareOfficialPayments(`${target.origin}${target.path}`, info.rpcUrl, info.mint, count);
    for (const target of targets) {
      log(`3/4 warming up the official scheme on ${target.label} (20 payments, 4 connections)`);
      await measureOfficial(target, await prepare(target, 20), 4, BESIDE);
    }
    for (let round = 0; round < OFFICIAL_ROUNDS; round++) {
      for (const connections of OFFICIAL_CONNECTIONS) {
        // Alternated: the side that goes first changes every round.
        for (const target of round % 2 ? [...targets].reverse() : targets) {
          log(`3/4 preparing ${OFFICIAL_REQUESTS} official-scheme payments to ${target.label}`);
          const headers = await prepare(target, OFFICIAL_REQUESTS);
          log(`3/4 paying ${target.label} in the official scheme at ${connections} connections`);
          officialRuns.push(await measureOfficial(target, headers, connections, BESIDE));
        }
      }
    }
  }

  log(
    `4/4 replays of one used signature${SIGN_IN ? ' without a sign-in proof (each the full path’s 402 siwx_required)' : ''}, alternated with the bare route, ${rounds} round(s)`,
  );
  const replayRounds: { bare: number; replay: number; non2xx: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const bareRun = await bench(BARE, { duration: ONE_PHASE ? 1 : DURATION_S });
    const replayRun = await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
      duration: ONE_PHASE ? 1 : DURATION_S,
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
    signInWithX: SIGN_IN,
    rounds,
    bareRps: r(bareRps),
    challengeRps: r(mean(challengeRounds.map((c) => c.challenge))),
    // Each ratio is the mean of the per-round ratios: a round's figures were measured side by side.
    challengeRatio: r(mean(challengeRounds.map((c) => c.challenge / c.bare))),
    challenge402: challengeRounds.reduce((n, c) => n + c.challenge402, 0),
    challengeOffersV2,
    coldChallengeRps: r(mean(challengeRounds.map((c) => c.cold))),
    coldChallengeRatio: r(mean(challengeRounds.map((c) => c.cold / c.bare))),
    // Answers of the new URLs' runs that were not the 402 (or the 400) expected: a run with any is no result.
    coldChallengeOther: challengeRounds.reduce((n, c) => n + c.coldTotal - c.cold402, 0),
    unknownParameterRps: r(mean(challengeRounds.map((c) => c.unknown))),
    unknownParameterRatio: r(mean(challengeRounds.map((c) => c.unknown / c.bare))),
    unknownParameterOther: challengeRounds.reduce((n, c) => n + c.unknownTotal - c.unknown400, 0),
    // By main-thread CPU per request: the bare route's over market-intel's (higher is better).
    bareUsPerRequest: r(mean(challengeRounds.map((c) => c.bareUs))),
    coldChallengeUsPerRequest: r(mean(challengeRounds.map((c) => c.coldUs))),
    coldChallengeCpuRatio: r(mean(challengeRounds.map((c) => c.bareUs / c.coldUs))),
    unknownParameterUsPerRequest: r(mean(challengeRounds.map((c) => c.unknownUs))),
    unknownParameterCpuRatio: r(mean(challengeRounds.map((c) => c.bareUs / c.unknownUs))),
    ...(coldProfile ? { coldChallengeProfile: coldProfile } : {}),
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
      postgresUsPerRequest: r((beside.postgresMs * 1000) / paid.requests.total),
      ledgerUsPerRequest: r((beside.ledgerMs * 1000) / paid.requests.total),
      loadGeneratorUsPerRequest: r((beside.loadMs * 1000) / paid.requests.total),
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
      `| market-intel unpaid 402, every URL new${FAST_PATHS.X402_HOT_PATH === 'false' ? ' (the full path)' : ''} | ${results.coldChallengeRps} req/s, ratio ${results.coldChallengeRatio}${results.coldChallengeOther ? ` (${results.coldChallengeOther} answers not 402)` : ''}; main-thread CPU ${results.coldChallengeUsPerRequest} µs per request against the bare route's ${results.bareUsPerRequest} µs: CPU ratio ${results.coldChallengeCpuRatio} | ≥ 0.5 (${results.coldChallengeRatio >= 0.5 && !results.coldChallengeOther ? 'met' : 'not met'}) |`,
      `| market-intel 400 of an unknown query parameter, every URL new | ${results.unknownParameterRps} req/s, ratio ${results.unknownParameterRatio}${results.unknownParameterOther ? ` (${results.unknownParameterOther} answers not 400)` : ''}; main-thread CPU ${results.unknownParameterUsPerRequest} µs per request: CPU ratio ${results.unknownParameterCpuRatio} | ≥ 0.5, as the 402 (${results.unknownParameterRatio >= 0.5 && !results.unknownParameterOther ? 'met' : 'not met'}) |`,
      `| paid, fresh signatures, ${CONNECTIONS} clients (after ${ONLY_OFFICIAL ? 32 : PAID_WARMUP} unmeasured) | ${results.paid.rps} req/s, ratio ${results.paid.ratio} to the bare route measured right before and after it (${results.paid.bareRps} req/s); p50 ${results.paid.p50} ms, p99 ${results.paid.p99} ms (${results.paid.non2xx} non-2xx) | 2 × 0.044 |`,
      `| its CPU: market-intel's main thread per paid request, against the bare route's per request | ${results.paid.mainThreadUsPerRequest} µs (all threads ${results.paid.allThreadsUsPerRequest} µs; main thread waiting for a core ${Math.round(results.paid.mainThreadWaitShare * 100)} % of its runnable time) against ${results.paid.bareMainThreadUsPerRequest} µs: ratio ${results.paid.cpuRatio} | |`,
      `| beside it, per paid request: PostgreSQL's processes, the ledger, the load generator (autocannon, here) | ${results.paid.postgresUsPerRequest} µs, ${results.paid.ledgerUsPerRequest} µs, ${results.paid.loadGeneratorUsPerRequest} µs of CPU | |`,
      `| of which Solana RPC per verification | mean ${results.paid.rpcMeanMs} ms, p50 ≤ ${results.paid.rpcP50Ms} ms, p99 ≤ ${results.paid.rpcP99Ms} ms | |`,
      `| replay of a used signature | ${results.replayRps} req/s, ratio ${results.replayRatio} | ≥ 0.8 |`,
      `| market-intel resident memory after the run | ${results.rssMb} MB (peak ${results.peakRssMb} MB) | ≤ 200 MB |`,
      '',
      ...officialTable(officialRuns, results.bareRps),
      '',
      ...officialTargets(officialRuns, results.paid.allThreadsUsPerRequest, 'market-intel'),
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
