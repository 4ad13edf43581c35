import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
let key: string;

beforeAll(async () => {
  h = await startHarness('skill_router_reports_test', {
    REPORT_LIMIT_PER_KEY_SKILL: '5',
    REPORT_LIMIT_WINDOW_SECONDS: '600',
  });
  key = await h.createKey('reporter');
  // An established key: a day old, and it has routed calls (only such keys move the metrics).
  await h.sql(
    "UPDATE api_keys SET created_at = now() - interval '2 days', first_routed_at = now() WHERE name = 'reporter'",
  );
});
afterAll(() => h.close());

async function activeSkill(overrides: Parameters<typeof buildSkill>[0] = {}): Promise<string> {
  const skill = buildSkill(overrides);
  expect((await h.register(key, skill)).status).toBe(201);
  await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = $1`, skill.skill_id);
  await h.reloadRouting();
  return skill.skill_id;
}

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
    expect(res.body).toEqual({ ok: true });
    const [row] = await h.sql<Record<string, unknown>>(
      'SELECT caller, call_result, latency_ms, satisfaction, notes, api_key_id FROM call_reports WHERE skill_id = $1',
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
      success_rate_24h: 1,
    });
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
      success_rate_24h: 1,
    });
  });

  it.each(['failure', 'timeout', 'error'])(
    'When a %s is reported, then it counts against success_rate_24h',
    async (result) => {
      const id = await activeSkill();
      await report({ skill_id: id, caller: 'a', call_result: 'success' });
      await report({ skill_id: id, caller: 'a', call_result: result });
      const [skill] = await h.sql<{ success_rate_24h: number; calls_30d: number }>(
        'SELECT success_rate_24h, calls_30d FROM skill_stats WHERE skill_id = $1',
        id,
      );
      expect(skill).toEqual({ success_rate_24h: 0.5, calls_30d: 2 });
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
    expect(after.body.matches[1].metrics).toMatchObject({ success_rate_24h: 0, calls_30d: 1 });
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
  it('When one key reports a skill more than 5 times in the window, then 429 rate_limited with Retry-After, nothing more is stored, and other keys and skills are unaffected', async () => {
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
    expect(await h.sql('SELECT calls_30d FROM skill_stats WHERE skill_id = $1', id)).toEqual([
      { calls_30d: 5 },
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
    expect(res.body).toEqual({ ok: true });
    const [row] = await h.sql<{ counted: boolean }>(
      'SELECT counted FROM call_reports WHERE skill_id = $1',
      id,
    );
    expect(row).toEqual({ counted: false });
    expect(await metricsOf(id)).toEqual(before);
    const detail = await h.call('GET', `/api/discover/skills/${id}`);
    expect(detail.body.metrics).toMatchObject({ calls_30d: 0, ratings_30d: 0 });
  });

  it('When a day-old key that never routed a call reports, then nothing moves; once it routed a call, its reports count', async () => {
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
    await report({ skill_id: id, caller: 'x', call_result: 'success', satisfaction: 4 }, puppet);
    expect(await metricsOf(id)).toMatchObject({ calls_30d: 1, rating_count: 1 });
  });
});
