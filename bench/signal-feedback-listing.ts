// signal-feedback open-deployment listing benchmark (docs/benchmarks.md, "signal-feedback: the
// open-deployment listing"; the fast path of docs/architecture.md, "Fast paths"):
//  GET /api/proposals/{id}/deployments of a proposal with BENCH_OPEN_DEPLOYMENTS (default 20) open
//  deployments over BENCH_SIGNALS (default 300,000) signals of its product (15 days, four contexts),
//  one request at a time, against two services on one database: one with DEPLOYMENT_LISTING_SNAPSHOTS
//  on (its open-window monitor stores each deployment's figures every BENCH_MONITOR_INTERVAL_MS), one
//  with it off (every listing computes). The two are alternated for BENCH_ROUNDS (default 5) rounds of
//  BENCH_REQUESTS (default 20) requests each; each round's ratio compares neighbours on a shared
//  machine. No signal arrives during the runs, so the stored figures stay current; a listing answered
//  from them carries a `computed_at` before the request.
// Both services run from the build as the container does (node dist/main.js).
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import { quantile, waitFor } from './measure';
import { buildService, migrateDatabase, runBench } from './service-setup';

const ROOT = path.resolve(__dirname, '..');
const SERVICE_DIR = path.join(ROOT, 'services/signal-feedback');
const env = process.env;
const OPEN = Number(env.BENCH_OPEN_DEPLOYMENTS ?? 20);
const SIGNALS = Number(env.BENCH_SIGNALS ?? 300_000);
const ROUNDS = Math.max(1, Number(env.BENCH_ROUNDS ?? 5));
const REQUESTS = Math.max(1, Number(env.BENCH_REQUESTS ?? 20));
const MONITOR_INTERVAL_MS = Number(env.BENCH_MONITOR_INTERVAL_MS ?? 30_000);
const PORT_ON = Number(env.BENCH_SIGNAL_FEEDBACK_PORT ?? 13012);
const PORT_OFF = PORT_ON + 1;
const DATABASE_URL =
  env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/signal_feedback_listing_bench';
const SKIP_BUILD = env.BENCH_SKIP_BUILD === '1';
const DAY_MS = 86_400_000;

const children: ChildProcess[] = [];
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

/** Starts the built service on `port` with the switch set; its metrics on `port + 100`. */
function startService(port: number, snapshots: boolean): void {
  const child = spawn('node', ['dist/main.js'], {
    cwd: SERVICE_DIR,
    env: {
      ...env,
      NODE_ENV: 'development',
      PORT: String(port),
      METRICS_PORT: String(port + 100),
      HOST: '127.0.0.1',
      DATABASE_URL,
      LOG_LEVEL: 'warn',
      ANALYSIS_INTERVAL_MS: '0',
      VERIFICATION_INTERVAL_MS: '0',
      DEPLOYMENT_LISTING_SNAPSHOTS: String(snapshots),
      // Off, nothing would be stored: its monitor would only add load.
      MONITOR_INTERVAL_MS: snapshots ? String(MONITOR_INTERVAL_MS) : '0',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
}

/** A Scale user's product with four contexts, an approved checkout proposal; its key and ids. */
async function setUp(base: string, pool: Pool) {
  const signup = await fetch(`${base}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'bench password 123' }),
  });
  const me = await json<{ csrf_token: string; user: { id: string } }>(signup);
  await pool.query(`UPDATE users SET plan = 'scale' WHERE id = $1`, [me.user.id]);
  const headers = {
    'content-type': 'application/json',
    cookie: (signup.headers.getSetCookie()[0] ?? '').split(';')[0] ?? '',
    'x-csrf-token': me.csrf_token,
  };
  const post = async <T>(p: string, body: unknown, method = 'POST') =>
    json<T>(await fetch(`${base}${p}`, { method, headers, body: JSON.stringify(body) }));
  const product = await post<{ id: string; api_key: string }>('/api/products', { name: 'bench shop' });
  const contexts: string[] = [];
  for (const name of ['Checkout', 'Express checkout', 'Search', 'Onboarding'])
    contexts.push(
      (
        await post<{ id: string }>('/api/context', {
          product_id: product.id,
          name,
          content: name,
          positive_signals: ['checkout_completed'],
          negative_signals: ['payment_failed'],
        })
      ).id,
    );
  const burst = Array.from({ length: 20 }, (_, i) => ({
    type: i % 2 ? 'checkout_completed' : 'payment_failed',
    context_id: contexts[0],
  }));
  await json(
    await fetch(`${base}/api/signals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': product.api_key },
      body: JSON.stringify(burst),
    }),
  );
  const run = await post<{ proposals: { id: string; context_id: string }[] }>('/api/analysis/run', {});
  const proposal = run.proposals.find((p) => p.context_id === contexts[0]);
  if (!proposal) throw new Error('the analysis made no checkout proposal');
  await post(`/api/proposals/${proposal.id}`, { status: 'approved' }, 'PATCH');
  return { key: product.api_key, productId: product.id, contexts, proposalId: proposal.id };
}

/** One listing's latency, ms, and whether its open deployments were served from stored figures. */
async function listOnce(
  base: string,
  key: string,
  proposalId: string,
): Promise<{ ms: number; stored: number }> {
  const started = performance.now();
  const asked = Date.now();
  const rows = await json<{ verification: { provisional: boolean; computed_at: string } }[]>(
    await fetch(`${base}/api/proposals/${proposalId}/deployments`, { headers: { 'x-api-key': key } }),
  );
  const ms = performance.now() - started;
  // Computed figures carry the request's own time; stored ones an earlier pass's (ms precision).
  const stored = rows.filter((r) => Date.parse(r.verification.computed_at) < asked - 1).length;
  return { ms, stored };
}

const median = (xs: number[]) => quantile(xs, 0.5);
const p90 = (xs: number[]) => quantile(xs, 0.9);

async function main(): Promise<void> {
  const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}`;
  log(
    `machine: ${machine}; load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  if (!SKIP_BUILD) buildService(ROOT, '@repo/signal-feedback', log);
  await migrateDatabase(DATABASE_URL, path.join(SERVICE_DIR, 'prisma/migrations'), log);
  const pool = new Pool({ connectionString: DATABASE_URL, max: 4 });
  await pool.query(
    'TRUNCATE signals, proposals, deployments, usage_counters, sessions, contexts, products, users, rate_limits, analysis_runs CASCADE',
  );
  startService(PORT_ON, true);
  startService(PORT_OFF, false);
  const on = `http://127.0.0.1:${PORT_ON}`;
  const off = `http://127.0.0.1:${PORT_OFF}`;
  for (const base of [on, off]) await waitFor(async () => (await fetch(`${base}/readyz`)).ok, base);

  const s = await setUp(on, pool);
  const now = Date.now();
  log(`inserting ${SIGNALS} signals over the 15 days before now in four contexts`);
  // Every fourth signal fails; the checkout and the express checkout carry most of the traffic.
  await pool.query(
    `INSERT INTO signals (product_id, context_id, type, sentiment, created_at, received_at)
     SELECT $1::uuid, ($2::uuid[])[1 + (g * 7 % 10) / 3],
            CASE WHEN g % 4 = 0 THEN 'payment_failed' ELSE 'checkout_completed' END,
            (CASE WHEN g % 4 = 0 THEN 'negative' ELSE 'positive' END)::"Sentiment",
            $3::timestamptz + (g * 15 * interval '1 day') / $4::int, now()
       FROM generate_series(0, $4::int - 1) AS g`,
    [s.productId, s.contexts, new Date(now - 15 * DAY_MS), SIGNALS],
  );
  await pool.query('ANALYZE signals');
  // Day-long windows deployed over the last 23 hours: on average half elapsed, as a day's open ones are.
  const spacingMs = Math.floor((23 * 3_600_000) / OPEN);
  log(
    `recording ${OPEN} open deployments (day-long windows, one every ${Math.round(spacingMs / 60_000)} minutes)`,
  );
  for (let i = 0; i < OPEN; i++) {
    await json(
      await fetch(`${on}/api/proposals/${s.proposalId}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': s.key },
        body: JSON.stringify({
          deployed_at: new Date(now - (i + 1) * spacingMs).toISOString(),
          version: `v1.${i}`,
          window_minutes: 1440,
        }),
      }),
    );
  }
  log('waiting for the monitor to store every open deployment’s figures');
  await waitFor(
    async () => (await listOnce(on, s.key, s.proposalId)).stored === OPEN,
    'the first monitor pass',
    MONITOR_INTERVAL_MS * 3 + 60_000,
  );
  for (let i = 0; i < 3; i++) {
    await listOnce(on, s.key, s.proposalId);
    await listOnce(off, s.key, s.proposalId);
  }

  const rounds: { on: number[]; off: number[]; storedShare: number }[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const r = { on: [] as number[], off: [] as number[], storedShare: 0 };
    let stored = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const a = await listOnce(on, s.key, s.proposalId);
      r.on.push(a.ms);
      stored += a.stored;
    }
    for (let i = 0; i < REQUESTS; i++) r.off.push((await listOnce(off, s.key, s.proposalId)).ms);
    r.storedShare = stored / (REQUESTS * OPEN);
    rounds.push(r);
    log(
      `round ${round}/${ROUNDS}: on median ${median(r.on).toFixed(1)} ms (stored figures for ${(r.storedShare * 100).toFixed(0)} % of the deployments), off median ${median(r.off).toFixed(1)} ms, ratio off/on ${(median(r.off) / median(r.on)).toFixed(1)}`,
    );
  }
  const all = (k: 'on' | 'off') => rounds.flatMap((r) => r[k]);
  const ratios = rounds.map((r) => Number((median(r.off) / median(r.on)).toFixed(1)));
  const summary = {
    machine,
    loadAverage: os.loadavg().map((x) => Number(x.toFixed(2))),
    signals: SIGNALS,
    openDeployments: OPEN,
    rounds: ROUNDS,
    requestsPerRound: REQUESTS,
    monitorIntervalMs: MONITOR_INTERVAL_MS,
    on: { medianMs: Number(median(all('on')).toFixed(1)), p90Ms: Number(p90(all('on')).toFixed(1)) },
    off: { medianMs: Number(median(all('off')).toFixed(1)), p90Ms: Number(p90(all('off')).toFixed(1)) },
    storedShare: Number((rounds.reduce((k, r) => k + r.storedShare, 0) / rounds.length).toFixed(3)),
    ratioOffOverOn: ratios,
  };
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  await pool.end();
}

runBench(main, children);
