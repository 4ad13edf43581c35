// Compute-job benchmarks (targets and results in docs/benchmarks.md, "Compute jobs (market-intel ->
// RabbitMQ -> pipeline-runner)"):
//  1. time from the 202 to `running` (agent_jobs.started_at - created_at), p50/p99: for SOLO jobs
//     submitted one at a time, and for every job of the burst below (target p99 <= 100 ms; the looser
//     bound docs/benchmarks.md records beside it: under 5 s in `pending`);
//  2. JOBS paid prove/debate and forge/ideate jobs submitted at once against a scripted LLM: all reach a
//     terminal state, none lost, and the runners' throughput in applied steps per second.
// The ledger, market-intel and each pipeline-runner run in their own processes; the scripted
// OpenAI-compatible server runs here. Everything talks to the real PostgreSQL and RabbitMQ.
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { createServer } from 'node:net';
import { Keypair } from '@solana/web3.js';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { startScriptedLlm } from '@repo/llm/testing';
import { scriptedPipelineResponder } from '@repo/compute/testing';
import { resetVhost, waitFor } from '@repo/queue/testing';
import { fundWallet, sendUsdcTransfer, spawnLocalnet } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { Pool } from 'pg';

const ROOT = path.resolve(__dirname, '..');
const JOBS = Number(process.env.BENCH_JOBS ?? 200);
const SOLO = Number(process.env.BENCH_SOLO_JOBS ?? 30);
const RUNNERS = Number(process.env.BENCH_RUNNERS ?? 1);
const PREFETCH = Number(process.env.BENCH_RUNNER_PREFETCH ?? 32);
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/market_intel_bench_compute_test';
const VHOST = 'bench_compute_test';
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const children: ChildProcess[] = [];

/** A TCP port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

async function main(): Promise<void> {
  log(`${JOBS} jobs, ${RUNNERS} runner(s) with prefetch ${PREFETCH}`);
  await resetDatabase(DATABASE_URL);
  await applyMigrations({
    databaseUrl: DATABASE_URL,
    migrationsDir: path.join(ROOT, 'services/market-intel/prisma/migrations'),
    log: { info: () => undefined, warn: log },
  });
  const amqpUrl = await resetVhost(VHOST);
  const ledger = await spawnLocalnet();
  const agent = ledger.agent.keypair as Keypair;
  await fundWallet({
    rpcUrl: ledger.networks.solana.rpcUrl,
    owner: agent.publicKey.toBase58(),
    usdcAtomic: BigInt(JOBS) * 25_000_000n + 1_000_000_000n,
  });

  const responders = {
    prove: scriptedPipelineResponder('approved'),
    forge: scriptedPipelineResponder('forge'),
  };
  const llm = await startScriptedLlm({
    respond: (req) => (req.task.startsWith('forge') ? responders.forge(req) : responders.prove(req)),
  });

  // market-intel runs as its container runs it: its own process, configured by the environment.
  const port = await freePort();
  const marketIntel = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=@repo/source', 'src/main.ts'],
    {
      cwd: path.join(ROOT, 'services/market-intel'),
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL,
        DATABASE_POOL_SIZE: '20',
        AMQP_URL: amqpUrl,
        SOLANA_RPC_URL: ledger.networks.solana.rpcUrl,
        USDC_MINT: ledger.networks.solana.mint,
        MERCHANT_TOKEN_ACCOUNT: ledger.networks.solana.merchantTokenAccount,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: '0',
        LOG_LEVEL: 'warn',
        INSTANCE_ID: 'bench',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  children.push(marketIntel);
  const base = `http://127.0.0.1:${port}`;
  const db = new Pool({ connectionString: DATABASE_URL, max: 2 });
  const sql = async <T>(text: string, params: unknown[] = []): Promise<T[]> =>
    (await db.query(text, params)).rows as T[];

  for (let i = 0; i < RUNNERS; i++) {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@repo/source', 'src/main.ts'], {
      cwd: path.join(ROOT, 'services/pipeline-runner'),
      env: {
        PATH: process.env.PATH ?? '',
        AMQP_URL: amqpUrl,
        LLM_BASE_URL: llm.baseUrl,
        LLM_MODEL: 'scripted-model',
        LLM_API_KEY: 'bench',
        PORT: '0',
        LOG_LEVEL: 'warn',
        RUNNER_PREFETCH: String(PREFETCH),
        HEARTBEAT_INTERVAL_MS: '500',
        RUNNER_ID: `bench-runner-${i}`,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
  }
  await waitFor(
    'a healthy runner',
    async () => (await fetch(`${base}/api/v1/health`)).status === 200,
    60_000,
  );

  log('paying for the jobs on the ledger');
  const signatures: string[] = [];
  for (let i = 0; i < JOBS + SOLO; i++) {
    signatures.push(
      await sendUsdcTransfer({
        rpcUrl: ledger.networks.solana.rpcUrl,
        payer: agent,
        mint: ledger.networks.solana.mint,
        destinationTokenAccount: ledger.networks.solana.merchantTokenAccount,
        amountAtomic: i % 2 === 0 || i >= JOBS ? 25_000_000n : 15_000_000n,
        computeUnitPriceMicroLamports: i + 1,
      }),
    );
  }

  // Jobs one at a time on an idle system: the next is submitted once the previous one is running.
  log(`submitting ${SOLO} jobs one at a time`);
  const soloIds: string[] = [];
  for (const signature of signatures.splice(JOBS)) {
    const res = await fetch(`${base}/api/v1/prove/debate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-PAYMENT': encodePaymentHeader('solana', signature) },
      body: JSON.stringify({ idea: 'A solo benchmark idea: a reconciliation copilot.' }),
    });
    if (res.status !== 202) throw new Error(`solo job: HTTP ${res.status} ${await res.text()}`);
    const { jobId } = (await res.json()) as { jobId: string };
    soloIds.push(jobId);
    await waitFor(
      'solo job running',
      async () =>
        (await sql<{ status: string }>('SELECT status FROM agent_jobs WHERE id = $1', [jobId]))[0]?.status !==
        'pending',
      30_000,
      2,
    );
  }
  const solo = (
    await sql<{ ms: number }>(
      'SELECT EXTRACT(EPOCH FROM (started_at - created_at)) * 1000 AS ms FROM agent_jobs WHERE id = ANY($1::text[])',
      [soloIds],
    )
  )
    .map((r) => Number(r.ms))
    .sort((a, b) => a - b);
  await waitFor(
    'solo jobs done',
    async () => {
      const rows = await sql<{ n: string }>(
        "SELECT count(*) AS n FROM agent_jobs WHERE status NOT IN ('completed', 'failed')",
      );
      return Number(rows[0]?.n ?? 1) === 0;
    },
    120_000,
    100,
  );
  await sql('DELETE FROM job_steps');
  await sql('DELETE FROM agent_jobs');

  log(`submitting ${JOBS} jobs at once`);
  const submitted = Date.now();
  const answers = await Promise.all(
    signatures.map(async (signature, i) => {
      const prove = i % 2 === 0;
      const res = await fetch(`${base}/api/v1/${prove ? 'prove/debate' : 'forge/ideate'}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'X-PAYMENT': encodePaymentHeader('solana', signature),
        },
        body: JSON.stringify(
          prove ? { idea: `Benchmark idea number ${i}: a reconciliation copilot.` } : { sectors: [] },
        ),
      });
      if (res.status !== 202) throw new Error(`job ${i}: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { jobId: string }).jobId;
    }),
  );
  const accepted = Date.now();
  log(`${answers.length} accepted in ${accepted - submitted} ms; waiting for terminal states`);

  const terminal = await waitFor(
    'every job to reach a terminal state',
    async () => {
      const rows = await sql<{ status: string; n: string }>(
        'SELECT status, count(*) AS n FROM agent_jobs GROUP BY status',
      );
      const counts = Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
      return (counts.completed ?? 0) + (counts.failed ?? 0) === JOBS ? counts : undefined;
    },
    30 * 60_000,
    500,
  );
  const finished = Date.now();

  const toRunning = (
    await sql<{ ms: number }>(
      'SELECT EXTRACT(EPOCH FROM (started_at - created_at)) * 1000 AS ms FROM agent_jobs',
    )
  )
    .map((r) => Number(r.ms))
    .sort((a, b) => a - b);
  const [stepStats] = await sql<{ n: string; first: Date; last: Date }>(
    'SELECT count(*) AS n, min(applied_at) AS first, max(applied_at) AS last FROM job_steps',
  );
  const steps = Number(stepStats?.n ?? 0);
  const stepSeconds = stepStats ? (stepStats.last.getTime() - stepStats.first.getTime()) / 1000 : NaN;
  const llmCalls = llm.calls.length;

  const report = {
    machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? '?'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
    jobs: JOBS,
    runners: RUNNERS,
    prefetch: PREFETCH,
    statuses: terminal,
    lost: JOBS - Object.values(terminal).reduce((a, b) => a + b, 0),
    acceptMs: accepted - submitted,
    wallSeconds: (finished - submitted) / 1000,
    soloToRunningMs: {
      jobs: solo.length,
      p50: percentile(solo, 50),
      p99: percentile(solo, 99),
      max: solo[solo.length - 1],
    },
    burstToRunningMs: {
      p50: percentile(toRunning, 50),
      p99: percentile(toRunning, 99),
      max: toRunning[toRunning.length - 1],
    },
    stepsApplied: steps,
    stepsPerSecond: Math.round((steps / stepSeconds) * 10) / 10,
    llmCalls,
    outboxLeft: Number((await sql<{ n: string }>('SELECT count(*) AS n FROM outbox_messages'))[0]?.n ?? 0),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);

  for (const child of children) child.kill('SIGTERM');
  await db.end();
  await llm.close();
  await ledger.close();
}

main().catch((err: unknown) => {
  console.error(err);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
});
