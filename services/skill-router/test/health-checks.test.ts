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
    HEALTH_CHECK_INTERVAL_MS: '50',
    HEALTH_POLL_INTERVAL_MS: '20',
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

describe('Periodic health checks', () => {
  it('When an active skill keeps failing its health checks, then it is suspended after 3 failures in a row, its success rate drops, and it is no longer routed; when it recovers it is active again', async () => {
    skills.set('flaky', { kind: 'healthy', respond: translate });
    const skill = buildSkill({
      endpoint: skills.url('flaky'),
      name: 'Flaky yak translator',
      description: 'Translates yak herding manuals.',
    });
    await h.register(key, skill);
    await waitFor('active', async () => (await status(skill.skill_id)) === 'active');
    await waitFor(
      'a periodic check',
      async () =>
        (await h.sql(`SELECT 1 FROM health_checks WHERE skill_id = $1 AND kind = 'periodic'`, skill.skill_id))
          .length > 0,
    );

    skills.set('flaky', { kind: 'status', status: 503 });
    await waitFor('suspended', async () => (await status(skill.skill_id)) === 'suspended');
    const checks = await h.sql<{ ok: boolean; status_code: number | null }>(
      `SELECT ok, status_code FROM health_checks WHERE skill_id = $1 AND kind = 'periodic' ORDER BY id DESC LIMIT 3`,
      skill.skill_id,
    );
    expect(checks).toEqual([
      { ok: false, status_code: 503 },
      { ok: false, status_code: 503 },
      { ok: false, status_code: 503 },
    ]);
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
    await waitFor('active again', async () => (await status(skill.skill_id)) === 'active');
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
    await waitFor(
      'two periodic checks',
      async () =>
        (await h.sql(`SELECT 1 FROM health_checks WHERE skill_id = $1 AND kind = 'periodic'`, skill.skill_id))
          .length >= 2,
    );
    const detail = await h.call('GET', `/api/discover/skills/${skill.skill_id}`);
    expect(detail.body.metrics.avg_latency_ms).toBeGreaterThanOrEqual(120);
    expect(detail.body.metrics.success_rate_24h).toBe(1);
  });
});
