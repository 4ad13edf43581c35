import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { createLogger } from '@repo/service-kit';
import {
  metricValue,
  scrape,
  spawnService,
  testDatabaseUrl,
  waitFor,
  type ServiceProcess,
} from '@repo/service-kit/testing';
import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import { SchemaSandbox } from '../src/adapters/sandbox/schema-sandbox';
import type { RegisterSkillRequest } from '../src/schemas';
import { verifyJob } from '../src/entry-points/workers/verification';
import { buildSkill, TEXT_INPUT_SCHEMA, TEXT_OUTPUT_SCHEMA, translate } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// Registrants' hostile schemas against two real skill-router replicas sharing one database: one run
// from its TypeScript sources, one from the compiled build as its container runs it.
jest.setTimeout(120_000);

const SERVICE_DIR = path.join(__dirname, '..');
const quiet = { info: () => undefined, warn: () => undefined };

describe('Hostile schemas against two replicas', () => {
  const databaseUrl = testDatabaseUrl('skill_router_hostile_test');
  let skills: LocalSkills;
  let replicas: ServiceProcess[] = [];

  beforeAll(async () => {
    await resetDatabase(databaseUrl);
    await applyMigrations({
      databaseUrl,
      migrationsDir: path.join(SERVICE_DIR, 'prisma/migrations'),
      log: quiet,
    });
    // The build the image runs (type checking is the typecheck task's job).
    execFileSync('pnpm', ['exec', 'tsc', '-p', 'tsconfig.build.json', '--noCheck'], { cwd: SERVICE_DIR });
    skills = await startLocalSkills();
    const env = {
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      WORKERS_ENABLED: 'true',
      SSRF_ALLOWLIST: '127.0.0.1',
      KEY_CREATION_LIMIT_PER_MINUTE: '1000',
      VERIFY_INTERVAL_MS: '100',
      VERIFY_TIMEOUT_MS: '3000',
      SANDBOX_MEMORY_MB: '64',
      // The memory attack takes seconds to fill 64 MB on a busy machine: it must meet the memory limit
      // before the deadline, or it is stopped (and reported) as a timeout instead.
      SANDBOX_TASK_TIMEOUT_MS: '30000',
    };
    replicas = await Promise.all([
      spawnService({ cwd: SERVICE_DIR, env }),
      spawnService({ cwd: SERVICE_DIR, entry: 'dist/main.js', env }),
    ]);
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await skills?.close();
  });

  async function post(replica: ServiceProcess, pathname: string, body: unknown, key?: string) {
    const res = await fetch(replica.baseUrl + pathname, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('When a free key registers schemas that exhaust memory or backtrack forever, then both replicas stay up and answer every health poll within a second, and the skills end verification_failed with the reason', async () => {
    const [a, b] = replicas as [ServiceProcess, ServiceProcess];
    const key = (await post(a, '/api/auth/key', { name: 'attacker' })).body.api_key as string;
    skills.set('backtrack', { kind: 'healthy', respond: () => ({ x: `${'a'.repeat(40)}!` }) });
    skills.set('echo', { kind: 'healthy', respond: translate });
    const attacks: [RegisterSkillRequest, RegExp][] = [
      [
        buildSkill({
          skill_id: 'attack-input-pattern',
          endpoint: skills.url('echo'),
          input_schema: { type: 'string', pattern: '(a{20000}){20000}' },
        }),
        /^schema_validation: input_schema cannot be compiled: .*invalid repeat count/,
      ],
      [
        buildSkill({
          skill_id: 'attack-output-pattern',
          endpoint: skills.url('backtrack'),
          output_schema: { type: 'object', properties: { x: { type: 'string', pattern: '^(a+)+$' } } },
        }),
        /^test_call: the response does not match output_schema: \/x must match pattern "\^\(a\+\)\+\$"/,
      ],
      [
        buildSkill({
          skill_id: 'attack-generator-memory',
          endpoint: skills.url('echo'),
          input_schema: { type: 'string', minLength: 200_000_000 },
        }),
        /^test_call: generating an input from input_schema exceeded the 64 MB memory limit and was stopped$/,
      ],
    ];
    const good = buildSkill({ skill_id: 'honest-translator', endpoint: skills.url('echo') });

    // Warm replicas, as in production: each has served a registration and verified a skill.
    for (const [i, replica] of replicas.entries()) {
      const warmUp = buildSkill({ skill_id: `warm-up-${i}`, endpoint: skills.url('echo') });
      expect((await post(replica, '/api/discover/register', warmUp, key)).status).toBe(201);
      await waitFor(`${warmUp.skill_id} verified`, async () => {
        const res = await fetch(`${replica.baseUrl}/api/discover/skills/${warmUp.skill_id}`);
        return ((await res.json()) as { status: string }).status === 'active';
      });
    }

    // Health of both replicas, polled without pause until every skill is settled.
    let settled = false;
    const latencies: number[][] = [[], []];
    const pollers = replicas.map(async (replica, i) => {
      while (!settled) {
        const started = performance.now();
        const res = await fetch(`${replica.baseUrl}/api/health`);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        latencies[i]!.push(performance.now() - started);
      }
    });

    for (const [i, [skill]] of attacks.entries())
      expect((await post(i % 2 ? a : b, '/api/discover/register', skill, key)).status).toBe(201);
    expect((await post(a, '/api/discover/register', good, key)).status).toBe(201);
    const details = await waitFor(
      'every skill to leave pending_verification',
      async () => {
        const all = await Promise.all(
          [...attacks.map(([s]) => s.skill_id), good.skill_id].map(async (id) => {
            const res = await fetch(`${a.baseUrl}/api/discover/skills/${id}`);
            return (await res.json()) as { status: string; verification: { reason: string | null } };
          }),
        );
        return all.every((d) => d.status !== 'pending_verification') ? all : undefined;
      },
      60_000,
    );
    settled = true;
    await Promise.all(pollers);

    for (const [i, [, reason]] of attacks.entries()) {
      expect(details[i]).toMatchObject({ status: 'verification_failed' });
      expect(details[i]!.verification.reason).toMatch(reason);
    }
    expect(details[3]).toMatchObject({ status: 'active', verification: { reason: null } });
    for (const replica of replicas) {
      const health = await fetch(`${replica.baseUrl}/api/health`);
      expect(health.status).toBe(200);
      expect(replica.child.exitCode).toBeNull();
    }
    // An attack run on a replica's main thread would hold every poll for seconds (the backtracking
    // pattern until its 30 s deadline). A second leaves room for the two sandbox threads saturating
    // both cores of a small machine while the polls are timed from this process.
    for (const series of latencies) {
      expect(series.length).toBeGreaterThan(10);
      expect(Math.max(...series)).toBeLessThan(1000);
    }
    // The thread that ran out of memory was one of the replicas' sandbox threads, not a replica.
    const oom = await Promise.all(
      replicas.map(async (r) =>
        metricValue(await scrape(r.metricsUrl), 'skill_sandbox_tasks_total', {
          task: 'generate_input',
          outcome: 'out_of_memory',
        }),
      ),
    );
    expect(oom.reduce((x, y) => (x ?? 0) + (y ?? 0), 0)).toBe(1);
  });
});

describe('Verifications that never finish', () => {
  let h: Harness;
  let skills: LocalSkills;
  let sandbox: SchemaSandbox;

  beforeAll(async () => {
    skills = await startLocalSkills();
    h = await startHarness('skill_router_unfinished_test');
    sandbox = new SchemaSandbox({
      threads: 1,
      memoryMb: 64,
      taskTimeoutMs: 5000,
      logger: createLogger({ name: 'unfinished-test', level: 'silent' }),
    });
  });
  afterAll(async () => {
    await sandbox.close();
    await h.close();
    await skills.close();
  });

  it('When a revision was claimed three times without a result, then the next claim fails it without calling the endpoint, and an update starts over', async () => {
    skills.set('fine', { kind: 'healthy', respond: translate });
    const key = await h.createKey('provider');
    const skill = buildSkill({ endpoint: skills.url('fine') });
    expect((await h.register(key, skill)).status).toBe(201);
    const claim = () =>
      waitFor('the lease to expire and the skill to be claimed', async () => {
        const [job] = await h.service.verificationQueue.claim(1, 1);
        return job;
      });
    const deps = {
      queue: h.service.verificationQueue,
      stats: h.service.stats,
      http: h.service.skillHttp,
      mcp: h.service.mcp,
      schemas: sandbox,
    };
    const options = {
      healthIntervalMs: 60_000,
      conformance: { intervalMs: 60_000, jitterPercent: 0 },
      maxAttempts: 3,
    };

    // Three replicas that died mid-verification: claimed, never completed.
    for (const attempt of [1, 2, 3]) expect((await claim()).attempts).toBe(attempt);
    const fourth = await claim();
    expect(fourth.attempts).toBe(4);
    expect(await verifyJob(deps, fourth, options)).toBe(false);
    const [row] = await h.sql<{
      status: string;
      verification_reason: string;
      verification: { status: string }[];
    }>('SELECT status, verification_reason, verification FROM skills WHERE skill_id = $1', skill.skill_id);
    expect(row).toMatchObject({
      status: 'verification_failed',
      verification_reason:
        'verification did not finish in 3 attempts (the verifying process crashed or stalled each time)',
    });
    expect(row!.verification.map((s) => s.status)).toEqual(['skipped', 'skipped', 'skipped']);
    expect(skills.hits('fine')).toEqual({ GET: 0, POST: 0 });

    // The owner fixes and re-registers: the count starts over and the skill is verified for real.
    expect(
      (
        await h.register(key, {
          ...skill,
          output_schema: TEXT_OUTPUT_SCHEMA,
          input_schema: TEXT_INPUT_SCHEMA,
        })
      ).status,
    ).toBe(200);
    const fresh = await claim();
    expect(fresh.attempts).toBe(1);
    expect(await verifyJob(deps, fresh, options)).toBe(true);
    expect(skills.hits('fine')).toEqual({ GET: 1, POST: 1 });
  });
});

describe('Verifications that outlast their lease', () => {
  const env = {
    WORKERS_ENABLED: 'true',
    VERIFY_LEASE_MS: '1000',
    VERIFY_TIMEOUT_MS: '4000',
    HEALTH_CHECK_INTERVAL_MS: '600000',
  };
  let replicas: Harness[] = [];
  let skills: LocalSkills;

  beforeAll(async () => {
    skills = await startLocalSkills();
    const first = await startHarness('skill_router_lease_test', env);
    replicas = [first, await startHarness('skill_router_lease_test', env, { resetDb: false })];
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.close()));
    await skills.close();
  });

  it('When a verification takes five times its lease, then the verifying replica renews the lease and no replica verifies the skill twice', async () => {
    const [h] = replicas as [Harness, Harness];
    skills.set('slow', { kind: 'slow', delayMs: 2500, respond: translate });
    const skill = buildSkill({ endpoint: skills.url('slow') });
    expect((await h.register(await h.createKey('provider'), skill)).status).toBe(201);
    const [row] = await waitFor(
      'the slow skill to be verified',
      async () => {
        const rows = await h.sql<{ status: string; verification_attempts: number }>(
          'SELECT status, verification_attempts FROM skills WHERE skill_id = $1',
          skill.skill_id,
        );
        return rows[0]?.status === 'pending_verification' ? undefined : rows;
      },
      20_000,
    );
    expect(row).toEqual({ status: 'active', verification_attempts: 1 });
    expect(skills.hits('slow')).toEqual({ GET: 1, POST: 1 });
  });
});
