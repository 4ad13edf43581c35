import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
let key: string;

beforeAll(async () => {
  h = await startHarness('skill_router_reports_test', {
    REPORT_LIMIT_PER_KEY_SKILL: '5',
    REPORT_LIMIT_WINDOW_SECONDS: '600',
  });
  key = await establishedKey('reporter');
});
afterAll(() => h.close());

async function activeSkill(overrides: Parameters<typeof buildSkill>[0] = {}): Promise<string> {
  const skill = buildSkill(overrides);
  expect((await h.register(key, skill)).status).toBe(201);
  await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = $1`, skill.skill_id);
  await h.reloadRouting();
  return skill.skill_id;
}

/**
 * A key whose unpaid reports weigh 1 (README, "Reputation"): 30 days old, routed on 7 days, in a
 * cohort of its own (keys made here all come from 127.0.0.1 today, which would make them one reporter).
 */
async function establishedKey(name: string): Promise<string> {
  const apiKey = await h.createKey(name);
  await h.sql(
    `UPDATE api_keys SET created_at = now() - interval '30 days', first_routed_at = now(), routed_days = 7,
            cohort = 'own-' || name WHERE name = $1`,
    name,
  );
  return apiKey;
}

/** The reliability estimate after full-weight observations (prior 0.9 worth 5 observations). */
const estimate = (successes: number, observations: number) => (4.5 + successes) / (5 + observations);

const report = (body: unknown, apiKey = key) =>
  h.call('POST', '/api/discover/report', body, { 'x-api-key': apiKey });

describe('POST /api/discover/report', () => {
  it('When a success with latency and satisfaction is reported, then it is stored under the key and feeds calls_30d, latency, rating and popularity', async () => {
    const id = await activeSkill();
    const res = await report({
      skill_id: id,
      caller: 'agent-7',
      call_result: 'success',
      latency_ms: 240,
      satisfaction: 5,
      notes: 'fast',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, counted: true, weight: 1 });
    const [row] = await h.sql<Record<string, unknown>>(
      'SELECT caller, call_result, latency_ms, satisfaction, notes, api_key_id, counted, weight FROM call_reports WHERE skill_id = $1',
      id,
    );
    const [k] = await h.sql<{ id: string }>('SELECT id FROM api_keys WHERE name = $1', 'reporter');
    expect(row).toEqual({
      caller: 'agent-7',
      call_result: 'success',
      latency_ms: 240,
      satisfaction: 5,
      notes: 'fast',
      api_key_id: k?.id,
      counted: true,
      weight: 1,
    });
    const [skill] = await h.sql<Record<string, number>>(
      'SELECT calls_30d, rating_sum, rating_count, avg_latency_ms, success_rate_24h, popularity FROM skill_stats WHERE skill_id = $1',
      id,
    );
    expect(skill).toMatchObject({
      calls_30d: 1,
      rating_sum: 5,
      rating_count: 1,
      avg_latency_ms: 240,
    });
    // A report of a moment ago has decayed by a hair: compare to 4 decimals.
    expect(skill?.success_rate_24h).toBeCloseTo(estimate(1, 1), 4);
    expect(skill?.popularity).toBeCloseTo(
      0.5 * (Math.log10(2) / Math.log10(10_001)) + 0.5 * (((5 + 15) / 6 - 1) / 4),
      9,
    );
    const detail = await h.call('GET', `/api/discover/skills/${id}`);
    expect(detail.body.metrics).toMatchObject({
      calls_30d: 1,
      rating: 5,
      ratings_30d: 1,
      avg_latency_ms: 240,
      success_rate_24h: Math.round(estimate(1, 1) * 1e4) / 1e4,
    });
  });

  it.each(['failure', 'timeout', 'error'])(
    'When a %s is reported, then it counts against the reliability estimate (success_rate_24h)',
    async (result) => {
      const id = await activeSkill();
      await report({ skill_id: id, caller: 'a', call_result: 'success' });
      await report(
        { skill_id: id, caller: 'a', call_result: result },
        await establishedKey(`second-${result}`),
      );
      const [skill] = await h.sql<{ success_rate_24h: number; calls_30d: number }>(
        'SELECT success_rate_24h, calls_30d FROM skill_stats WHERE skill_id = $1',
        id,
      );
      expect(skill?.calls_30d).toBe(2);
      expect(skill?.success_rate_24h).toBeCloseTo(estimate(1, 2), 4);
    },
  );

  it('When reports make one of two identical skills unreliable, then routing ranks the other first', async () => {
    const a = await activeSkill({
      skill_id: 'rep-a',
      name: 'Marmot OCR',
      description: 'Reads marmot receipts with OCR.',
      capabilities: ['marmot'],
    });
    const b = await activeSkill({
      skill_id: 'rep-b',
      name: 'Marmot OCR',
      description: 'Reads marmot receipts with OCR.',
      capabilities: ['marmot'],
    });
    const before = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'marmot receipts' },
      { 'x-api-key': key },
    );
    expect(before.body.matches.map((m: { skill_id: string }) => m.skill_id)).toEqual([a, b]);
    await report({ skill_id: a, caller: 'x', call_result: 'failure' });
    await report({ skill_id: b, caller: 'x', call_result: 'success' });
    const after = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'marmot receipts' },
      { 'x-api-key': key },
    );
    expect(after.body.matches.map((m: { skill_id: string }) => m.skill_id)).toEqual([b, a]);
    expect(after.body.matches[1].metrics).toMatchObject({ success_rate_24h: 0.75, calls_30d: 1 });
  });

  it.each([
    ['an unknown call_result', 'body.call_result', { call_result: 'ok' }],
    ['satisfaction 0', 'body.satisfaction', { satisfaction: 0 }],
    ['satisfaction 6', 'body.satisfaction', { satisfaction: 6 }],
    ['satisfaction 2.5', 'body.satisfaction', { satisfaction: 2.5 }],
    ['a negative latency', 'body.latency_ms', { latency_ms: -5 }],
    ['no caller', 'body.caller', { caller: undefined }],
    ['no skill_id', 'body.skill_id', { skill_id: undefined }],
    ['notes over 2000 characters', 'body.notes', { notes: 'n'.repeat(2001) }],
  ])(
    'When the report has %s, then 400 invalid_request naming %s and nothing is stored',
    async (_what, field, override) => {
      const id = await activeSkill();
      const res = await report({ skill_id: id, caller: 'c', call_result: 'success', ...override });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.issues.map((d: { path: string }) => d.path)).toContain(field);
      expect(await h.sql('SELECT 1 FROM call_reports WHERE skill_id = $1', id)).toEqual([]);
    },
  );

  it('When the body is malformed JSON, then 400 invalid_json', async () => {
    const res = await h.call('POST', '/api/discover/report', '{"skill_id"', { 'x-api-key': key });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  it('When the skill does not exist, then 404 not_found', async () => {
    const res = await report({ skill_id: 'ghost', caller: 'c', call_result: 'success' });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });
});

describe('POST /api/discover/report: flood limit per key and skill', () => {
  it('When one key reports a skill more than 5 times in the window, then 429 rate_limited with Retry-After, nothing more is stored, only the first of the hour counted, and other keys and skills are unaffected', async () => {
    const id = await activeSkill();
    const other = await activeSkill();
    for (let i = 0; i < 5; i++)
      expect((await report({ skill_id: id, caller: 'flood', call_result: 'failure' })).status).toBe(200);
    const refused = await report({ skill_id: id, caller: 'flood', call_result: 'failure' });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', requestId: expect.any(String) });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect(await h.sql('SELECT count(*)::int AS n FROM call_reports WHERE skill_id = $1', id)).toEqual([
      { n: 5 },
    ]);
    expect(await h.sql('SELECT counted FROM call_reports WHERE skill_id = $1 ORDER BY id', id)).toEqual([
      { counted: true },
      { counted: false },
      { counted: false },
      { counted: false },
      { counted: false },
    ]);
    expect(await h.sql('SELECT calls_30d FROM skill_stats WHERE skill_id = $1', id)).toEqual([
      { calls_30d: 1 },
    ]);

    expect((await report({ skill_id: other, caller: 'flood', call_result: 'success' })).status).toBe(200);
    const secondKey = await h.createKey('another-reporter');
    expect((await report({ skill_id: id, caller: 'fair', call_result: 'success' }, secondKey)).status).toBe(
      200,
    );
  });
});

describe('reports from keys that cost nothing to make', () => {
  async function metricsOf(id: string): Promise<Record<string, number> | undefined> {
    const [row] = await h.sql<Record<string, number>>(
      'SELECT calls_30d, rating_count, success_rate_24h FROM skill_stats WHERE skill_id = $1',
      id,
    );
    return row;
  }

  it('When a key younger than a day reports, then the report is kept but moves no metric', async () => {
    const id = await activeSkill();
    const before = await metricsOf(id);
    const fresh = await h.createKey('fresh-puppet');
    await h.sql("UPDATE api_keys SET first_routed_at = now() WHERE name = 'fresh-puppet'");
    const res = await report({ skill_id: id, caller: 'x', call_result: 'failure', satisfaction: 1 }, fresh);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, counted: false, weight: 0 });
    const [row] = await h.sql<{ counted: boolean }>(
      'SELECT counted FROM call_reports WHERE skill_id = $1',
      id,
    );
    expect(row).toEqual({ counted: false });
    expect(await metricsOf(id)).toEqual(before);
    const detail = await h.call('GET', `/api/discover/skills/${id}`);
    expect(detail.body.metrics).toMatchObject({ calls_30d: 0, ratings_30d: 0 });
  });

  it('When a day-old key that never routed a call reports, then nothing moves; once it routed a call, its reports count with a small weight', async () => {
    const id = await activeSkill({
      capabilities: ['translate text'],
      description: 'translates text between languages',
    });
    const puppet = await h.createKey('old-puppet');
    await h.sql("UPDATE api_keys SET created_at = now() - interval '2 days' WHERE name = 'old-puppet'");
    await report({ skill_id: id, caller: 'x', call_result: 'failure', satisfaction: 1 }, puppet);
    expect(await metricsOf(id)).toMatchObject({ calls_30d: 0, rating_count: 0 });

    const routed = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'translate this text' },
      { 'x-api-key': puppet },
    );
    expect(routed.status).toBe(200);
    expect(routed.body.matches.length).toBeGreaterThan(0);
    const counted = await report(
      { skill_id: id, caller: 'x', call_result: 'failure', satisfaction: 4 },
      puppet,
    );
    // Two days old, routed on one day: (2/14)·(1/7) of a full report.
    expect(counted.body).toMatchObject({ ok: true, counted: true });
    expect(counted.body.weight).toBeCloseTo(2 / 14 / 7, 3);
    // It moves the reliability estimate by its weight; calls, ratings and latency take full-weight reports only.
    const after = await metricsOf(id);
    expect(after).toMatchObject({ calls_30d: 0, rating_count: 0 });
    expect(after?.success_rate_24h).toBeCloseTo(4.5 / (5 + 2 / 14 / 7), 3);
  });
});

describe('one counted report per reporter, skill and hour', () => {
  const countedOf = (id: string) =>
    h.sql<{ counted: boolean; weight: number }>(
      'SELECT counted, weight FROM call_reports WHERE skill_id = $1 ORDER BY id',
      id,
    );

  it('When two keys of one cohort (created from one /24 on one day) report a skill in the same hour, then only the first counts; a key of another cohort counts', async () => {
    const id = await activeSkill();
    const a = await establishedKey('cohort-a1');
    const b = await establishedKey('cohort-a2');
    const c = await establishedKey('cohort-b1');
    await h.sql(`UPDATE api_keys SET cohort = 'shared-cohort' WHERE name IN ('cohort-a1', 'cohort-a2')`);
    expect((await report({ skill_id: id, caller: 'x', call_result: 'failure' }, a)).body).toEqual({
      ok: true,
      counted: true,
      weight: 1,
    });
    expect((await report({ skill_id: id, caller: 'x', call_result: 'failure' }, b)).body).toEqual({
      ok: true,
      counted: false,
      weight: 0,
    });
    expect((await report({ skill_id: id, caller: 'x', call_result: 'failure' }, c)).body.counted).toBe(true);
    expect(await countedOf(id)).toEqual([
      { counted: true, weight: 1 },
      { counted: false, weight: 0 },
      { counted: true, weight: 1 },
    ]);
    const [stats] = await h.sql<{ calls_30d: number; success_rate_24h: number }>(
      'SELECT calls_30d, success_rate_24h FROM skill_stats WHERE skill_id = $1',
      id,
    );
    expect(stats?.calls_30d).toBe(2);
    expect(stats?.success_rate_24h).toBeCloseTo(estimate(0, 2), 4);
  });

  it('When one cohort sends 20 reports about a skill at the same moment from 4 keys, then exactly one counts', async () => {
    const id = await activeSkill();
    const keys = await Promise.all([1, 2, 3, 4].map((i) => establishedKey(`burst-${i}`)));
    await h.sql(`UPDATE api_keys SET cohort = 'burst-cohort' WHERE name LIKE 'burst-%'`);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        report({ skill_id: id, caller: 'burst', call_result: 'failure' }, keys[i % 4]),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(answers.filter((a) => a.body.counted)).toHaveLength(1);
    expect((await countedOf(id)).filter((r) => r.counted)).toHaveLength(1);
    expect(await h.sql('SELECT calls_30d FROM skill_stats WHERE skill_id = $1', id)).toEqual([
      { calls_30d: 1 },
    ]);
  });

  it('When the hour of a counted report has passed, then the same key counts again', async () => {
    const id = await activeSkill();
    const k = await establishedKey('hourly');
    expect((await report({ skill_id: id, caller: 'x', call_result: 'success' }, k)).body.counted).toBe(true);
    expect((await report({ skill_id: id, caller: 'x', call_result: 'success' }, k)).body.counted).toBe(false);
    // The slots name their UTC hour: move this skill's into the previous hour.
    await h.sql(
      `UPDATE report_slots SET slot = $1 || '|' || to_char((now() - interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24')
              || '|' || split_part(slot, '|', 3) WHERE slot LIKE $1 || '|%'`,
      id,
    );
    expect((await report({ skill_id: id, caller: 'x', call_result: 'success' }, k)).body.counted).toBe(true);
    expect((await countedOf(id)).map((r) => r.counted)).toEqual([true, false, true]);
  });

  it('When a key routes with matches several times in a day, then its routed days grow by one', async () => {
    await activeSkill({ capabilities: ['walrus census'], description: 'counts walruses on ice floes' });
    const k = await h.createKey('router-days');
    for (let i = 0; i < 3; i++) {
      const routed = await h.call(
        'POST',
        '/api/discover/route',
        { task: 'walrus census' },
        { 'x-api-key': k },
      );
      expect(routed.body.matches.length).toBeGreaterThan(0);
    }
    expect(
      await h.sql(
        "SELECT routed_days, last_routed_on = (now() AT TIME ZONE 'UTC')::date AS today FROM api_keys WHERE name = 'router-days'",
      ),
    ).toEqual([{ routed_days: 1, today: true }]);
  });
});
