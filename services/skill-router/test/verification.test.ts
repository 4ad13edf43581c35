import { freePort } from '@repo/service-kit/testing';
import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import type { RegisterSkillRequest } from '../src/schemas';
import { buildSkill, TEXT_INPUT_SCHEMA, translate, uniqueWord } from './support/factories';
import {
  startHarness,
  startWorkers,
  stopWorkers,
  waitFor,
  withWorkersStopped,
  type Harness,
} from './support/harness';

let h: Harness;
let key: string;
let skills: LocalSkills;

const WORKERS = {
  WORKERS_ENABLED: 'true',
  VERIFY_TIMEOUT_MS: '1500',
  HEALTH_CHECK_TIMEOUT_MS: '1500',
  HEALTH_CHECK_INTERVAL_MS: '60000',
};

beforeAll(async () => {
  skills = await startLocalSkills();
  h = await startHarness('skill_router_verification_test', WORKERS);
  key = await h.createKey('provider');
});
afterAll(async () => {
  await h.close();
  await skills.close();
});

interface Detail {
  status: string;
  verification: {
    steps: { step: string; status: string; detail: string; duration_ms: number }[];
    reason: string | null;
    verified_at: string | null;
  };
  metrics: { success_rate_24h: number; avg_latency_ms: number };
  health: { checks_24h: number };
}

async function detail(id: string, on: Harness = h): Promise<Detail> {
  const res = await on.call('GET', `/api/discover/skills/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** Registers a skill and waits until the worker has moved it out of pending_verification. */
async function registerAndSettle(
  skill: RegisterSkillRequest,
  on: Harness = h,
  apiKey = key,
): Promise<Detail> {
  const res = await on.register(apiKey, skill);
  expect([200, 201]).toContain(res.status);
  return waitFor(`verification of ${skill.skill_id}`, async () => {
    const d = await detail(skill.skill_id, on);
    return d.status !== 'pending_verification' ? d : undefined;
  });
}

const stepStatuses = (d: Detail) => d.verification.steps.map((s) => `${s.step}:${s.status}`);

describe('Verification worker: every step passing', () => {
  it('When the endpoint is healthy and answers valid output, then the skill becomes active with three passed steps, probes recorded and metrics set', async () => {
    skills.set('good', { kind: 'healthy', respond: translate });
    // A capability no other skill has: other tests' active translators must not crowd it out of the matches.
    const own = uniqueWord();
    const skill = buildSkill({ endpoint: skills.url('good'), capabilities: ['translation', 'text', own] });
    const d = await registerAndSettle(skill);
    expect(d.status).toBe('active');
    expect(stepStatuses(d)).toEqual([
      'endpoint_health_check:passed',
      'schema_validation:passed',
      'test_call:passed',
    ]);
    expect(d.verification.reason).toBeNull();
    expect(d.verification.verified_at).not.toBeNull();
    expect(skills.hits('good')).toEqual({ GET: 1, POST: 1 });
    // the test input was generated from input_schema
    const input = skills.lastInput('good') as { text: string; target_language: string };
    expect(TEXT_INPUT_SCHEMA.properties.target_language.enum).toContain(input.target_language);
    expect(typeof input.text).toBe('string');
    const probes = await h.sql<{ kind: string; ok: boolean; status_code: number }>(
      'SELECT kind, ok, status_code FROM health_checks WHERE skill_id = $1 ORDER BY id',
      skill.skill_id,
    );
    expect(probes).toEqual([
      { kind: 'verification', ok: true, status_code: 200 },
      { kind: 'verification', ok: true, status_code: 200 },
    ]);
    // Two good probes lift the reliability estimate above its prior mean 0.9 (README, "Reputation").
    expect(d.metrics.success_rate_24h).toBeGreaterThan(0.9);
    expect(d.health.checks_24h).toBe(2);
    const [row] = await h.sql<{ next_health_check_at: Date | null; avg_latency_ms: number | null }>(
      'SELECT next_health_check_at, avg_latency_ms FROM skill_stats WHERE skill_id = $1',
      skill.skill_id,
    );
    expect(row?.next_health_check_at).not.toBeNull();
    expect(row?.avg_latency_ms).not.toBeNull();
    // and it is routed now
    const routed = await h.call(
      'POST',
      '/api/discover/route',
      { task: `translate text ${own}` },
      { 'x-api-key': key },
    );
    expect(routed.body.matches.map((m: { skill_id: string }) => m.skill_id)).toContain(skill.skill_id);
  });

  it('When the schemas declare draft 2020-12 with a format, then the skill passes and the generated input honours the format', async () => {
    skills.set('modern', { kind: 'healthy', respond: () => ({ ok: true, items: [1, 2] }) });
    const d = await registerAndSettle(
      buildSkill({
        endpoint: skills.url('modern'),
        input_schema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { q: { type: 'string', format: 'email' } },
          required: ['q'],
        },
        output_schema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { ok: { const: true }, items: { type: 'array', prefixItems: [{ type: 'integer' }] } },
          required: ['ok'],
        },
      }),
    );
    expect(stepStatuses(d)).toEqual([
      'endpoint_health_check:passed',
      'schema_validation:passed',
      'test_call:passed',
    ]);
    expect((skills.lastInput('modern') as { q: string }).q).toMatch(/@/);
  });
});

describe('Verification worker: each step failing', () => {
  it('When GET answers 500 (endpoint_health_check), then verification_failed with the reason, and test_call is skipped', async () => {
    skills.set('err500', { kind: 'status', status: 500 });
    const d = await registerAndSettle(buildSkill({ endpoint: skills.url('err500') }));
    expect(d.status).toBe('verification_failed');
    expect(stepStatuses(d)).toEqual([
      'endpoint_health_check:failed',
      'schema_validation:passed',
      'test_call:skipped',
    ]);
    expect(d.verification.reason).toMatch(/^endpoint_health_check: HTTP 500/);
    expect(skills.hits('err500').POST).toBe(0);
  });

  it('When the endpoint does not answer within the timeout (endpoint_health_check), then verification_failed naming the timeout', async () => {
    skills.set('slow', { kind: 'slow', delayMs: 4000, respond: translate });
    const t0 = Date.now();
    const d = await registerAndSettle(buildSkill({ endpoint: skills.url('slow') }));
    expect(d.status).toBe('verification_failed');
    expect(d.verification.reason).toBe('endpoint_health_check: no answer within 1500 ms');
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  it('When nothing listens on the endpoint port (endpoint_health_check), then verification_failed as unreachable', async () => {
    // A port that was just bound and released: nothing listens there.
    const d = await registerAndSettle(buildSkill({ endpoint: `http://127.0.0.1:${await freePort()}/skill` }));
    expect(d.status).toBe('verification_failed');
    expect(d.verification.reason).toMatch(/^endpoint_health_check: unreachable: ECONNREFUSED/);
  });

  it('When input_schema is not valid JSON Schema (schema_validation), then verification_failed naming it, and test_call is skipped', async () => {
    skills.set('badschema', { kind: 'healthy', respond: translate });
    const d = await registerAndSettle(
      buildSkill({ endpoint: skills.url('badschema'), input_schema: { type: 'strin' } }),
    );
    expect(d.status).toBe('verification_failed');
    expect(stepStatuses(d)).toEqual([
      'endpoint_health_check:passed',
      'schema_validation:failed',
      'test_call:skipped',
    ]);
    expect(d.verification.reason).toMatch(/^schema_validation: input_schema not a valid JSON Schema/);
    expect(skills.hits('badschema').POST).toBe(0);
  });

  it('When output_schema has an unresolvable $ref or an unknown $schema (schema_validation), then verification_failed naming output_schema', async () => {
    skills.set('badref', { kind: 'healthy', respond: translate });
    const d = await registerAndSettle(
      buildSkill({
        endpoint: skills.url('badref'),
        output_schema: { $ref: 'http://169.254.169.254/schema.json' },
      }),
    );
    expect(d.verification.reason).toMatch(/^schema_validation: output_schema cannot be compiled/);
    skills.set('baddraft', { kind: 'healthy', respond: translate });
    const d2 = await registerAndSettle(
      buildSkill({
        endpoint: skills.url('baddraft'),
        output_schema: { $schema: 'http://example.com/my-draft', type: 'object' },
      }),
    );
    expect(d2.verification.reason).toMatch(/^schema_validation: output_schema unsupported \$schema/);
  });

  it('When the answer does not match output_schema (test_call), then verification_failed with the ajv error', async () => {
    skills.set('wrong', { kind: 'healthy', respond: () => ({ translation: 42 }) });
    const d = await registerAndSettle(buildSkill({ endpoint: skills.url('wrong') }));
    expect(d.status).toBe('verification_failed');
    expect(stepStatuses(d)).toEqual([
      'endpoint_health_check:passed',
      'schema_validation:passed',
      'test_call:failed',
    ]);
    expect(d.verification.reason).toMatch(
      /^test_call: the response does not match output_schema: .*(translation|language)/,
    );
  });

  it('When the answer is not JSON (test_call), then verification_failed', async () => {
    skills.set('text', { kind: 'not_json' });
    const d = await registerAndSettle(buildSkill({ endpoint: skills.url('text') }));
    expect(d.verification.reason).toBe('test_call: the response is not JSON');
  });

  it('When POST fails with 500 while GET is fine (test_call), then verification_failed with the status', async () => {
    skills.set('postfail', {
      kind: 'healthy',
      respond: () => {
        throw new Error('boom');
      },
    });
    const d = await registerAndSettle(buildSkill({ endpoint: skills.url('postfail') }));
    expect(d.verification.reason).toMatch(/^test_call: HTTP 500 from POST/);
    const probes = await h.sql<{ ok: boolean }>(
      `SELECT ok FROM health_checks h JOIN skills s USING (skill_id) WHERE s.endpoint = $1 ORDER BY h.id`,
      skills.url('postfail'),
    );
    expect(probes).toEqual([{ ok: true }, { ok: false }]);
  });
});

describe('Verification: updates and revisions', () => {
  it('When an active skill is updated to an endpoint that answers wrongly, then it is verified again and fails', async () => {
    skills.set('v1', { kind: 'healthy', respond: translate });
    skills.set('v2', { kind: 'healthy', respond: () => ({}) });
    const skill = buildSkill({ endpoint: skills.url('v1') });
    expect((await registerAndSettle(skill)).status).toBe('active');
    const d = await registerAndSettle({ ...skill, endpoint: skills.url('v2') });
    expect(d.status).toBe('verification_failed');
    expect(skills.hits('v2').POST).toBe(1);
    expect(await h.sql('SELECT revision FROM skills WHERE skill_id = $1', skill.skill_id)).toEqual([
      { revision: 2 },
    ]);
  });

  it('When a skill is updated while its verification runs, then the stale result is discarded and the new revision is verified', async () => {
    const queue = h.service.verificationQueue;
    skills.set('race', { kind: 'healthy', respond: translate });
    const skill = buildSkill({ endpoint: skills.url('race') });
    await withWorkersStopped(h, async () => {
      await h.register(key, skill);
      const [job] = (await queue.claim(100, 60_000)).filter((j) => j.skillId === skill.skill_id);
      expect(job).toBeDefined();
      // claimed: a second claim (another replica) does not get it
      expect((await queue.claim(100, 60_000)).map((j) => j.skillId)).not.toContain(skill.skill_id);
      await h.register(key, { ...skill, description: 'An updated description of the translator.' });
      const applied = await queue.complete(
        job!,
        { passed: true, steps: [], reason: null, probes: [] },
        { healthIntervalMs: 60_000, conformanceDelayMs: 60_000 },
      );
      expect(applied).toBe(false);
      expect(
        await h.sql(
          'SELECT status, revision, verification_lease_until FROM skills WHERE skill_id = $1',
          skill.skill_id,
        ),
      ).toEqual([{ status: 'pending_verification', revision: 2, verification_lease_until: null }]);
    });
    // the restarted worker verifies revision 2
    const settled = await waitFor('revision 2 verified', async () => {
      const rows = await h.sql<{ status: string; revision: number }>(
        'SELECT status, revision FROM skills WHERE skill_id = $1',
        skill.skill_id,
      );
      return rows[0]?.status !== 'pending_verification' ? rows : undefined;
    });
    expect(settled).toEqual([{ status: 'active', revision: 2 }]);
    expect(skills.hits('race')).toEqual({ GET: 1, POST: 1 });
  });
});

describe('Verification: SSRF at check time', () => {
  let strict: Harness;
  beforeAll(async () => {
    // Same database, but a replica whose policy has no allowlist; its workers run only in the test.
    strict = await startHarness(
      'skill_router_verification_test',
      { ...WORKERS, WORKERS_ENABLED: 'false', SSRF_ALLOWLIST: '' },
      { resetDb: false },
    );
  });
  afterAll(() => strict.close());

  it('When the worker’s policy refuses a stored loopback endpoint, then endpoint_health_check fails as refused and no request is sent', async () => {
    skills.set('ssrf', { kind: 'healthy', respond: translate });
    const skill = buildSkill({ endpoint: skills.url('ssrf') });
    // Only the strict replica may verify it.
    await withWorkersStopped(h, async () => {
      expect((await h.register(key, skill)).status).toBe(201);
      await startWorkers(strict);
      try {
        const d = await waitFor('strict verification', async () => {
          const x = await detail(skill.skill_id);
          return x.status !== 'pending_verification' ? x : undefined;
        });
        expect(d.status).toBe('verification_failed');
        expect(d.verification.reason).toMatch(
          /^endpoint_health_check: endpoint refused: .*127\.0\.0\.1.*loopback/,
        );
        expect(skills.hits('ssrf')).toEqual({ GET: 0, POST: 0 });
      } finally {
        await stopWorkers(strict);
      }
    });
  });
});

describe('Verification across replicas', () => {
  let replica: Harness;
  beforeAll(async () => {
    replica = await startHarness(
      'skill_router_verification_test',
      { ...WORKERS, VERIFY_BATCH_SIZE: '3' },
      { resetDb: false },
    );
  });
  afterAll(() => replica.close());

  it('When two replicas run the worker, then each of 20 skills is verified exactly once', async () => {
    const batch = Array.from({ length: 20 }, (_, i) => {
      skills.set(`rep${i}`, { kind: 'healthy', respond: translate });
      return buildSkill({ endpoint: skills.url(`rep${i}`) });
    });
    await Promise.all(batch.map((s, i) => (i % 2 ? replica : h).register(key, s)));
    const settled = await waitFor('all 20 verified', async () => {
      const rows = await h.sql<{ status: string; verification_reason: string | null }>(
        `SELECT status, verification_reason FROM skills WHERE skill_id = ANY($1::text[]) AND status <> 'pending_verification'`,
        batch.map((s) => s.skill_id),
      );
      return rows.length === 20 ? rows : undefined;
    });
    expect(settled.filter((r) => r.status !== 'active')).toEqual([]);
    for (let i = 0; i < 20; i++) expect(skills.hits(`rep${i}`)).toEqual({ GET: 1, POST: 1 });
    const probes = await h.sql<{ n: bigint }>(
      `SELECT count(*) AS n FROM health_checks WHERE skill_id = ANY($1::text[]) AND kind = 'verification'`,
      batch.map((s) => s.skill_id),
    );
    expect(Number(probes[0]?.n)).toBe(40);
  });
});
