import {
  backfillDefinitionQuality,
  definitionQuality,
  QUALITY_MAX_NODES,
} from '../src/domain/definition-quality';
import { SCHEMA_MAX_DEPTH } from '../src/domain/schema-limits';
import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
let key: string;

beforeAll(async () => {
  h = await startHarness('skill_router_definition_quality_test');
  key = await h.createKey('quality');
});
afterAll(() => h.close());

/** A definition with nothing documented: no types, no descriptions, no examples, no error answer. */
const bare = (id: string) =>
  buildSkill({
    skill_id: id,
    description: 'Translates text.',
    input_schema: {},
    output_schema: {},
  });

/** The same skill documented well: described and typed parameters, examples and an error answer. */
const documented = (id: string) =>
  buildSkill({
    skill_id: id,
    description:
      'Translates a text into Spanish, French or German and answers the translation with its language; ' +
      'answers an error with a code when the language is not supported.',
    input_schema: {
      type: 'object',
      required: ['text', 'target_language'],
      properties: {
        text: { type: 'string', description: 'the text to translate', examples: ['Good morning'] },
        target_language: {
          type: 'string',
          enum: ['es', 'fr', 'de'],
          description: 'ISO 639-1 code of the language wanted',
          default: 'es',
        },
      },
    },
    output_schema: {
      type: 'object',
      examples: [{ translation: 'Buenos días', language: 'es' }],
      properties: {
        translation: { type: 'string', description: 'the translated text' },
        language: { type: 'string', description: 'the language of the translation' },
        error: { type: 'string', description: 'why the text was not translated' },
      },
    },
  });

const activate = async (...ids: string[]) => {
  await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = ANY($1::text[])`, ids);
  await h.reloadRouting();
};

describe('definitionQuality (pure)', () => {
  it('When a schema is far wider than registration allows, then the walk stops at its node budget and says so', () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 50_000; i++) properties[`p${i}`] = { type: 'string', description: 'd' };
    const wide = { type: 'object', properties };
    const quality = definitionQuality({ description: 'A skill.', input_schema: wide, output_schema: wide });
    expect(quality.parts.find((p) => p.part === 'parameters')?.explanation).toBe(
      `${QUALITY_MAX_NODES} of ${QUALITY_MAX_NODES} input parameters described (first ${QUALITY_MAX_NODES} schema nodes)`,
    );
  });

  it('When schemas hold odd values (arrays, nulls, numbers, non-object properties), then it scores without throwing', () => {
    for (const schema of [
      null,
      7,
      'x',
      [],
      [{}],
      { properties: [] },
      { properties: { a: 1, b: null } },
      { oneOf: 3 },
    ]) {
      const quality = definitionQuality({
        description: 'ten chars!',
        input_schema: schema,
        output_schema: schema,
      });
      expect(quality.score).toBeGreaterThanOrEqual(0);
      expect(quality.score).toBeLessThanOrEqual(100);
      expect(quality.score).toBe(quality.parts.reduce((sum, p) => sum + p.points, 0));
    }
  });
});

describe('The definition quality score in the directory', () => {
  // Three active translators that differ only in documentation; q-bare is the most popular.
  beforeAll(async () => {
    const mid = documented('q-mid');
    mid.output_schema = {};
    for (const skill of [bare('q-bare'), documented('q-documented'), mid])
      expect((await h.register(key, skill)).status).toBe(201);
    await activate('q-bare', 'q-documented', 'q-mid');
    await h.sql(`UPDATE skill_stats SET popularity = 0.9 WHERE skill_id = 'q-bare'`);
    await h.sql(`UPDATE skill_stats SET popularity = 0.5 WHERE skill_id = 'q-mid'`);
    await h.reloadRouting();
  });

  it('When a bare and a well-documented skill are registered, then their details show 2 and 100 with an explanation per part', async () => {
    const low = await h.call('GET', '/api/discover/skills/q-bare');
    expect(low.status).toBe(200);
    expect(low.body.quality).toEqual({
      score: 2,
      parts: [
        {
          part: 'description',
          points: 2,
          max_points: 10,
          explanation: 'description of 2 words (12 or more earn it in full)',
        },
        {
          part: 'parameters',
          points: 0,
          max_points: 30,
          explanation: 'input_schema names no parameters and has no description',
        },
        {
          part: 'examples',
          points: 0,
          max_points: 20,
          explanation: 'input_schema has no examples; output_schema has no examples',
        },
        {
          part: 'schema_completeness',
          points: 0,
          max_points: 25,
          explanation: expect.stringMatching(/^0 of 7 checks met; not met: input_schema declares its type/),
        },
        { part: 'error_documentation', points: 0, max_points: 15, explanation: 'no error answer documented' },
      ],
    });

    const high = await h.call('GET', '/api/discover/skills/q-documented');
    expect(high.body.quality.score).toBe(100);
    expect(high.body.quality.parts.map((p: { explanation: string }) => p.explanation)).toEqual([
      'description of 27 words (12 or more earn it in full)',
      '2 of 2 input parameters described',
      '2 of 2 input parameters with examples or defaults; output_schema has examples',
      '7 of 7 checks met',
      'output_schema declares an error answer',
    ]);
    // Stored on write, so that the listing sorts in SQL.
    expect(
      await h.sql(
        `SELECT skill_id, quality_score FROM skills WHERE skill_id IN ('q-bare', 'q-documented') ORDER BY skill_id`,
      ),
    ).toEqual([
      { skill_id: 'q-bare', quality_score: 2 },
      { skill_id: 'q-documented', quality_score: 100 },
    ]);
  });

  it('When a skill is updated, then its score follows the new definition', async () => {
    const half = documented('q-update');
    half.output_schema = { type: 'object', properties: { translation: { type: 'string' } } };
    await h.register(key, half);
    const before = (await h.call('GET', '/api/discover/skills/q-update')).body.quality;
    expect((await h.register(key, documented('q-update'))).status).toBe(200);
    const after = (await h.call('GET', '/api/discover/skills/q-update')).body.quality;
    expect(before.score).toBeLessThan(100);
    expect(after.score).toBe(100);
    expect(before.parts[4].explanation).toBe(
      'errors mentioned in prose only; output_schema declares no error answer',
    );
  });

  it('When the listing is sorted by quality, then best first (ties by popularity, then id); the default order is still popularity', async () => {
    const byQuality = await h.call('GET', '/api/discover/skills?category=translation&sort=quality');
    expect(byQuality.status).toBe(200);
    expect(byQuality.body.skills.map((s: { skill_id: string }) => s.skill_id)).toEqual([
      'q-documented',
      'q-mid',
      'q-bare',
    ]);
    const scores = byQuality.body.skills.map((s: { quality: { score: number } }) => s.quality.score);
    expect(scores[0]).toBe(100);
    expect(scores[1]).toBeGreaterThan(scores[2]);
    expect(byQuality.body.skills[2].quality.parts).toHaveLength(5);

    const byDefault = await h.call('GET', '/api/discover/skills?category=translation');
    expect(byDefault.body.skills.map((s: { skill_id: string }) => s.skill_id)).toEqual([
      'q-bare',
      'q-mid',
      'q-documented',
    ]);
  });

  it('When two skills differ only in documentation, then routing scores them the same (quality is not a routing factor)', async () => {
    const res = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'translate text', limit: 100 },
      { 'x-api-key': key },
    );
    expect(res.status).toBe(200);
    const score = (id: string) =>
      res.body.matches.find((m: { skill_id: string }) => m.skill_id === id)?.match_score as number;
    expect(score('q-bare')).toBeDefined();
    // Quality 2 and 100, the same task lexemes, price, chains and metrics: the same match_score.
    expect(score('q-documented')).toBe(score('q-bare'));
  });

  it('When sort has an unknown value, then 400 invalid_request on query.sort', async () => {
    const res = await h.call('GET', '/api/discover/skills?sort=best');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'invalid_request',
      details: { issues: [expect.objectContaining({ path: 'query.sort' })] },
    });
  });

  it('When hostile schemas at the registration limits are registered, then each is scored with a bounded walk and the service keeps answering', async () => {
    // As wide as 32 KiB allows: about 1,500 properties, each with a fan of anyOf branches.
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 1_200; i++) properties[`p${i}`] = { anyOf: [{}, {}] };
    const wide = { type: 'object', properties };
    // As deep as allowed, with a branch fan at every level.
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < SCHEMA_MAX_DEPTH / 2 - 1; i++)
      deep = { type: 'object', properties: { a: deep }, anyOf: [{}] };
    for (const [id, schema] of [
      ['q-wide', wide],
      ['q-deep', deep],
    ] as const) {
      const res = await h.register(
        key,
        buildSkill({ skill_id: id, input_schema: schema, output_schema: schema }),
      );
      expect(res.status).toBe(201);
      const detail = await h.call('GET', `/api/discover/skills/${id}`);
      expect(detail.body.quality.score).toEqual(expect.any(Number));
      expect(detail.body.quality.parts).toHaveLength(5);
    }
    expect((await h.call('GET', '/api/discover/skills/q-wide')).body.quality.parts[1].explanation).toMatch(
      /^0 of \d+ input parameters described/,
    );
    // Too deep for registration: refused by the existing limit before any scoring.
    let tooDeep: Record<string, unknown> = {};
    for (let i = 0; i < SCHEMA_MAX_DEPTH; i++) tooDeep = { properties: { a: tooDeep } };
    const refused = await h.register(key, buildSkill({ skill_id: 'q-too-deep', input_schema: tooDeep }));
    expect(refused.status).toBe(400);
    expect((await h.call('GET', '/api/health')).status).toBe(200);
  });

  it('When rows have no score (registered before it existed), then the backfill scores them and only them', async () => {
    const ids = ['q-old-bare', 'q-old-documented'];
    for (const skill of [bare(ids[0]!), documented(ids[1]!)]) {
      skill.capabilities = ['backfilled'];
      expect((await h.register(key, skill)).status).toBe(201);
    }
    await activate(...ids);
    await h.sql(
      `UPDATE skills SET quality_score = NULL, quality_parts = NULL WHERE skill_id = ANY($1::text[])`,
      ids,
    );
    const unscored = await h.call('GET', '/api/discover/skills?category=backfilled&sort=quality');
    expect(unscored.body.skills.map((s: { quality: unknown }) => s.quality)).toEqual([
      { score: null, parts: [] },
      { score: null, parts: [] },
    ]);

    let scored = 0;
    for (
      let n = await backfillDefinitionQuality(h.service.directory, 1);
      n > 0;
      n = await backfillDefinitionQuality(h.service.directory, 1)
    )
      scored += n;
    expect(scored).toBe(2);
    const listed = await h.call('GET', '/api/discover/skills?category=backfilled&sort=quality');
    expect(
      listed.body.skills.map((s: { skill_id: string; quality: { score: number } }) => [
        s.skill_id,
        s.quality.score,
      ]),
    ).toEqual([
      ['q-old-documented', 100],
      ['q-old-bare', 2],
    ]);
  });
});
