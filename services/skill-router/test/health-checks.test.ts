import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import { buildSkill, translate } from './support/factories';
import { startHarness, waitFor, type Harness } from './support/harness';

let h: Harness;
let key: string;
let skills: LocalSkills;

beforeAll(async () => {
  skills = await startLocalSkills();
  h = await startHarness('skill_router_health_test', {
    WORKERS_ENABLED: 'true',
    // The health loop runs once at start and then only when a test kicks it: one check per kick.
    HEALTH_CHECK_INTERVAL_MS: '3600000',
    HEALTH_POLL_INTERVAL_MS: '3600000',
    HEALTH_CHECK_TIMEOUT_MS: '300',
    HEALTH_FAILURES_TO_SUSPEND: '3',
    HEALTH_SUCCESSES_TO_RESUME: '2',
  });
  key = await h.createKey('provider');
});
afterAll(async () => {
  await h.close();
  await skills.close();
});

const status = async (id: string) =>
  (await h.sql<{ status: string }>('SELECT status FROM skills WHERE skill_id = $1', id))[0]?.status;

/** Makes the skill's next periodic check due now and runs exactly one pass of the health worker. */
async function checkOnce(skillId: string): Promise<{ ok: boolean; status_code: number | null }> {
  const before = await periodicChecks(skillId);
  await h.sql(
    "UPDATE skill_stats SET next_health_check_at = now() - interval '1 second' WHERE skill_id = $1",
    skillId,
  );
  const worker = h.service.workers?.health;
  if (!worker) throw new Error('the health worker is not running');
  // The claim skips a row another statement holds (the verification worker refreshing the new
  // skill's metrics): kick until the check is recorded. A claimed skill is next due in an hour, so a
  // further kick cannot add a second check.
  const after = await waitFor('a periodic health check', async () => {
    await worker.kick();
    const checks = await periodicChecks(skillId);
    return checks.length > before.length && checks;
  });
  expect(after).toHaveLength(before.length + 1);
  const latest = after[0];
  if (!latest) throw new Error('no check recorded');
  return latest;
}

/** The skill's periodic checks, newest first. */
const periodicChecks = (skillId: string) =>
  h.sql<{ ok: boolean; status_code: number | null }>(
    `SELECT ok, status_code FROM health_checks WHERE skill_id = $1 AND kind = 'periodic' ORDER BY id DESC`,
    skillId,
  );

describe('Periodic health checks', () => {
  it('When an active skill fails its health checks, then it stays active after 2 failures in a row and is suspended after the 3rd, its success rate drops and it is no longer routed; it is active again after exactly 2 successes', async () => {
    skills.set('flaky', { kind: 'healthy', respond: translate });
    const skill = buildSkill({
      endpoint: skills.url('flaky'),
      name: 'Flaky yak translator',
      description: 'Translates yak herding manuals.',
    });
    await h.register(key, skill);
    await waitFor('active', async () => (await status(skill.skill_id)) === 'active');
    expect(await checkOnce(skill.skill_id)).toEqual({ ok: true, status_code: 200 });

    skills.set('flaky', { kind: 'status', status: 503 });
    expect(await checkOnce(skill.skill_id)).toEqual({ ok: false, status_code: 503 });
    expect(await checkOnce(skill.skill_id)).toEqual({ ok: false, status_code: 503 });
    expect(await status(skill.skill_id)).toBe('active');
    expect(await checkOnce(skill.skill_id)).toEqual({ ok: false, status_code: 503 });
    expect(await status(skill.skill_id)).toBe('suspended');
    const detail = await h.call('GET', `/api/discover/skills/${skill.skill_id}`);
    expect(detail.body.status).toBe('suspended');
    expect(detail.body.metrics.success_rate_24h).toBeLessThan(1);
    const [stored] = await h.sql<{ success_rate_24h: number }>(
      'SELECT success_rate_24h FROM skill_stats WHERE skill_id = $1',
      skill.skill_id,
    );
    expect(stored?.success_rate_24h).toBeLessThan(1);
    const routed = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'yak herding manuals' },
      { 'x-api-key': key },
    );
    expect(routed.body.total_matches).toBe(0);

    skills.set('flaky', { kind: 'healthy', respond: translate });
    expect(await checkOnce(skill.skill_id)).toEqual({ ok: true, status_code: 200 });
    expect(await status(skill.skill_id)).toBe('suspended');
    expect(await checkOnce(skill.skill_id)).toEqual({ ok: true, status_code: 200 });
    expect(await status(skill.skill_id)).toBe('active');
    const again = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'yak herding manuals' },
      { 'x-api-key': key },
    );
    expect(again.body.matches.map((m: { skill_id: string }) => m.skill_id)).toEqual([skill.skill_id]);
  });

  it('When health checks succeed, then avg_latency_ms reflects the measured latency', async () => {
    skills.set('laggy', { kind: 'healthy', delayMs: 120, respond: translate });
    const skill = buildSkill({ endpoint: skills.url('laggy') });
    await h.register(key, skill);
    await waitFor('active', async () => (await status(skill.skill_id)) === 'active', 15_000);
    await checkOnce(skill.skill_id);
    await checkOnce(skill.skill_id);
    const detail = await h.call('GET', `/api/discover/skills/${skill.skill_id}`);
    expect(detail.body.metrics.avg_latency_ms).toBeGreaterThanOrEqual(120);
    // Only good checks: the reliability estimate rises above its prior mean 0.9 (README, "Reputation").
    expect(detail.body.metrics.success_rate_24h).toBeGreaterThan(0.9);
  });
});
