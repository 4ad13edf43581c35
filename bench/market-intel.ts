// market-intel benchmarks (issue targets in docs/benchmarks.md):
//  1. unpaid 402 challenge throughput, as a ratio to a bare Express JSON route (target >= 0.7);
//  2. paid requests with fresh signatures at 32 concurrent clients on the local ledger: p50/p99 latency
//     (target p99 <= 50 ms) and the part spent in Solana RPC (from the service's /metrics);
//  3. replays of a used signature on a synchronous endpoint, ratio to the bare route (target >= 0.5);
//  4. resident memory of market-intel after the run (target <= 200 MB).
// The ledger, market-intel and the bare server each run in their own process; the load generator
// (autocannon) runs here. market-intel runs from its build (node dist/main.js), logging at info.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { ComputeBudgetProgram, Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import type * as SplToken from '@solana/spl-token' with { 'resolution-mode': 'import' };
import { applyMigrations, ensureDatabase } from '@repo/db-migrate';
import { fundWallet, getLocalnetInfo, rpcUrlFor } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402';
import { Client } from 'pg';

// spl-token ships a CommonJS build with ESM-only typings (see packages/solana-localnet/src/deps.ts).
const { createTransferCheckedInstruction, getAssociatedTokenAddressSync } =
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('@solana/spl-token') as typeof SplToken;

const ROOT = path.resolve(__dirname, '..');
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PAID_REQUESTS = Number(process.env.BENCH_PAID_REQUESTS ?? 3000);
const LEDGER_PORT = Number(process.env.BENCH_LEDGER_PORT ?? 18899);
const MI_PORT = Number(process.env.BENCH_MARKET_INTEL_PORT ?? 13001);
const BARE_PORT = Number(process.env.BENCH_BARE_PORT ?? 13099);
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/market_intel_bench';
const GAPS = '/api/v1/scout/gaps?sector=fintech&limit=5';
/** Extra node flags for market-intel, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile a run. */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** Run the paid phase only (for profiling it); the other numbers are then meaningless. */
const ONLY_PAID = process.env.BENCH_ONLY_PAID === '1';
/** Skip the build step (when dist is current). */
const SKIP_BUILD = process.env.BENCH_SKIP_BUILD === '1';

const children: ChildProcess[] = [];
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

function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

function rssMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

async function scrapeRpc(): Promise<{ sum: number; count: number; buckets: [number, number][] }> {
  const text = await (await fetch(`http://127.0.0.1:${MI_PORT}/metrics`)).text();
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
  spawnSync(
    'pnpm',
    [
      'exec',
      'tsx',
      '--conditions=@repo/source',
      'src/cli/import-report.ts',
      'fixtures/sample-report.json',
      '--shift-to-now',
      '--if-empty',
    ],
    {
      cwd: path.join(ROOT, 'services/market-intel'),
      env: { ...process.env, DATABASE_URL },
      stdio: 'ignore',
    },
  );

  // Exactly as the package's start script runs it (its V8 memory flags included).
  const [startCmd = 'node', ...startArgs] = (
    JSON.parse(readFileSync(path.join(ROOT, 'services/market-intel/package.json'), 'utf8')) as {
      scripts: { start: string };
    }
  ).scripts.start.split(' ');
  const mi = start(
    startCmd,
    [...NODE_ARGS, ...startArgs],
    {
      PORT: String(MI_PORT),
      HOST: '127.0.0.1',
      DATABASE_URL,
      DATABASE_POOL_SIZE: '20',
      SOLANA_RPC_URL: info.rpcUrl,
      USDC_MINT: info.mint,
      MERCHANT_TOKEN_ACCOUNT: info.merchantTokenAccount,
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
    },
    path.join(ROOT, 'services/market-intel'),
  );
  start('pnpm', ['exec', 'tsx', 'bench/bare-server.ts'], { PORT: String(BARE_PORT) });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${MI_PORT}/livez`)).ok, 'market-intel');
  await waitFor(async () => (await fetch(`http://127.0.0.1:${BARE_PORT}/bare`)).ok, 'the bare server');

  const bench = (url: string, extra: Partial<autocannon.Options> = {}) =>
    run({ url, connections: CONNECTIONS, duration: DURATION_S, ...extra });

  log('warming up');
  await bench(`http://127.0.0.1:${BARE_PORT}/bare`, { duration: 2 });
  if (!ONLY_PAID) await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, { duration: 2 });

  log('1/3 bare route vs 402 challenge');
  const bare = await bench(`http://127.0.0.1:${BARE_PORT}/bare`);
  const challenge = await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
    duration: ONLY_PAID ? 1 : DURATION_S,
  });

  log(`2/3 preparing ${PAID_REQUESTS} fresh payments`);
  const payer = Keypair.generate();
  await fundWallet({
    rpcUrl: info.rpcUrl,
    owner: payer.publicKey.toBase58(),
    usdcAtomic: BigInt(PAID_REQUESTS + 10) * 100_000n,
    lamports: 100e9,
  });
  const signatures = await preparePayments(
    info.rpcUrl,
    payer,
    info.mint,
    info.merchantTokenAccount,
    100_000n,
    PAID_REQUESTS,
  );
  const rpcBefore = await scrapeRpc();
  let next = 0;
  log(`2/3 paying with fresh signatures at ${CONNECTIONS} connections`);
  const paid = await run({
    url: `http://127.0.0.1:${MI_PORT}`,
    connections: CONNECTIONS,
    amount: signatures.length,
    requests: [
      {
        method: 'GET',
        path: GAPS,
        setupRequest: (req) => ({
          ...req,
          headers: {
            ...req.headers,
            'x-payment': encodePaymentHeader('solana', signatures[next++ % signatures.length] ?? ''),
          },
        }),
      },
    ],
  });
  const rpcAfter = await scrapeRpc();
  const rpcCount = rpcAfter.count - rpcBefore.count;
  const rpcMean = rpcCount ? ((rpcAfter.sum - rpcBefore.sum) / rpcCount) * 1000 : NaN;

  log('3/3 replays of one used signature');
  const replay = await bench(`http://127.0.0.1:${MI_PORT}${GAPS}`, {
    duration: ONLY_PAID ? 1 : DURATION_S,
    headers: { 'x-payment': encodePaymentHeader('solana', signatures[0] ?? '') },
  });

  const mem = rssMb(mi.pid ?? 0);
  const r = (x: number) => Math.round(x * 100) / 100;
  const results = {
    machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}, node ${process.version}`,
    bareRps: r(bare.requests.average),
    challengeRps: r(challenge.requests.average),
    challengeRatio: r(challenge.requests.average / bare.requests.average),
    challenge402: challenge['4xx'],
    paid: {
      requests: paid.requests.total,
      non2xx: paid.non2xx,
      errors: paid.errors,
      rps: r(paid.requests.average),
      p50: paid.latency.p50,
      p99: paid.latency.p99,
      mean: r(paid.latency.mean),
      rpcVerifications: rpcCount,
      rpcMeanMs: r(rpcMean),
      rpcP50Ms: quantileFromBuckets(rpcBefore.buckets, rpcAfter.buckets, 0.5),
      rpcP99Ms: quantileFromBuckets(rpcBefore.buckets, rpcAfter.buckets, 0.99),
    },
    replayRps: r(replay.requests.average),
    replayRatio: r(replay.requests.average / bare.requests.average),
    replayNon2xx: replay.non2xx,
    rssMb: r(mem.rss),
    peakRssMb: r(mem.peak),
  };
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(
    [
      '',
      '| measure | result | target |',
      '|---|---|---|',
      `| bare Express JSON route | ${results.bareRps} req/s | |`,
      `| unpaid 402 challenge | ${results.challengeRps} req/s, ratio ${results.challengeRatio} | ≥ 0.7 |`,
      `| paid, fresh signatures, ${CONNECTIONS} clients | p50 ${results.paid.p50} ms, p99 ${results.paid.p99} ms (${results.paid.rps} req/s, ${results.paid.non2xx} non-2xx) | p99 ≤ 50 ms |`,
      `| of which Solana RPC per verification | mean ${results.paid.rpcMeanMs} ms, p50 ≤ ${results.paid.rpcP50Ms} ms, p99 ≤ ${results.paid.rpcP99Ms} ms | |`,
      `| replay of a used signature | ${results.replayRps} req/s, ratio ${results.replayRatio} | ≥ 0.5 |`,
      `| market-intel resident memory after the run | ${results.rssMb} MB (peak ${results.peakRssMb} MB) | ≤ 200 MB |`,
      '',
    ].join('\n'),
  );
}

function stopAll(): void {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
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
