// skill-router benchmarks (targets and results in docs/benchmarks.md, "skill-router: routing and
// verification"):
//  1. POST /api/discover/route latency p50/p99 and throughput with BENCH_SKILLS (10,000) active skills
//     at 16 concurrent clients (autocannon; targets at 10,000: p99 <= 30 ms and >= 0.3 of bare
//     Express; at 100,000: p99 <= 60 ms and RSS <= 300 MB), alternated for BENCH_ROUNDS rounds with a
//     bare Express POST route (bench/bare-server.ts) in the same run; then with every task new (the
//     task's lexemes never cached). The skills are seeded straight into PostgreSQL through the
//     service's own repository (same full-text vectors as a registration), then marked active with
//     varied metrics; routing starts once the service's routing index is loaded.
//  2. Time to register and verify 1,000 skills: 1,000 POST /api/discover/register at 16 concurrent
//     clients against local skill endpoints, until the verification worker (default settings) has
//     run the health check, schema validation and test call of every one.
// skill-router runs from its build as its start script runs it (bench/start-script.ts: its V8 memory
// flags included) in its own process; autocannon, the seeding and the local skill endpoints run here.
// BENCH_EMBEDDINGS=1 turns search by meaning on: a scripted OpenAI-compatible embeddings server in
// this process (BENCH_EMBEDDING_DIMS dimensions, 256 by default) that the service's embeddings worker
// embeds every skill from before routing starts, and that each new task is embedded by.
// BENCH_RESEED=0 keeps a database that already holds exactly BENCH_SKILLS active seeded skills
// (seeding 100,000 takes minutes); BENCH_HEAP_SNAPSHOT_DIR makes the service write a V8 heap snapshot
// there after the route runs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'pg';
import { applyMigrations, ensureDatabase } from '@repo/db-migrate';
import {
  openDirectorySeeder,
  startLocalSkills,
  startScriptedEmbeddings,
  type RegisterSkillRequest,
} from '@repo/skill-router/bench';
import { describeMemory, memory } from './memory';
import { prng } from './prng';
import { startScript } from './start-script';
import { runBench } from './service-setup';

const ROOT = path.resolve(__dirname, '..');
const SERVICE_DIR = path.join(ROOT, 'services/skill-router');
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SKILLS = Number(process.env.BENCH_SKILLS ?? 10_000);
const REGISTER = Number(process.env.BENCH_REGISTER ?? 1000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2));
const PORT = Number(process.env.BENCH_SKILL_ROUTER_PORT ?? 13003);
const METRICS_PORT = Number(process.env.BENCH_SKILL_ROUTER_METRICS_PORT ?? 13103);
const BARE_PORT = Number(process.env.BENCH_BARE_PORT ?? 13099);
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/skill_router_bench';
const SKIP_BUILD = process.env.BENCH_SKIP_BUILD === '1';
/** Extra node flags for the service, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const RESEED = process.env.BENCH_RESEED !== '0';
const SNAPSHOT_DIR = process.env.BENCH_HEAP_SNAPSHOT_DIR;
const EMBEDDINGS = process.env.BENCH_EMBEDDINGS === '1';
const EMBEDDING_DIMS = Number(process.env.BENCH_EMBEDDING_DIMS ?? 256);
const EMBEDDING_MODEL = `bench-embed-${EMBEDDING_DIMS}`;
/**
 * The service inherits this process's environment: `ROUTING_INDEX=false pnpm bench skill-router` ranks
 * every route in PostgreSQL (docs/architecture.md, "Fast paths"), and nothing waits for an index.
 */
const ROUTING_INDEX = !['false', '0', 'no'].includes(process.env.ROUTING_INDEX?.trim() ?? '');
if (SNAPSHOT_DIR) NODE_ARGS.push('--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${SNAPSHOT_DIR}`);
const BASE = `http://127.0.0.1:${PORT}`;

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const children: ChildProcess[] = [];

const rand = prng(42);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;

// A vocabulary of 1,500 pronounceable words and 200 capability tags.
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ren',
  'to',
  'sa',
  'vel',
  'di',
  'nor',
  'pa',
  'qui',
  'ber',
  'zu',
  'fen',
  'ga',
  'hol',
  'ti',
  'mar',
  'se',
  'dol',
];
const VOCAB = [
  ...new Set(
    Array.from({ length: 4000 }, () =>
      Array.from({ length: 2 + Math.floor(rand() * 2) }, () => pick(SYLLABLES)).join(''),
    ),
  ),
].slice(0, 1500);
const TAGS = VOCAB.slice(0, 200);
const CHAINS = ['solana', 'ethereum', 'base', 'arbitrum', 'polygon', 'bitcoin'];
const words = (n: number) => Array.from({ length: n }, () => pick(VOCAB)).join(' ');

const INPUT_SCHEMA = {
  type: 'object',
  properties: { text: { type: 'string', minLength: 1 } },
  required: ['text'],
};
const OUTPUT_SCHEMA = { type: 'object', properties: { result: { type: 'string' } }, required: ['result'] };

function seedSkill(i: number, endpoint: string): RegisterSkillRequest {
  return {
    skill_id: `bench-${i}`,
    name: `${words(2)} agent`,
    provider: `provider-${i % 300}`,
    description: `${words(12)}.`,
    capabilities: [...new Set([pick(TAGS), pick(TAGS), pick(TAGS)])],
    chains: [...new Set(Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(CHAINS)))],
    pricing: { model: 'per_call', price_usd: rand() < 0.1 ? 0 : Math.round(rand() * 200) / 10_000 },
    endpoint,
    input_schema: INPUT_SCHEMA,
    output_schema: OUTPUT_SCHEMA,
  };
}

function start(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): ChildProcess {
  const child = spawn(cmd, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}

async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
  everyMs = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * skill-router from its build. The per-key abuse limits (300 routes a minute, 50 registrations a day
 * by default) are raised out of the way: the bench measures routing and verification, and one bench
 * key sends thousands of requests.
 */
function startService(env: Record<string, string>): ChildProcess {
  const { command, args } = startScript(path.join(ROOT, 'services/skill-router'));
  return start(
    command,
    [...NODE_ARGS, ...args],
    {
      DATABASE_URL,
      PORT: String(PORT),
      METRICS_PORT: String(METRICS_PORT),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ROUTES_PER_KEY_PER_MINUTE: '1000000',
      REGISTRATIONS_PER_KEY_PER_DAY: '1000000',
      ...env,
    },
    SERVICE_DIR,
  );
}

/** Stops the bench when a run got answers other than 2xx: its latencies would not be routing's. */
function assertNoErrors(what: string, errors: number): void {
  if (errors > 0) throw new Error(`${what}: ${errors} requests were not answered 2xx`);
}

function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/** The sum of every sample of a series on skill-router's metrics port (0 when absent). */
async function metricSum(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** The first sample of a series on skill-router's metrics port, or NaN when absent. */
async function metric(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text();
  // Every series carries the service label: `name{service="skill-router"} value`.
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

const machine = () => ({
  cpus: os.cpus().length,
  model: os.cpus()[0]?.model,
  node: process.version,
  loadavg: os.loadavg(),
});

/**
 * With BENCH_RESEED=0, the database as a previous run left it when it holds exactly SKILLS skills,
 * all seeded and active (a registration run adds others); otherwise `null` (seed again).
 */
async function seededDatabase(): Promise<{ pool: Pool; close(): Promise<void> } | null> {
  const pg = new Pool({ connectionString: DATABASE_URL, max: 4 });
  const { rows } = await pg.query<{ all: string; seeded: string }>(
    `SELECT count(*) AS all, count(*) FILTER (WHERE skill_id LIKE 'bench-%' AND status = 'active') AS seeded
       FROM skills`,
  );
  if (Number(rows[0]?.all) === SKILLS && Number(rows[0]?.seeded) === SKILLS)
    return { pool: pg, close: () => pg.end() };
  await pg.end();
  return null;
}

/**
 * Has the service write a heap snapshot into BENCH_HEAP_SNAPSHOT_DIR (`--heapsnapshot-signal`) and
 * waits until it is written: the service answers again only once the snapshot is on disk.
 */
async function heapSnapshot(service: ChildProcess, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  service.kill('SIGUSR2');
  await waitFor(
    async () => readdirSync(dir).some((f) => f.endsWith('.heapsnapshot') && !before.has(f)),
    'the heap snapshot file',
    120_000,
  );
  await waitFor(
    async () => (await fetch(`${BASE}/livez`)).ok,
    'the service after its heap snapshot',
    600_000,
  );
  return readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f)) ?? '';
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function main(): Promise<void> {
  log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (!SKIP_BUILD) {
    log('building skill-router');
    const build = spawnSync(
      'pnpm',
      ['exec', 'turbo', 'run', 'build', '--filter=@repo/skill-router...', '--output-logs=errors-only'],
      { cwd: ROOT, stdio: 'inherit' },
    );
    if (build.status !== 0) throw new Error('build failed');
  }

  await ensureDatabase(DATABASE_URL);
  await applyMigrations({
    databaseUrl: DATABASE_URL,
    migrationsDir: path.join(SERVICE_DIR, 'prisma/migrations'),
    log: { info: () => undefined, warn: log },
  });

  // 1. route latency over SKILLS active skills
  let db: { pool: Pool; close(): Promise<void> };
  const kept = RESEED ? null : await seededDatabase();
  if (kept) {
    db = kept;
    // The same draws as a seeding, so that the tasks below are the same.
    for (let i = 0; i < SKILLS; i++) seedSkill(i, '');
    log(`kept the ${SKILLS} seeded skills already in the database`);
  } else {
    const seeder = await openDirectorySeeder(DATABASE_URL, 20);
    db = seeder;
    log(`seeding ${SKILLS} skills through the repository`);
    const t0 = performance.now();
    await pool(
      Array.from({ length: SKILLS }, (_, i) => i),
      16,
      async (i) => {
        await seeder.upsert(seedSkill(i, `http://127.0.0.1:9/skill/${i}`));
      },
    );
    await db.pool.query(`UPDATE skills SET status = 'active'`);
    await db.pool.query(
      `UPDATE skill_stats SET success_rate_24h = 0.7 + random() * 0.3, avg_latency_ms = 20 + random() * 900,
         calls_30d = floor(random() * 5000), rating_count = floor(random() * 50), popularity = random()`,
    );
    await db.pool.query(`UPDATE skill_stats SET rating_sum = rating_count * (3 + floor(random() * 3))`);
    // What autovacuum does in steady state: dead row versions gone, the GIN pending lists merged.
    await db.pool.query('VACUUM ANALYZE skills');
    await db.pool.query('VACUUM ANALYZE skill_stats');
    log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }

  const bare = start('pnpm', ['exec', 'tsx', 'bench/bare-server.ts'], { PORT: String(BARE_PORT) });
  const BARE = `http://127.0.0.1:${BARE_PORT}/bare`;
  const embeddings = EMBEDDINGS ? await startScriptedEmbeddings({ dims: EMBEDDING_DIMS }) : undefined;
  const embeddingsEnv: Record<string, string> = embeddings
    ? { EMBEDDINGS_BASE_URL: embeddings.baseUrl, EMBEDDINGS_MODEL: EMBEDDING_MODEL }
    : {};
  const embedded = async () =>
    Number(
      (
        await db.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM skills WHERE embedding_model = $1 AND embedding_revision = revision`,
          [EMBEDDING_MODEL],
        )
      ).rows[0]?.n ?? 0,
    );
  const embeddedBefore = embeddings ? await embedded() : 0;
  const started = performance.now();
  let service = startService({ WORKERS_ENABLED: 'true', ...embeddingsEnv });
  await waitFor(async () => (await fetch(`${BASE}/readyz`)).ok, 'skill-router');
  let indexLoad: Record<string, number> | 'off (ROUTING_INDEX=false)' = 'off (ROUTING_INDEX=false)';
  if (ROUTING_INDEX) {
    await waitFor(
      async () => (await metric('skill_routing_index_current')) === 1,
      'the routing index',
      600_000,
    );
    indexLoad = {
      skills: await metric('skill_routing_index_skills'),
      load_s: Number((await metric('skill_routing_index_load_seconds_sum')).toFixed(2)),
      start_to_current_s: Number(((performance.now() - started) / 1000).toFixed(2)),
    };
  }
  log(`routing index: ${JSON.stringify(indexLoad)}`);
  if (embeddings && embeddedBefore < SKILLS) {
    // The embeddings worker embeds every seeded skill (32 per request); each store notifies the index.
    const t0 = performance.now();
    await waitFor(async () => (await embedded()) >= SKILLS, 'the embeddings of every skill', 1_200_000);
    if (ROUTING_INDEX)
      await waitFor(
        async () => (await metricSum('skill_routing_index_updates_total')) >= SKILLS - embeddedBefore,
        'the routing index to hear of the embeddings',
        600_000,
      );
    log(`embedded ${SKILLS - embeddedBefore} skills in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  log(`embeddings: ${embeddings ? `on, ${EMBEDDING_DIMS} dimensions (scripted server)` : 'off'}`);
  await waitFor(async () => (await fetch(BARE)).ok, 'the bare server');
  const keyRes = await fetch(`${BASE}/api/auth/key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const apiKey = ((await keyRes.json()) as { api_key: string }).api_key;

  const tasks = Array.from({ length: 200 }, (_, i) => {
    const requirements =
      i % 3 === 0
        ? { chains: [pick(CHAINS)] }
        : i % 3 === 1
          ? { max_price_usd: 0.01, max_latency_ms: 500 }
          : undefined;
    return {
      task: `please find a skill that can ${words(3)} the ${words(3)} for me`,
      ...(requirements ? { requirements } : {}),
    };
  });
  // How many candidates the tasks match (the work per request).
  const counts: number[] = [];
  for (const t of tasks.slice(0, 50)) {
    const r = await fetch(`${BASE}/api/discover/route`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify(t),
    });
    counts.push(((await r.json()) as { total_matches: number }).total_matches);
  }
  counts.sort((a, b) => a - b);
  log(`candidates per task: median ${quantile(counts, 0.5)}, max ${counts[counts.length - 1]}`);
  const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
  const requests = tasks.map((t) => ({
    method: 'POST' as const,
    path: '/api/discover/route',
    headers,
    body: JSON.stringify(t),
  }));
  const bareRequests = requests.map((r) => ({ ...r, path: '/bare' }));
  log('warm-up 5 s');
  await run({ url: BASE, connections: CONNECTIONS, duration: 5, requests });
  await run({
    url: `http://127.0.0.1:${BARE_PORT}`,
    connections: CONNECTIONS,
    duration: 2,
    requests: bareRequests,
  });

  log(
    `route: bare Express and skill-router alternated, ${ROUNDS} round(s) of ${DURATION_S} s, ${CONNECTIONS} connections`,
  );
  const rounds: { bare: number; route: autocannon.Result }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const bareRun = await run({
      url: `http://127.0.0.1:${BARE_PORT}`,
      connections: CONNECTIONS,
      duration: DURATION_S,
      requests: bareRequests,
    });
    assertNoErrors('bare', bareRun.non2xx + bareRun.errors);
    const routeRun = await run({ url: BASE, connections: CONNECTIONS, duration: DURATION_S, requests });
    assertNoErrors('route', routeRun.non2xx + routeRun.errors);
    rounds.push({ bare: bareRun.requests.average, route: routeRun });
    log(
      `  round ${i + 1}: bare ${Math.round(bareRun.requests.average)} req/s, route ${Math.round(routeRun.requests.average)} req/s (ratio ${(routeRun.requests.average / bareRun.requests.average).toFixed(3)}), p50 ${routeRun.latency.p50} ms, p99 ${routeRun.latency.p99} ms`,
    );
  }
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / Math.max(1, xs.length);
  const worst = rounds.reduce((w, r) => (r.route.latency.p99 > w.route.latency.p99 ? r : w), rounds[0]!);
  const routeResult = {
    skills: SKILLS,
    connections: CONNECTIONS,
    rounds: ROUNDS,
    rps: Math.round(mean(rounds.map((r) => r.route.requests.average))),
    bare_rps: Math.round(mean(rounds.map((r) => r.bare))),
    ratio_to_bare: Number(mean(rounds.map((r) => r.route.requests.average / r.bare)).toFixed(3)),
    p50_ms: worst.route.latency.p50,
    p90_ms: worst.route.latency.p90,
    p99_ms: worst.route.latency.p99,
    max_ms: worst.route.latency.max,
    candidates_median: quantile(counts, 0.5),
  };
  log(`route: ${JSON.stringify(routeResult)}`);

  // Every task new: the task's lexemes come from PostgreSQL on every request.
  let fresh = 0;
  const freshRun = await run({
    url: BASE,
    connections: CONNECTIONS,
    duration: DURATION_S,
    requests: [
      {
        method: 'POST',
        path: '/api/discover/route',
        headers,
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({ task: `find a skill to ${words(3)} the ${words(3)} number ${fresh++}` }),
        }),
      },
    ],
  });
  assertNoErrors('route, every task new', freshRun.non2xx + freshRun.errors);
  const freshResult = {
    rps: Math.round(freshRun.requests.average),
    p50_ms: freshRun.latency.p50,
    p99_ms: freshRun.latency.p99,
  };
  log(`route, every task new: ${JSON.stringify(freshResult)}`);

  // The same requests one at a time: the latency of a request that does not queue behind others.
  const single = await run({
    url: BASE,
    connections: 1,
    duration: Math.max(5, Math.round(DURATION_S / 2)),
    requests,
  });
  const singleResult = {
    connections: 1,
    rps: Math.round(single.requests.average),
    p50_ms: single.latency.p50,
    p99_ms: single.latency.p99,
    errors: single.non2xx + single.errors,
  };
  log(`route, 1 connection: ${JSON.stringify(singleResult)}`);
  assertNoErrors('route, 1 connection', singleResult.errors);
  const breakdown = await memory(service.pid ?? 0, `http://127.0.0.1:${METRICS_PORT}`);
  log(`skill-router memory after routing: ${describeMemory(breakdown)}`);
  if (SNAPSHOT_DIR)
    log(`heap snapshot: ${path.join(SNAPSHOT_DIR, await heapSnapshot(service, SNAPSHOT_DIR))}`);
  await stop(bare);

  await embeddings?.close();

  const summary: Record<string, unknown> = {
    machine: machine(),
    index: indexLoad,
    embeddings: embeddings ? { dims: EMBEDDING_DIMS, model: EMBEDDING_MODEL } : 'off',
    route: routeResult,
    route_every_task_new: freshResult,
    route_single_connection: singleResult,
    memory_mb: breakdown,
  };
  if (REGISTER === 0) {
    await stop(service);
    await db.close();
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
    return;
  }

  // 2. register + verify REGISTER skills against local endpoints
  await stop(service);
  const endpoints = await startLocalSkills();
  endpoints.set('bench', {
    kind: 'healthy',
    respond: (input) => ({ result: `done: ${String((input as { text?: string }).text ?? '').slice(0, 20)}` }),
  });
  service = startService({ WORKERS_ENABLED: 'true', SSRF_ALLOWLIST: '127.0.0.1' });
  await waitFor(async () => (await fetch(`${BASE}/readyz`)).ok, 'skill-router');
  const regKeyRes = await fetch(`${BASE}/api/auth/key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-provider' }),
  });
  const regKey = ((await regKeyRes.json()) as { api_key: string }).api_key;
  const toRegister = Array.from({ length: REGISTER }, (_, i) => ({
    ...seedSkill(SKILLS + i, endpoints.url('bench')),
    skill_id: `reg-${i}`,
  }));
  log(`registering ${REGISTER} skills at ${CONNECTIONS} concurrent clients`);
  const r0 = performance.now();
  let failures = 0;
  await pool(toRegister, CONNECTIONS, async (s) => {
    const res = await fetch(`${BASE}/api/discover/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': regKey },
      body: JSON.stringify(s),
    });
    if (res.status !== 201) failures++;
    await res.arrayBuffer();
  });
  const registeredMs = performance.now() - r0;
  await waitFor(
    async () => {
      const { rows } = await db.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM skills WHERE skill_id LIKE 'reg-%' AND status = 'pending_verification'`,
      );
      return Number(rows[0]?.n) === 0;
    },
    'verification of every registered skill',
    600_000,
    50,
  );
  const verifiedMs = performance.now() - r0;
  const { rows: outcome } = await db.pool.query<{ status: string; n: string; p50: number; p99: number }>(
    `SELECT status, count(*) AS n,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM verified_at - updated_at) * 1000) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM verified_at - updated_at) * 1000) AS p99
       FROM skills WHERE skill_id LIKE 'reg-%' GROUP BY status`,
  );
  const registerResult = {
    skills: REGISTER,
    connections: CONNECTIONS,
    register_failures: failures,
    all_registered_s: Number((registeredMs / 1000).toFixed(2)),
    all_verified_s: Number((verifiedMs / 1000).toFixed(2)),
    skills_per_s: Math.round(REGISTER / (verifiedMs / 1000)),
    outcome: Object.fromEntries(outcome.map((o) => [o.status, Number(o.n)])),
    register_to_verified_p50_ms: Math.round(outcome.find((o) => o.status === 'active')?.p50 ?? NaN),
    register_to_verified_p99_ms: Math.round(outcome.find((o) => o.status === 'active')?.p99 ?? NaN),
    endpoint_requests: endpoints.hits('bench'),
  };
  log(`register+verify: ${JSON.stringify(registerResult)}`);
  assertNoErrors('register', failures);
  await stop(service);
  await endpoints.close();
  await db.close();

  summary.register_verify = registerResult;
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
}

runBench(main, children);
