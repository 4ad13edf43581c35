import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
let key: string;
let otherKey: string;

beforeAll(async () => {
  h = await startHarness('skill_router_directory_test');
  key = await h.createKey('owner');
  otherKey = await h.createKey('someone-else');
});
afterAll(() => h.close());

const activate = async (id: string) => {
  await h.sql('UPDATE skills SET status = $2 WHERE skill_id = $1', id, 'active');
  await h.reloadRouting();
};

describe('GET /api/health and the platform endpoints', () => {
  it('When health is asked, then 200 with status, service, version 0.1.0 and an ISO timestamp', async () => {
    const res = await h.call('GET', '/api/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      service: 'skill-router',
      version: '0.1.0',
      timestamp: expect.any(String),
    });
    expect(Number.isNaN(Date.parse(res.body.timestamp))).toBe(false);
  });

  it('When /openapi.json, /docs, /livez and /readyz are asked, then they answer', async () => {
    const doc = await h.call('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/api/health',
        '/api/auth/key',
        '/api/discover/route',
        '/api/discover/skills',
        '/api/discover/skills/{id}',
        '/api/discover/register',
        '/api/discover/report',
      ]),
    );
    expect((await fetch(`${h.baseUrl}/docs`)).headers.get('content-type')).toMatch(/text\/html/);
    expect((await h.call('GET', '/livez')).status).toBe(200);
    expect((await h.call('GET', '/readyz')).status).toBe(200);
  });

  it('When an unknown route is asked, then 404 not_found in the envelope', async () => {
    const res = await h.call('GET', '/api/nope');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'not_found', requestId: expect.any(String) });
  });
});

describe('Protected endpoints without a valid key', () => {
  const cases: [string, string, unknown][] = [
    ['POST', '/api/discover/route', { task: 'translate text' }],
    ['POST', '/api/discover/register', buildSkill()],
    ['POST', '/api/discover/report', { skill_id: 'x', caller: 'a', call_result: 'success' }],
  ];
  it.each(cases)('When %s %s has no x-api-key, then 401 unauthorized', async (method, path, body) => {
    const res = await h.call(method as 'POST', path, body);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: 'unauthorized', requestId: expect.any(String) });
  });
  it.each(cases)(
    'When %s %s has an unknown or malformed key, then 401 unauthorized',
    async (method, path, body) => {
      for (const bad of [
        'sk_router_' + '1'.repeat(44),
        'not-a-key',
        key.slice(0, -1) + (key.endsWith('z') ? 'y' : 'z'),
      ]) {
        const res = await h.call(method as 'POST', path, body, { 'x-api-key': bad });
        expect(res.status).toBe(401);
        expect(res.body.code).toBe('unauthorized');
      }
    },
  );
  it('When a protected call fails auth, then nothing is written', async () => {
    const skill = buildSkill();
    await h.call('POST', '/api/discover/register', skill, { 'x-api-key': 'sk_router_nope' });
    expect(await h.sql('SELECT 1 FROM skills WHERE skill_id = $1', skill.skill_id)).toEqual([]);
  });
});

describe('POST /api/discover/register', () => {
  it('When a valid skill is registered, then 201 pending_verification with the three steps, stored lowercased with its full-text vectors', async () => {
    const skill = buildSkill({ capabilities: ['Translation', ' TEXT '], chains: ['Solana', 'base'] });
    const res = await h.register(key, skill);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      skill_id: skill.skill_id,
      status: 'pending_verification',
      verification_steps: ['endpoint_health_check', 'schema_validation', 'test_call'],
    });
    const [row] = await h.sql<Record<string, unknown>>(
      `SELECT status, capabilities, chains, revision, price_usd, search_vector IS NOT NULL AS sv, route_vector IS NOT NULL AS rv, match_terms
         FROM skills WHERE skill_id = $1`,
      skill.skill_id,
    );
    expect(row).toMatchObject({
      status: 'pending_verification',
      capabilities: ['translation', 'text'],
      chains: ['solana', 'base'],
      revision: 1,
      price_usd: 0.002,
      sv: true,
      rv: true,
    });
    expect(row?.match_terms).toEqual(expect.arrayContaining(['translat', 'text', 'human', 'languag']));
  });

  it('When the owner registers the same skill_id again, then 200, revision 2, pending verification again with the new fields', async () => {
    const skill = buildSkill();
    await h.register(key, skill);
    await activate(skill.skill_id);
    const res = await h.register(key, { ...skill, name: 'Renamed translator' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending_verification');
    expect(
      await h.sql('SELECT name, status, revision FROM skills WHERE skill_id = $1', skill.skill_id),
    ).toEqual([{ name: 'Renamed translator', status: 'pending_verification', revision: 2 }]);
  });

  it('When another key registers an existing skill_id, then 403 forbidden and the skill is unchanged', async () => {
    const skill = buildSkill();
    await h.register(key, skill);
    const res = await h.register(otherKey, { ...skill, name: 'Hijacked' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'forbidden' });
    expect(await h.sql('SELECT name, revision FROM skills WHERE skill_id = $1', skill.skill_id)).toEqual([
      { name: skill.name, revision: 1 },
    ]);
  });

  it.each([
    ['description shorter than 10 characters', 'body.description', { description: 'too short' }],
    ['no capabilities', 'body.capabilities', { capabilities: [] }],
    ['a negative price', 'body.pricing.price_usd', { pricing: { model: 'per_call', price_usd: -1 } }],
    ['a non-URL endpoint', 'body.endpoint', { endpoint: 'not a url' }],
    ['an ftp endpoint', 'body.endpoint', { endpoint: 'ftp://example.com/x' }],
    ['a skill_id with a slash', 'body.skill_id', { skill_id: 'a/b' }],
    [
      'input_schema not an object',
      'body.input_schema',
      { input_schema: 'string' as unknown as Record<string, unknown> },
    ],
    ['chains not an array', 'body.chains', { chains: 'solana' as unknown as string[] }],
  ])('When the body has %s, then 400 invalid_request naming %s', async (_what, field, override) => {
    const skill = buildSkill(override);
    const res = await h.register(key, skill);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.details.issues.map((d: { path: string }) => d.path)).toContain(field);
    expect(await h.sql('SELECT 1 FROM skills WHERE skill_id = $1', skill.skill_id)).toEqual([]);
  });

  it('When required fields are missing, then 400 lists each of them', async () => {
    const res = await h.register(key, { skill_id: 'only-id' } as never);
    expect(res.status).toBe(400);
    const paths = res.body.details.issues.map((d: { path: string }) => d.path);
    for (const f of [
      'name',
      'provider',
      'description',
      'capabilities',
      'chains',
      'pricing',
      'endpoint',
      'input_schema',
      'output_schema',
    ]) {
      expect(paths).toContain(`body.${f}`);
    }
  });

  it('When the body is malformed JSON, then 400 invalid_json', async () => {
    const res = await h.call('POST', '/api/discover/register', '{"skill_id":', { 'x-api-key': key });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  it.each([
    [
      'input_schema',
      'larger than 32 KiB',
      { type: 'string', description: 'x'.repeat(33_000) },
      /^is larger than 32768 bytes/,
    ],
    ['output_schema', 'nested 33 levels deep', nest(33), /^nests deeper than 32 levels$/],
    ['input_schema', 'nested 40,000 levels deep', 'DEEP', /^nests deeper than 32 levels$/],
  ])(
    'When %s is %s, then 400 invalid_request names the limit and nothing is stored',
    async (field, _what, schema, message) => {
      const skill = buildSkill({ [field]: schema });
      // Too deep for JSON.stringify here too: spliced into the body as text.
      const deep = `{"a":${'['.repeat(40_000)}${']'.repeat(40_000)}}`;
      const res = await h.call(
        'POST',
        '/api/discover/register',
        JSON.stringify(skill).replace('"DEEP"', deep),
        {
          'x-api-key': key,
        },
      );
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.issues).toContainEqual(
        expect.objectContaining({ path: `body.${field}`, message: expect.stringMatching(message) }),
      );
      expect(await h.sql('SELECT 1 FROM skills WHERE skill_id = $1', skill.skill_id)).toEqual([]);
    },
  );
});

/** An object schema nesting `levels` levels deep (counting the outermost object as 1). */
function nest(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) schema = { not: schema };
  return schema;
}

describe('POST /api/discover/register: SSRF', () => {
  let strict: Harness;
  let strictKey: string;
  beforeAll(async () => {
    strict = await startHarness('skill_router_directory_ssrf_test', { SSRF_ALLOWLIST: '' });
    strictKey = await strict.createKey();
  });
  afterAll(() => strict.close());

  it.each([
    ['loopback', 'http://127.0.0.1:8080/skill'],
    ['localhost', 'http://localhost:8080/skill'],
    ['private 10/8', 'http://10.1.2.3/skill'],
    ['private 192.168/16', 'http://192.168.1.10/skill'],
    ['link-local', 'http://169.254.10.10/skill'],
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data'],
    ['metadata host name', 'http://metadata.google.internal/computeMetadata/v1'],
    ['IPv6 loopback', 'http://[::1]:8080/skill'],
    ['credentials in the URL', 'http://user:pw@example.com/skill'],
  ])(
    'When the endpoint is %s and no allowlist permits it, then 400 invalid_request on body.endpoint and nothing is stored',
    async (_what, endpoint) => {
      const skill = buildSkill({ endpoint });
      const res = await strict.register(strictKey, skill);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details).toEqual({
        issues: [
          { path: 'body.endpoint', code: 'custom', message: expect.stringMatching(/^is not allowed: \S/) },
        ],
      });
      expect(res.body.error).toMatch(/^`endpoint` is not allowed: /);
      expect(await strict.sql('SELECT 1 FROM skills WHERE skill_id = $1', skill.skill_id)).toEqual([]);
    },
  );

  it('When the allowlist permits 127.0.0.1, then a loopback endpoint is accepted', async () => {
    const res = await h.register(key, buildSkill({ endpoint: 'http://127.0.0.1:8080/skill' }));
    expect(res.status).toBe(201);
  });
});

describe('GET /api/discover/skills', () => {
  let ids: Record<string, string>;
  beforeAll(async () => {
    const lister = await h.createKey('lister');
    await h.sql(`UPDATE skills SET status = 'verification_failed'`); // only this block's skills are active
    const specs = {
      swap: buildSkill({
        name: 'Token swapper',
        description: 'Swaps tokens on decentralized exchanges at the best rate.',
        capabilities: ['defi', 'swap'],
        chains: ['solana', 'ethereum'],
      }),
      bridge: buildSkill({
        name: 'Bridge helper',
        description: 'Moves assets between blockchains with low fees.',
        capabilities: ['defi', 'bridge'],
        chains: ['ethereum', 'base'],
      }),
      summary: buildSkill({
        name: 'Summarizer',
        description: 'Summarizes long documents into short briefs.',
        capabilities: ['text', 'nlp'],
        chains: [],
      }),
      pending: buildSkill({
        name: 'Pending swapper',
        description: 'Swaps tokens but is not verified yet.',
        capabilities: ['defi'],
        chains: ['solana'],
      }),
    };
    ids = {};
    for (const [k, s] of Object.entries(specs)) {
      ids[k] = s.skill_id;
      expect((await h.register(lister, s)).status).toBe(201);
      if (k !== 'pending') await activate(s.skill_id);
    }
    // popularity: summary > bridge > swap; creation order: swap, bridge, summary
    await h.sql('UPDATE skill_stats SET popularity = 0.9 WHERE skill_id = $1', ids.summary);
    await h.sql('UPDATE skill_stats SET popularity = 0.5 WHERE skill_id = $1', ids.bridge);
    await h.sql('UPDATE skill_stats SET popularity = 0.1 WHERE skill_id = $1', ids.swap);
    await h.sql(`UPDATE skills SET created_at = now() - interval '3 hours' WHERE skill_id = $1`, ids.swap);
    await h.sql(`UPDATE skills SET created_at = now() - interval '2 hours' WHERE skill_id = $1`, ids.bridge);
    await h.sql(`UPDATE skills SET created_at = now() - interval '1 hours' WHERE skill_id = $1`, ids.summary);
  });

  const list = async (qs: string) => {
    const res = await h.call('GET', `/api/discover/skills${qs}`);
    expect(res.status).toBe(200);
    return res.body as { skills: { skill_id: string }[]; total: number; limit: number; offset: number };
  };

  it('When listed without parameters, then active skills only, by popularity, with total, limit 20 and offset 0', async () => {
    const body = await list('');
    expect(body.skills.map((s) => s.skill_id)).toEqual([ids.summary, ids.bridge, ids.swap]);
    expect(body).toMatchObject({ total: 3, limit: 20, offset: 0 });
    expect(body.skills[0]).toMatchObject({
      status: 'active',
      pricing: { model: 'per_call', price_usd: 0.002 },
      // Nothing observed yet: the reliability estimate is its prior mean (README, "Reputation").
      metrics: expect.objectContaining({ success_rate_24h: 0.9, calls_30d: 0 }),
    });
  });

  it('When sort=newest, then the most recently created first', async () => {
    expect((await list('?sort=newest')).skills.map((s) => s.skill_id)).toEqual([
      ids.summary,
      ids.bridge,
      ids.swap,
    ]);
    await h.sql(`UPDATE skills SET created_at = now() WHERE skill_id = $1`, ids.swap);
    expect((await list('?sort=newest')).skills.map((s) => s.skill_id)).toEqual([
      ids.swap,
      ids.summary,
      ids.bridge,
    ]);
  });

  it('When filtered by category or chain (any case), then only skills with that capability or chain', async () => {
    expect((await list('?category=DeFi')).skills.map((s) => s.skill_id)).toEqual([ids.bridge, ids.swap]);
    expect((await list('?chain=solana')).skills.map((s) => s.skill_id)).toEqual([ids.swap]);
    expect((await list('?category=defi&chain=base')).skills.map((s) => s.skill_id)).toEqual([ids.bridge]);
    expect((await list('?chain=bitcoin')).total).toBe(0);
  });

  it('When searched, then full-text over name and description with stemming ("swapping" finds "Swaps")', async () => {
    expect((await list('?search=swapping%20tokens')).skills.map((s) => s.skill_id)).toEqual([ids.swap]);
    expect((await list('?search=document')).skills.map((s) => s.skill_id)).toEqual([ids.summary]);
    // capabilities are not part of the listing search, which covers name and description only
    expect((await list('?search=nlp')).total).toBe(0);
    expect((await list('?category=nlp')).skills.map((s) => s.skill_id)).toEqual([ids.summary]);
    expect((await list('?search=bridge')).skills.map((s) => s.skill_id)).toEqual([ids.bridge]);
    expect((await list('?search=nothing-like-this')).total).toBe(0);
  });

  it('When paged with limit and offset, then the page and the same total', async () => {
    const page = await list('?limit=1&offset=1');
    expect(page.skills.map((s) => s.skill_id)).toEqual([ids.bridge]);
    expect(page).toMatchObject({ total: 3, limit: 1, offset: 1 });
    const past = await list('?limit=10&offset=10');
    expect(past).toMatchObject({ skills: [], total: 3 });
  });

  it.each([
    ['?limit=101', 'query.limit'],
    ['?limit=0', 'query.limit'],
    ['?limit=abc', 'query.limit'],
    ['?offset=-1', 'query.offset'],
    ['?sort=rating', 'query.sort'],
  ])('When the query is %s, then 400 invalid_request naming %s', async (qs, field) => {
    const res = await h.call('GET', `/api/discover/skills${qs}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.details.issues.map((d: { path: string }) => d.path)).toContain(field);
  });
});

describe('GET /api/discover/skills/:id', () => {
  it('When a pending skill is asked, then its fields, schemas, empty verification and live metrics', async () => {
    const skill = buildSkill();
    await h.register(key, skill);
    const res = await h.call('GET', `/api/discover/skills/${skill.skill_id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      skill_id: skill.skill_id,
      name: skill.name,
      status: 'pending_verification',
      input_schema: skill.input_schema,
      output_schema: skill.output_schema,
      verification: { steps: [], reason: null, verified_at: null },
      metrics: { success_rate_24h: 0.9, avg_latency_ms: 0, calls_30d: 0, rating: null, ratings_30d: 0 },
      health: { last_check_at: null, consecutive_failures: 0, checks_24h: 0 },
    });
  });

  it('When the skill does not exist, then 404 not_found', async () => {
    const res = await h.call('GET', '/api/discover/skills/no-such-skill');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('When the id is not a valid skill id, then 400 invalid_request', async () => {
    const res = await h.call('GET', `/api/discover/skills/${encodeURIComponent('bad id!')}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
  });
});
