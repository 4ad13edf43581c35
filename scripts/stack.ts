// Starts the development stack: the local Solana ledger (state in .data/ledger), market-intel, the
// pipeline-runner, signal-feedback and skill-router, each in its own process, on PostgreSQL and
// RabbitMQ, with every database migrated and the sample report imported when market-intel's database
// has none. Ctrl-C stops everything.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { applyMigrations, ensureDatabase } from '@repo/db-migrate';
import {
  formatLocalnetAddresses,
  getLocalnetInfo,
  rpcUrlFor,
  spawnLocalnet,
  type Localnet,
} from '@repo/solana-localnet';

const ROOT = path.resolve(__dirname, '..');
const env = process.env;
const LEDGER_URL = env.LEDGER_URL ?? `http://127.0.0.1:${env.LEDGER_PORT ?? '8899'}`;
const LEDGER_DATA_DIR = path.resolve(ROOT, env.LEDGER_DATA_DIR ?? '.data/ledger');
const MARKET_INTEL_DATABASE_URL =
  env.MARKET_INTEL_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/market_intel';
const MARKET_INTEL_PORT = env.MARKET_INTEL_PORT ?? '3001';
const RUNNER_PORT = env.PIPELINE_RUNNER_PORT ?? '3004';
const SIGNAL_FEEDBACK_DATABASE_URL =
  env.SIGNAL_FEEDBACK_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/signal_feedback';
const SIGNAL_FEEDBACK_PORT = env.SIGNAL_FEEDBACK_PORT ?? '3002';
const SKILL_ROUTER_DATABASE_URL =
  env.SKILL_ROUTER_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/skill_router';
const SKILL_ROUTER_PORT = env.SKILL_ROUTER_PORT ?? '3003';
const AMQP_URL = env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

const children: ChildProcess[] = [];
let ledger: Localnet | undefined;

function log(line: string): void {
  process.stderr.write(`\x1b[1;34m==>\x1b[0m ${line}\n`);
}

async function ledgerIsUp(url: string): Promise<boolean> {
  try {
    await getLocalnetInfo(url);
    return true;
  } catch {
    return false;
  }
}

/** Runs a command to completion, inheriting output; rejects on a non-zero exit. */
function run(cmd: string, args: string[], extraEnv: NodeJS.ProcessEnv, cwd = ROOT): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...env, ...extraEnv }, stdio: 'inherit' });
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`)),
    );
  });
}

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const [mainnet, devnet] = await (async () => {
    if (await ledgerIsUp(LEDGER_URL)) {
      log(`using the ledger already running at ${LEDGER_URL}`);
    } else {
      const port = Number(new URL(LEDGER_URL).port || 8899);
      ledger = await spawnLocalnet({
        port,
        dataDir: LEDGER_DATA_DIR,
        onLog: (line) => process.stderr.write(`${line}\n`),
      });
      process.stdout.write(`${formatLocalnetAddresses(ledger)}\n`);
    }
    return Promise.all([
      getLocalnetInfo(rpcUrlFor(LEDGER_URL, 'solana')),
      getLocalnetInfo(rpcUrlFor(LEDGER_URL, 'solana-devnet')),
    ]);
  })();

  for (const [databaseUrl, service] of [
    [MARKET_INTEL_DATABASE_URL, 'market-intel'],
    [SIGNAL_FEEDBACK_DATABASE_URL, 'signal-feedback'],
    [SKILL_ROUTER_DATABASE_URL, 'skill-router'],
  ] as const) {
    log(`migrating ${databaseUrl}`);
    await ensureDatabase(databaseUrl);
    await applyMigrations({
      databaseUrl,
      migrationsDir: path.join(ROOT, `services/${service}/prisma/migrations`),
      log: { info: (m) => log(m), warn: (m) => log(`warning: ${m}`) },
    });
  }

  const tsx = ['exec', 'tsx', '--conditions=@repo/source'];
  await run(
    'pnpm',
    [
      ...tsx,
      'src/entry-points/cli/import-report.ts',
      'fixtures/sample-report.json',
      '--shift-to-now',
      '--if-empty',
    ],
    { DATABASE_URL: MARKET_INTEL_DATABASE_URL },
    path.join(ROOT, 'services/market-intel'),
  );

  // Webhooks need a signing secret (else webhook_url is refused with 422): a random one per run unless
  // WEBHOOK_SECRET is given; only the fact is printed, never the value.
  let webhookSecret = env.WEBHOOK_SECRET;
  if (!webhookSecret?.trim()) {
    webhookSecret = randomBytes(32).toString('base64url');
    log(
      'market-intel: generated a random WEBHOOK_SECRET (set WEBHOOK_SECRET to choose one and verify signatures)',
    );
  }
  // Payments are bound to the request they were offered for (Solana Pay references) with a key of
  // the same kind, random per run unless X402_REFERENCE_SECRET is given.
  const referenceSecret = env.X402_REFERENCE_SECRET?.trim() || randomBytes(32).toString('base64url');
  startService('market-intel', 'services/market-intel', MARKET_INTEL_PORT, {
    DATABASE_URL: MARKET_INTEL_DATABASE_URL,
    AMQP_URL,
    SOLANA_RPC_URL: mainnet.rpcUrl,
    USDC_MINT: mainnet.mint,
    MERCHANT_TOKEN_ACCOUNT: mainnet.merchantTokenAccount,
    SOLANA_DEVNET_RPC_URL: devnet.rpcUrl,
    USDC_MINT_DEVNET: devnet.mint,
    MERCHANT_TOKEN_ACCOUNT_DEVNET: devnet.merchantTokenAccount,
    // Every 402 also offers the official x402 exact scheme, settled by the ledger's fee payer.
    X402_FEE_PAYER_KEYPAIR: mainnet.feePayerKeypairPath,
    // Failed paid jobs are refunded from the ledger's refund wallet (a ledger started before refunds
    // existed reports none).
    ...(mainnet.refundKeypairPath ? { X402_REFUND_KEYPAIR: mainnet.refundKeypairPath } : {}),
    MERCHANT_WALLET: mainnet.merchantOwner,
    MERCHANT_WALLET_DEVNET: devnet.merchantOwner,
    WEBHOOK_SECRET: webhookSecret,
    X402_REFERENCE_SECRET: referenceSecret,
    // As in production: a paid answer goes again only to its payer signed in (docs/payments.md,
    // "Signing in instead of paying again"); X402_SIGN_IN_WITH_X=false turns it off.
    X402_SIGN_IN_WITH_X: env.X402_SIGN_IN_WITH_X ?? 'true',
    // Scheduled scout scans of the shipped sectors (daily unless SCOUT_SCAN_INTERVAL_MINUTES says otherwise).
    SCOUT_SOURCES_FILE:
      env.SCOUT_SOURCES_FILE ?? path.join(ROOT, 'services/market-intel/config/scout-sources.json'),
  });
  // The runner reads LLM_BASE_URL, LLM_API_KEY, LLM_MODEL and SEARCH_* from this environment.
  // Development only: `pnpm demo scan` serves fixture feeds on 127.0.0.1, which production refuses (SSRF).
  startService('pipeline-runner', 'services/pipeline-runner', RUNNER_PORT, {
    AMQP_URL,
    SSRF_ALLOWLIST: env.SSRF_ALLOWLIST ?? '127.0.0.1',
  });
  startService('signal-feedback', 'services/signal-feedback', SIGNAL_FEEDBACK_PORT, {
    DATABASE_URL: SIGNAL_FEEDBACK_DATABASE_URL,
  });
  // Development only: the demo registers skills served on this machine, which production refuses (SSRF).
  startService('skill-router', 'services/skill-router', SKILL_ROUTER_PORT, {
    DATABASE_URL: SKILL_ROUTER_DATABASE_URL,
    SSRF_ALLOWLIST: env.SSRF_ALLOWLIST ?? '127.0.0.1,localhost',
    VERIFY_INTERVAL_MS: env.VERIFY_INTERVAL_MS ?? '500',
  });
  await Promise.all(
    [MARKET_INTEL_PORT, RUNNER_PORT, SIGNAL_FEEDBACK_PORT, SKILL_ROUTER_PORT].map((port) =>
      waitFor(`http://127.0.0.1:${port}/livez`, 90_000),
    ),
  );
  const llm = env.LLM_BASE_URL
    ? `${env.LLM_MODEL ?? '?'} at ${env.LLM_BASE_URL}`
    : 'none: compute endpoints answer 503 config (see README, "LLM")';

  process.stdout.write(
    [
      '',
      'Stack is up:',
      `  market-intel   http://127.0.0.1:${MARKET_INTEL_PORT}/api/v1  (sectors: /api/v1/sectors, docs: /docs)`,
      `  runner         http://127.0.0.1:${RUNNER_PORT}/metrics  (LLM: ${llm})`,
      `  signal-feedback http://127.0.0.1:${SIGNAL_FEEDBACK_PORT}/  (dashboard; API /api, docs /docs)`,
      `  skill-router   http://127.0.0.1:${SKILL_ROUTER_PORT}/api/health  (docs /docs; local skill endpoints allowed for the demo)`,
      '  metrics        http://127.0.0.1:9101/metrics, :9102, :9103 (market-intel, signal-feedback, skill-router; METRICS_PORT)',
      `  solana ledger  ${mainnet.rpcUrl}  (devnet: ${devnet.rpcUrl})`,
      `  agent wallet   ${mainnet.agent}  keypair ${mainnet.agentKeypairPath}`,
      '',
      'In another terminal: pnpm demo   (market-intel: paid data, a debate and a scout scan over local fixture feeds; signal-feedback: signals to proposals, a deployment verified; skill-router: register, verify, route)',
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
}

/** Starts one service from its sources (`tsx`), on `port`, with `extraEnv` over this environment. */
function startService(name: string, dir: string, port: string, extraEnv: NodeJS.ProcessEnv): void {
  const child = spawn('pnpm', ['exec', 'tsx', '--conditions=@repo/source', 'src/main.ts'], {
    cwd: path.join(ROOT, dir),
    stdio: 'inherit',
    env: { ...env, ...extraEnv, PORT: port },
  });
  children.push(child);
  child.on('exit', (code) => {
    log(`${name} exited with ${code}`);
    void stop(code ?? 1);
  });
}

let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : Promise.resolve())),
  );
  await ledger?.close();
  process.exit(code);
}

process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  void stop(1);
});
