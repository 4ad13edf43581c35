import fc from 'fast-check';
import { createEmbeddingsClient, type EmbeddingsClient } from '../src/adapters/embeddings';
import { definitionHash } from '../src/domain/definition';
import type { RoutableSkill } from '../src/data/routing-rows';
import { RoutingIndex } from '../src/domain/routing-index';
import { rankSkills } from '../src/domain/scoring';
import { similarity, TaskEmbeddings } from '../src/domain/semantic';
import type { RegisterSkillRequest } from '../src/schemas';
import { startScriptedEmbeddings, type ScriptedEmbeddings } from '../scripts/scripted-embeddings';
import { buildSkill } from './support/factories';
import { startHarness, waitFor, type Harness } from './support/harness';

// Search by meaning (README, "Search by meaning") against a scripted OpenAI-compatible embeddings
// server: skills embedded by the service's own worker, routes ranked from the index and from
// PostgreSQL, and the fallback to words when the endpoint fails.
let embeddings: ScriptedEmbeddings;
beforeAll(async () => {
  embeddings = await startScriptedEmbeddings();
});
afterAll(() => embeddings.close());

const MODEL = 'scripted-embed-1';
const embeddingsEnv = () => ({
  EMBEDDINGS_BASE_URL: embeddings.baseUrl,
  EMBEDDINGS_MODEL: MODEL,
  EMBEDDINGS_API_KEY: 'test-key',
});

/** Registers skills, makes them active and has the embeddings worker embed them (when it runs). */
async function seedDirectory(h: Harness, key: string): Promise<void> {
  const skills: RegisterSkillRequest[] = [
    buildSkill({
      skill_id: 'polyglot',
      name: 'Polyglot',
      description: 'Renders documents into other languages for agents.',
      capabilities: ['translation'],
      chains: [],
      pricing: { model: 'per_call', price_usd: 0 },
    }),
    buildSkill({
      skill_id: 'chartist',
      name: 'Chartist',
      description: 'Draws charts of token prices over time.',
      capabilities: ['charts'],
      chains: [],
      pricing: { model: 'per_call', price_usd: 0 },
    }),
  ];
  for (const skill of skills) {
    expect((await h.register(key, skill)).status).toBe(201);
    await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = $1`, skill.skill_id);
  }
  if (h.service.embeddingsLoop) await h.service.embeddingsLoop.kick();
  await h.reloadRouting();
}

interface RouteBody {
  matches: { skill_id: string; match_score: number; match_reasons: string[] }[];
  total_matches: number;
}

async function route(h: Harness, key: string, task: string): Promise<RouteBody> {
  const res = await h.call('POST', '/api/discover/route', { task }, { 'x-api-key': key });
  expect(res.status).toBe(200);
  return res.body as RouteBody;
}

async function metric(h: Harness, name: string): Promise<number> {
  const text = await (await fetch(`${h.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

// A task sharing no word with the translator: "interpret" and "spanish" mean what its words mean.
const RELATED_TASK = 'interpret my message into spanish';

describe.each([true, false])('Search by meaning with ROUTING_INDEX=%s', (routingIndex) => {
  let h: Harness;
  let key: string;
  beforeAll(async () => {
    h = await startHarness(routingIndex ? 'skill_router_semantic_test' : 'skill_router_semantic_sql_test', {
      ...embeddingsEnv(),
      ROUTING_INDEX: String(routingIndex),
    });
    key = await h.createKey('semantic-test');
    await seedDirectory(h, key);
  });
  afterAll(() => h.close());

  it('When skills are verified, then the embeddings worker stores a unit vector of the configured model for their revision', async () => {
    const rows = await h.sql<{
      skill_id: string;
      embedding: number[];
      embedding_model: string;
      embedding_revision: number;
    }>(`SELECT skill_id, embedding, embedding_model, embedding_revision FROM skills ORDER BY skill_id`);
    expect(rows.map((r) => [r.skill_id, r.embedding_model, r.embedding_revision])).toEqual([
      ['chartist', MODEL, 1],
      ['polyglot', MODEL, 1],
    ]);
    for (const r of rows) {
      expect(r.embedding).toHaveLength(64);
      expect(Math.hypot(...r.embedding)).toBeCloseTo(1, 5);
    }
    // Name, capabilities and description, one per line.
    expect(embeddings.inputs).toContain(
      'Polyglot\ntranslation\nRenders documents into other languages for agents.',
    );
  });

  it('When a task shares no word with a skill but means what it does, then the skill is routed, explained by its similarity', async () => {
    const before = embeddings.inputs.length;
    const body = await route(h, key, RELATED_TASK);
    expect(body.matches.map((m) => m.skill_id)).toEqual(['polyglot']);
    expect(body.total_matches).toBe(1);
    expect(body.matches[0]?.match_reasons[0]).toMatch(
      /^capability_match 0\.\d\d: similar in meaning to the task \(0\.\d\d\)$/,
    );
    // The task's embedding is asked for once and remembered.
    await route(h, key, RELATED_TASK);
    expect(embeddings.inputs.slice(before)).toEqual([RELATED_TASK]);
  });

  it('When a task shares words and meaning, then capability_match blends both: 0.6 of the similarity plus 0.4 of the share of words', async () => {
    const body = await route(h, key, 'plot token charts');
    expect(body.matches[0]?.skill_id).toBe('chartist');
    const reason = body.matches[0]?.match_reasons[0] ?? '';
    const parts =
      /^capability_match (\d\.\d\d): similar in meaning to the task \((-?\d\.\d\d)\); task terms .* \((\d) of (\d)\)$/.exec(
        reason,
      );
    expect(parts).not.toBeNull();
    const [, value, sim, shared, terms] = parts!;
    const lexical = Number(shared) / Number(terms);
    expect(Number(value)).toBeCloseTo(0.6 * Number(sim) + 0.4 * lexical, 1);
  });

  it('When the embeddings endpoint fails, then the route is ranked by words alone and the fallback is counted', async () => {
    const fallbacks = await metric(h, 'skill_route_embedding_fallbacks_total');
    embeddings.failWith(500);
    try {
      const body = await route(h, key, 'translation of my documents');
      expect(body.matches.map((m) => m.skill_id)).toEqual(['polyglot']);
      expect(body.matches[0]?.match_reasons[0]).toMatch(/^capability_match 1\.00: task terms /);
      // Meaning alone no longer finds it.
      expect((await route(h, key, 'interpret this letter into german')).matches).toEqual([]);
      expect(await metric(h, 'skill_route_embedding_fallbacks_total')).toBe(fallbacks + 2);
    } finally {
      embeddings.failWith(null);
      // Routes ask the endpoint again once the pause after a failure is over (new tasks each time,
      // so that no remembered embedding answers).
      let attempt = 0;
      await waitFor(
        'routes to use meaning again',
        async () =>
          (await route(h, key, `interpret this into spanish, attempt ${++attempt}`)).matches.length > 0,
        20_000,
      );
    }
  });
});

describe('Search by meaning off', () => {
  it('When no embeddings endpoint is configured, then a task sharing no word with any skill matches nothing and nothing is embedded', async () => {
    const h = await startHarness('skill_router_semantic_off_test');
    try {
      expect(h.service.embeddingsLoop).toBeUndefined();
      const key = await h.createKey('semantic-off');
      const asked = embeddings.requests;
      await seedDirectory(h, key);
      const body = await route(h, key, RELATED_TASK);
      expect(body).toMatchObject({ matches: [], total_matches: 0 });
      expect(embeddings.requests).toBe(asked);
      const [row] = await h.sql<{ n: string }>(
        `SELECT count(*) AS n FROM skills WHERE embedding IS NOT NULL`,
      );
      expect(Number(row?.n)).toBe(0);
    } finally {
      await h.close();
    }
  });

  it('When only one of EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL is set, then the service refuses to boot naming both', async () => {
    await expect(
      startHarness('skill_router_semantic_config_test', { EMBEDDINGS_BASE_URL: 'http://127.0.0.1:9/v1' }),
    ).rejects.toThrow(/EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL must be set together/);
  });
});

describe('The routing index against the SQL ranking, with embeddings', () => {
  let h: Harness;
  let ownerKeyId: string;
  let client: EmbeddingsClient;
  beforeAll(async () => {
    h = await startHarness('skill_router_semantic_property_test', embeddingsEnv());
    await h.createKey('owner');
    const [row] = await h.sql<{ id: string }>(`SELECT id FROM api_keys WHERE name = 'owner'`);
    ownerKeyId = row!.id;
    client = createEmbeddingsClient({
      baseUrl: embeddings.baseUrl,
      model: MODEL,
      timeoutMs: 5000,
      policy: { allowlist: ['127.0.0.1'] },
    });
  });
  afterAll(async () => {
    await client.close();
    await h.close();
  });

  // Words of the scripted model's concepts and others, so that skills are near by meaning, by words,
  // by both or by neither.
  const WORDS = [
    'translate',
    'language',
    'french',
    'swap',
    'token',
    'exchange',
    'chart',
    'graph',
    'weather',
    'rain',
    'summary',
    'digest',
    'agent',
    'fast',
    'the',
  ];
  const CHAINS = ['solana', 'base'];
  const text = (min: number, max: number) =>
    fc.array(fc.constantFrom(...WORDS), { minLength: min, maxLength: max }).map((w) => w.join(' '));
  const skillArb = fc.record({
    name: text(1, 2),
    description: text(3, 6),
    capabilities: fc.uniqueArray(fc.constantFrom(...WORDS.slice(0, 12)), { minLength: 1, maxLength: 2 }),
    chains: fc.uniqueArray(fc.constantFrom(...CHAINS), { maxLength: 2 }),
    price: fc.constantFrom(0, 0.001, 0.02),
    status: fc.constantFrom('active', 'active', 'active', 'suspended'),
    embedded: fc.constantFrom(true, true, true, false),
    successRate: fc.integer({ min: 0, max: 100 }).map((n) => n / 100),
  });
  const queryArb = fc.record({
    task: text(1, 4).filter((t) => t.trim().length > 0),
    chains: fc.option(fc.uniqueArray(fc.constantFrom(...CHAINS), { minLength: 1, maxLength: 1 }), {
      nil: undefined,
    }),
    minSimilarity: fc.constantFrom(0, 0.3, 0.6, 1),
    limit: fc.integer({ min: 1, max: 15 }),
  });

  it('When random directories with stored embeddings are routed with random tasks, then the index and the SQL ranking return the same matches, scores, reasons and total', async () => {
    let semanticOnly = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(skillArb, { minLength: 1, maxLength: 15 }),
        fc.array(queryArb, { minLength: 1, maxLength: 5 }),
        async (skills, queries) => {
          await h.sql('TRUNCATE call_reports, health_checks, skill_stats, skill_versions, skills');
          for (const [i, s] of skills.entries()) {
            const body = buildSkill({
              skill_id: `e-${String(i).padStart(2, '0')}`,
              name: s.name.trim() || 'skill',
              description: `${s.description} tool`,
              capabilities: s.capabilities,
              chains: s.chains,
              pricing: { model: 'per_call', price_usd: s.price },
            });
            await h.service.directory.upsert(body, ownerKeyId, definitionHash(body));
            await h.sql(`UPDATE skills SET status = $2 WHERE skill_id = $1`, body.skill_id, s.status);
            await h.sql(
              `UPDATE skill_stats SET success_rate_24h = $2 WHERE skill_id = $1`,
              body.skill_id,
              s.successRate,
            );
          }
          const kick = h.service.embeddingsLoop!.kick();
          await kick;
          for (const [i, s] of skills.entries())
            if (!s.embedded)
              await h.sql(
                `UPDATE skills SET embedding = NULL, embedding_model = NULL WHERE skill_id = $1`,
                `e-${String(i).padStart(2, '0')}`,
              );
          await h.reloadRouting();
          for (const q of queries) {
            const found = await new TaskEmbeddings(client, {
              cacheEntries: 0,
              minSimilarity: q.minSimilarity,
            }).query(q.task);
            expect(found).toBeDefined();
            const semantic = found!;
            const reference = await h.service.candidates.find(q.task, q.chains, 100_000, {
              vector: semantic.vector,
              minSimilarity: semantic.minSimilarity,
              embeddingModel: MODEL,
            });
            const query = { taskTerms: reference.taskTerms, chains: q.chains, semantic };
            const expected = rankSkills(reference.candidates, query, q.limit);
            const taskTerms = (
              await h.sql<{ t: string[] }>(
                `SELECT tsvector_to_array(to_tsvector('english', $1)) AS t`,
                q.task,
              )
            )[0]!.t;
            const actual = h.service.routing.route({ ...query, taskTerms }, q.limit);
            const view = (m: (typeof expected)[number]) => ({
              id: m.skill.skillId,
              score: m.score,
              reasons: m.reasons,
              factors: m.factors,
            });
            expect(actual.total).toBe(taskTerms.length > 0 ? reference.total : 0);
            expect(actual.matches.map(view)).toEqual(taskTerms.length > 0 ? expected.map(view) : []);
            if (
              expected.some(
                (m) => m.reasons[0]?.includes('similar in meaning') && !m.reasons[0].includes('task terms'),
              )
            )
              semanticOnly++;
          }
        },
      ),
      { numRuns: 25 },
    );
    // Matches by meaning alone were among those compared.
    expect(semanticOnly).toBeGreaterThan(3);
  }, 240_000);
});

describe('The routing index holding embeddings', () => {
  const LEXEMES = ['chart', 'swap', 'token', 'translat', 'agent'];
  const DIMS = 48;
  const unit = (values: number[]): Float32Array | null => {
    const norm = Math.hypot(...values);
    return norm === 0 ? null : Float32Array.from(values, (v) => v / norm);
  };
  const vectorArb = fc.array(fc.integer({ min: -4, max: 4 }), { minLength: DIMS, maxLength: DIMS });
  const op = fc.record({
    id: fc.nat(299),
    terms: fc.uniqueArray(fc.constantFrom(...LEXEMES), { minLength: 1, maxLength: 2 }),
    vector: fc.option(vectorArb, { nil: null, freq: 4 }),
    state: fc.constantFrom('active', 'active', 'active', 'degraded') as fc.Arbitrary<RoutableSkill['state']>,
    remove: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  });

  it('When hundreds of skills with embeddings are added, replaced and removed (their vectors grow, move and are trimmed), then routes by meaning equal the reference over the final directory', () => {
    fc.assert(
      fc.property(
        fc.array(op, { minLength: 100, maxLength: 700 }),
        vectorArb,
        fc.uniqueArray(fc.constantFrom(...LEXEMES), { minLength: 1, maxLength: 2 }),
        fc.constantFrom(0, 0.2, 0.5),
        fc.nat(),
        (ops, taskValues, taskTerms, minSimilarity, split) => {
          const index = new RoutingIndex();
          const directory = new Map<string, RoutableSkill>();
          for (const [i, o] of ops.entries()) {
            if (i === split % ops.length) index.trim();
            const skillId = `v-${o.id}`;
            if (o.remove) {
              index.remove(skillId);
              directory.delete(skillId);
              continue;
            }
            const skill: RoutableSkill = {
              skillId,
              name: skillId,
              endpoint: `https://example.com/${o.id}`,
              chains: [],
              priceUsd: 0,
              routeTerms: o.terms,
              matchTerms: o.terms,
              successRate24h: 0.9,
              avgLatencyMs: null,
              calls30d: 0,
              ratingSum: 0,
              ratingCount: 0,
              state: o.state,
              embedding: o.vector && unit(o.vector),
            };
            index.upsert(skill);
            directory.set(skillId, skill);
          }
          const vector = unit(taskValues);
          if (!vector) return;
          const semantic = { vector: Float64Array.from(vector), key: 'task', minSimilarity };
          const query = { taskTerms, semantic };
          const candidates = [...directory.values()]
            .filter((sk) => sk.state === 'active')
            .map((sk) => ({
              ...sk,
              matchTerms: sk.matchTerms.filter((t) => taskTerms.includes(t)),
              ...(sk.embedding ? { similarity: similarity(sk.embedding, semantic.vector) } : {}),
            }))
            .filter((sk) => sk.matchTerms.length > 0 || (sk.similarity ?? -Infinity) >= minSimilarity);
          const reference = rankSkills(candidates, query, 20);
          const actual = index.route(query, 20);
          const view = (m: { skill: { skillId: string }; score: number; reasons: string[] }) => [
            m.skill.skillId,
            m.score,
            m.reasons,
          ];
          expect(actual.total).toBe(candidates.length);
          expect(actual.matches.map(view)).toEqual(reference.map(view));
        },
      ),
      { numRuns: 40 },
    );
  });
});
