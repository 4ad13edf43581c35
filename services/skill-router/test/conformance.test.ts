import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import { countConformance, jitteredDelay, statusAfterConformance } from '../src/domain/conformance';
import { buildSkill, translate, uniqueWord } from './support/factories';
import { startHarness, waitFor, type Harness } from './support/harness';

jest.setTimeout(120_000);

let h: Harness;
let key: string;
let skills: LocalSkills;

beforeAll(async () => {
  skills = await startLocalSkills();
  h = await startHarness('skill_router_conformance_test', {
    WORKERS_ENABLED: 'true',
    // The conformance loop runs once at start and then only when a test kicks it; a called skill is
    // next due in an hour, so one kick makes at most one call per due skill.
    CONFORMANCE_INTERVAL_MS: '3600000',
    CONFORMANCE_POLL_INTERVAL_MS: '3600000',
    CONFORMANCE_FAILURES_TO_DEGRADE: '2',
    CONFORMANCE_SUCCESSES_TO_RECOVER: '2',
    HEALTH_CHECK_INTERVAL_MS: '3600000',
    HEALTH_POLL_INTERVAL_MS: '3600000',
    MAX_RESPONSE_BYTES: '4096',
  });
  key = await h.createKey('provider');
});
afterAll(async () => {
  await h?.close();
  await skills?.close();
});

interface ConformanceRow {
  status: string;
  conformance_failures: number;
  conformance_successes: number;
  last_conformance_error: string | null;
  last_conformance_at: Date | null;
  conformance_lease_until: Date | null;
}

const row = async (id: string): Promise<ConformanceRow> => {
  const [r] = await h.sql<ConformanceRow>(
    `SELECT s.status, st.conformance_failures, st.conformance_successes, st.last_conformance_error,
            st.last_conformance_at, st.conformance_lease_until
       FROM skills s JOIN skill_stats st USING (skill_id) WHERE s.skill_id = $1`,
    id,
  );
  if (!r) throw new Error(`no skill ${id}`);
  return r;
};

/** Makes the skill's conformance call due now and runs exactly one call through the worker. */
async function callOnce(skillId: string): Promise<ConformanceRow> {
  const before = (await row(skillId)).last_conformance_at?.getTime() ?? 0;
  await h.sql(
    "UPDATE skill_stats SET next_conformance_at = now() - interval '1 second' WHERE skill_id = $1",
    skillId,
  );
  const worker = h.service.workers?.conformance;
  if (!worker) throw new Error('the conformance worker is not running');
  return waitFor('a conformance call', async () => {
    await worker.kick();
    const r = await row(skillId);
    return (r.last_conformance_at?.getTime() ?? 0) > before && r;
  });
}

async function activeSkill(name: string, word: string): Promise<string> {
  skills.set(name, { kind: 'healthy', respond: translate });
  const skill = buildSkill({ endpoint: skills.url(name), description: `Translates ${word} pamphlets.` });
  await h.register(key, skill);
  await waitFor('active', async () => (await row(skill.skill_id)).status === 'active', 30_000);
  return skill.skill_id;
}

const routeIds = async (task: string): Promise<string[]> => {
  const res = await h.call('POST', '/api/discover/route', { task }, { 'x-api-key': key });
  expect(res.status).toBe(200);
  return (res.body.matches as { skill_id: string }[]).map((m) => m.skill_id);
};

describe('Conformance calls', () => {
  it('When a verified skill starts answering outside its output_schema, then it is degraded after 2 such answers and leaves routing, and it is active and routed again after 2 conforming answers', async () => {
    const word = uniqueWord();
    const id = await activeSkill('drift', word);
    const [scheduled] = await h.sql<{ next_conformance_at: Date }>(
      'SELECT next_conformance_at FROM skill_stats WHERE skill_id = $1',
      id,
    );
    // The first call is scheduled one jittered interval (an hour ± 20 %) after activation.
    const inMs = scheduled!.next_conformance_at.getTime() - Date.now();
    expect(inMs).toBeGreaterThan(0.75 * 3_600_000);
    expect(inMs).toBeLessThan(1.25 * 3_600_000);

    expect(await callOnce(id)).toMatchObject({ status: 'active', conformance_successes: 1 });
    const postsBefore = skills.hits('drift').POST;

    skills.set('drift', { kind: 'healthy', respond: () => ({ translation: 42 }) });
    expect(await callOnce(id)).toMatchObject({ status: 'active', conformance_failures: 1 });
    const degraded = await callOnce(id);
    expect(degraded).toMatchObject({ status: 'degraded', conformance_failures: 2, conformance_successes: 0 });
    expect(degraded.last_conformance_error).toMatch(/translation/);
    expect(skills.hits('drift').POST).toBe(postsBefore + 2);
    await waitFor('out of routing', async () => (await routeIds(word)).length === 0);
    const detail = await h.call('GET', `/api/discover/skills/${id}`);
    expect(detail.body).toMatchObject({
      status: 'degraded',
      conformance: { consecutive_failures: 2, last_error: expect.stringMatching(/translation/) },
    });
    const listed = await h.call('GET', `/api/discover/skills?search=${word}`);
    expect(listed.body.total).toBe(0);
    // Health checks go on for a degraded skill (its metrics stay current) and leave it degraded.
    await h.sql(
      "UPDATE skill_stats SET next_health_check_at = now() - interval '1 second' WHERE skill_id = $1",
      id,
    );
    await waitFor('a periodic health check', async () => {
      await h.service.workers?.health.kick();
      const checks = await h.sql(`SELECT 1 FROM health_checks WHERE skill_id = $1 AND kind = 'periodic'`, id);
      return checks.length === 1;
    });
    expect((await row(id)).status).toBe('degraded');

    skills.set('drift', { kind: 'healthy', respond: translate });
    expect(await callOnce(id)).toMatchObject({ status: 'degraded', conformance_successes: 1 });
    expect(await callOnce(id)).toMatchObject({
      status: 'active',
      conformance_successes: 2,
      conformance_failures: 0,
      last_conformance_error: null,
    });
    await waitFor('routed again', async () => (await routeIds(word)).includes(id));
  });

  it('When a call gets no answer to judge (503, 429, a timeout), then it is inconclusive: the runs and the status stay', async () => {
    const id = await activeSkill('busy', uniqueWord());
    skills.set('busy', { kind: 'healthy', respond: () => ({ translation: 42 }) });
    expect(await callOnce(id)).toMatchObject({ conformance_failures: 1 });
    for (const behaviour of [
      { kind: 'status' as const, status: 503 },
      { kind: 'status' as const, status: 429 },
      { kind: 'slow' as const, delayMs: 3000, respond: translate },
    ]) {
      skills.set('busy', behaviour);
      expect(await callOnce(id)).toMatchObject({ status: 'active', conformance_failures: 1 });
    }
    // A 4xx other than 429 is an answer: it does not conform.
    skills.set('busy', { kind: 'status', status: 400 });
    expect(await callOnce(id)).toMatchObject({
      status: 'degraded',
      conformance_failures: 2,
      last_conformance_error: expect.stringMatching(/HTTP 400/),
    });
  });

  it('When a skill answers with hostile replies (not JSON, larger than MAX_RESPONSE_BYTES, nested deep), then they count as non-conforming and the service keeps answering', async () => {
    const id = await activeSkill('hostile-reply', uniqueWord());
    skills.set('hostile-reply', { kind: 'not_json' });
    expect(await callOnce(id)).toMatchObject({ conformance_failures: 1 });
    skills.set('hostile-reply', {
      kind: 'healthy',
      respond: () => ({ translation: 'x'.repeat(10_000), language: 'fr' }),
    });
    const big = await callOnce(id);
    expect(big).toMatchObject({ status: 'degraded', conformance_failures: 2 });
    expect(big.last_conformance_error).toMatch(/larger than 4096 bytes/);
    let deep: unknown = 'x';
    for (let i = 0; i < 500; i++) deep = [deep];
    skills.set('hostile-reply', { kind: 'healthy', respond: () => ({ translation: deep, language: 'fr' }) });
    expect(await callOnce(id)).toMatchObject({ status: 'degraded', conformance_failures: 3 });
    expect((await h.call('GET', '/api/health')).status).toBe(200);
  });

  it('When a call is claimed, then no replica claims the same skill again until it is recorded or its lease expires', async () => {
    const id = await activeSkill('lease', uniqueWord());
    await h.sql(
      "UPDATE skill_stats SET next_conformance_at = now() - interval '1 second' WHERE skill_id = $1",
      id,
    );
    const checks = h.service.conformanceChecks;
    await waitFor('the claim', async () =>
      (await checks.claimDue(1000, 60_000)).some((j) => j.skillId === id),
    );
    expect((await checks.claimDue(1000, 60_000)).map((j) => j.skillId)).not.toContain(id);
    expect((await row(id)).conformance_lease_until).not.toBeNull();
    // The replica died: once the lease has expired another one claims it.
    await h.sql(
      "UPDATE skill_stats SET conformance_lease_until = now() - interval '1 second' WHERE skill_id = $1",
      id,
    );
    const [job] = (await checks.claimDue(1000, 60_000)).filter((j) => j.skillId === id);
    expect(job).toBeDefined();
    await checks.record(
      job!,
      { judged: true, error: null },
      3_600_000,
      (c) => countConformance(c, 'conforms'),
      (before) => before,
    );
    expect((await row(id)).conformance_lease_until).toBeNull();
    expect((await checks.claimDue(1000, 60_000)).map((j) => j.skillId)).not.toContain(id);
  });

  it('When an active skill has no conformance call scheduled (suspended when the schedule was introduced), then it is due at once', async () => {
    const id = await activeSkill('unscheduled', uniqueWord());
    await h.sql('UPDATE skill_stats SET next_conformance_at = NULL WHERE skill_id = $1', id);
    const called = await waitFor('a conformance call', async () => {
      await h.service.workers?.conformance.kick();
      const r = await row(id);
      return r.last_conformance_at !== null && r;
    });
    expect(called).toMatchObject({ status: 'active', conformance_successes: 1 });
    const [next] = await h.sql<{ next_conformance_at: Date | null }>(
      'SELECT next_conformance_at FROM skill_stats WHERE skill_id = $1',
      id,
    );
    expect(next?.next_conformance_at?.getTime()).toBeGreaterThan(Date.now());
  });

  it('When a skill is updated while a call is in flight, then the result of the old revision is not applied', async () => {
    const word = uniqueWord();
    const id = await activeSkill('moving', word);
    await h.sql(
      "UPDATE skill_stats SET next_conformance_at = now() - interval '1 second' WHERE skill_id = $1",
      id,
    );
    const checks = h.service.conformanceChecks;
    const job = await waitFor('the claim', async () =>
      (await checks.claimDue(1000, 60_000)).find((j) => j.skillId === id),
    );
    const skill = buildSkill({
      skill_id: id,
      endpoint: skills.url('moving'),
      description: `Now ${word} leaflets.`,
    });
    expect((await h.register(key, skill)).status).toBe(200);
    const applied = await checks.record(
      job,
      { judged: true, error: 'bad' },
      3_600_000,
      () => ({ failures: 99, successes: 0 }),
      () => 'degraded',
    );
    expect(applied).toBeNull();
    expect(await row(id)).toMatchObject({ conformance_failures: 0, conformance_lease_until: null });
  });
});

describe('Conformance rules', () => {
  it('When verdicts arrive, then runs count judged answers only and the status follows the thresholds', () => {
    const t = { failuresToDegrade: 2, successesToRecover: 3 };
    expect(countConformance({ failures: 1, successes: 0 }, 'inconclusive')).toEqual({
      failures: 1,
      successes: 0,
    });
    expect(countConformance({ failures: 1, successes: 0 }, 'nonconforming')).toEqual({
      failures: 2,
      successes: 0,
    });
    expect(countConformance({ failures: 2, successes: 0 }, 'conforms')).toEqual({
      failures: 0,
      successes: 1,
    });
    expect(statusAfterConformance('active', { failures: 1, successes: 0 }, t)).toBe('active');
    expect(statusAfterConformance('active', { failures: 2, successes: 0 }, t)).toBe('degraded');
    expect(statusAfterConformance('degraded', { failures: 0, successes: 2 }, t)).toBe('degraded');
    expect(statusAfterConformance('degraded', { failures: 0, successes: 3 }, t)).toBe('active');
    for (const other of ['suspended', 'pending_verification', 'verification_failed'] as const)
      expect(statusAfterConformance(other, { failures: 9, successes: 9 }, t)).toBe(other);
  });

  it('When the next call is scheduled, then the jitter keeps it within the stated spread', () => {
    expect(jitteredDelay({ intervalMs: 1000, jitterPercent: 20 }, 0)).toBe(800);
    expect(jitteredDelay({ intervalMs: 1000, jitterPercent: 20 }, 0.5)).toBe(1000);
    expect(jitteredDelay({ intervalMs: 1000, jitterPercent: 20 }, 0.999999)).toBe(1200);
    expect(jitteredDelay({ intervalMs: 1000, jitterPercent: 0 }, 0.3)).toBe(1000);
    expect(jitteredDelay({ intervalMs: 1, jitterPercent: 90 }, 0)).toBe(1);
  });
});
