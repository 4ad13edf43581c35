import { startLocalSkills, type LocalSkills } from '../scripts/local-skills';
import { canonicalJson, definitionHash } from '../src/domain/definition';
import { VERSIONS_KEPT } from '../src/data/skill-directory';
import { buildSkill, translate, uniqueWord } from './support/factories';
import { startHarness, waitFor, withWorkersStopped, type Harness } from './support/harness';

jest.setTimeout(120_000);

let h: Harness;
let key: string;
let skills: LocalSkills;

beforeAll(async () => {
  skills = await startLocalSkills();
  h = await startHarness('skill_router_pinning_test', {
    WORKERS_ENABLED: 'true',
    // No periodic checks or conformance calls during these tests: verification alone.
    HEALTH_CHECK_INTERVAL_MS: '3600000',
    HEALTH_POLL_INTERVAL_MS: '3600000',
    CONFORMANCE_INTERVAL_MS: '3600000',
    CONFORMANCE_POLL_INTERVAL_MS: '3600000',
  });
  key = await h.createKey('provider');
});
afterAll(async () => {
  await h?.close();
  await skills?.close();
});

const status = async (id: string) =>
  (await h.sql<{ status: string }>('SELECT status FROM skills WHERE skill_id = $1', id))[0]?.status;

const routeIds = async (task: string): Promise<string[]> => {
  const res = await h.call('POST', '/api/discover/route', { task }, { 'x-api-key': key });
  expect(res.status).toBe(200);
  return (res.body.matches as { skill_id: string }[]).map((m) => m.skill_id);
};

const routedEndpoint = async (task: string, skillId: string): Promise<string | undefined> => {
  const res = await h.call('POST', '/api/discover/route', { task }, { 'x-api-key': key });
  return (res.body.matches as { skill_id: string; endpoint: string }[]).find((m) => m.skill_id === skillId)
    ?.endpoint;
};

describe('The definition hash', () => {
  it('When two definitions differ only in key order, then their hashes are equal; when a pinned field changes, the hash changes; directory metadata does not count', () => {
    const skill = buildSkill();
    const hash = definitionHash(skill);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    const reordered = {
      ...skill,
      input_schema: Object.fromEntries(Object.entries(skill.input_schema).reverse()),
      pricing: { price_usd: skill.pricing.price_usd, model: skill.pricing.model },
    };
    expect(definitionHash(reordered)).toBe(hash);
    const relabelled = { ...skill, name: 'Another name', capabilities: ['other'], chains: [] };
    expect(definitionHash(relabelled)).toBe(hash);
    for (const changed of [
      { endpoint: 'http://127.0.0.1:9/other' },
      { description: `${skill.description} Now faster.` },
      { pricing: { model: 'per_call', price_usd: 0.003 } },
      { pricing: { model: 'per_minute', price_usd: 0.002 } },
      { input_schema: { ...skill.input_schema, required: ['text'] } },
      { output_schema: { type: 'object' } },
    ])
      expect(definitionHash({ ...skill, ...changed })).not.toBe(hash);
  });

  it('When values need escaping or are numbers, then the canonical JSON follows RFC 8785', () => {
    // Members sorted by UTF-16 code units (so "\u20ac" after "b", "\ud83d" before "\ufb01"), numbers as
    // ECMAScript writes them, strings escaped as JSON.stringify does.
    expect(
      canonicalJson({
        '\u20ac': 'Euro',
        b: [1e21, 0.1, -0, 1.5e-7, 100],
        a: { z: null, y: true, x: 'line\nbreak "quoted" \u2028' },
        '\ufb01': 1,
        '\ud83d\ude00': 2,
      }),
    ).toBe(
      '{"a":{"x":"line\\nbreak \\"quoted\\" \u2028","y":true,"z":null},"b":[1e+21,0.1,0,1.5e-7,100],"\u20ac":"Euro","\ud83d\ude00":2,"\ufb01":1}',
    );
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(/Non-finite/);
  });
});

describe('Pinned definitions and their versions', () => {
  it('When a verified skill is updated, then it leaves routing at once, its old endpoint is not served, and it returns with the new endpoint only once the new version verifies; each version shows its hash and verification', async () => {
    const word = uniqueWord();
    skills.set('pin-old', { kind: 'healthy', respond: translate });
    skills.set('pin-new', { kind: 'healthy', respond: translate });
    const skill = buildSkill({
      description: `Translates ${word} documents.`,
      endpoint: skills.url('pin-old'),
    });
    expect((await h.register(key, skill)).status).toBe(201);
    await waitFor('active', async () => (await status(skill.skill_id)) === 'active', 30_000);
    expect(await routedEndpoint(word, skill.skill_id)).toBe(skills.url('pin-old'));

    const detail = await h.call('GET', `/api/discover/skills/${skill.skill_id}`);
    expect(detail.body).toMatchObject({ revision: 1, definition_hash: definitionHash(skill) });

    const updated = { ...skill, endpoint: skills.url('pin-new') };
    await withWorkersStopped(h, async () => {
      expect((await h.register(key, updated)).status).toBe(200);
      // Nothing verifies it now: the skill is out of routing, and the old endpoint is not served.
      await waitFor('the routing index to drop the skill', async () => (await routeIds(word)).length === 0);
      expect(await status(skill.skill_id)).toBe('pending_verification');
      const versions = await h.call('GET', `/api/discover/skills/${skill.skill_id}/versions`);
      expect(versions.status).toBe(200);
      expect(versions.body).toMatchObject({ skill_id: skill.skill_id, total: 2, limit: 10, offset: 0 });
      expect(versions.body.versions).toMatchObject([
        {
          revision: 2,
          current: true,
          definition_hash: definitionHash(updated),
          definition: { endpoint: skills.url('pin-new'), pricing: skill.pricing },
          verification: { status: 'pending_verification', steps: [], reason: null, verified_at: null },
        },
        {
          revision: 1,
          current: false,
          definition_hash: definitionHash(skill),
          definition: {
            endpoint: skills.url('pin-old'),
            description: skill.description,
            input_schema: skill.input_schema,
            output_schema: skill.output_schema,
          },
          verification: { status: 'passed', reason: null },
        },
      ]);
      expect(versions.body.versions[1].verification.steps.map((s: { status: string }) => s.status)).toEqual([
        'passed',
        'passed',
        'passed',
      ]);
    });

    await waitFor(
      'the new version verified',
      async () => (await status(skill.skill_id)) === 'active',
      30_000,
    );
    await waitFor(
      'the new endpoint routed',
      async () => (await routedEndpoint(word, skill.skill_id)) === skills.url('pin-new'),
    );
    expect(skills.hits('pin-new').POST).toBe(1);
    const after = await h.call('GET', `/api/discover/skills/${skill.skill_id}/versions`);
    expect(after.body.versions[0]).toMatchObject({ revision: 2, verification: { status: 'passed' } });
    expect(after.body.versions[0].verification.verified_at).toEqual(expect.any(String));
  });

  it('When an update fails its verification, then the previous verified version is not served: the skill stays out of routing with the failed version on record', async () => {
    const word = uniqueWord();
    skills.set('pin-good', { kind: 'healthy', respond: translate });
    skills.set('pin-broken', { kind: 'status', status: 500 });
    const skill = buildSkill({
      description: `Translates ${word} letters.`,
      endpoint: skills.url('pin-good'),
    });
    await h.register(key, skill);
    await waitFor('active', async () => (await status(skill.skill_id)) === 'active', 30_000);
    expect(await routeIds(word)).toEqual([skill.skill_id]);

    await h.register(key, { ...skill, endpoint: skills.url('pin-broken') });
    await waitFor('failed', async () => (await status(skill.skill_id)) === 'verification_failed', 30_000);
    await waitFor('out of routing', async () => (await routeIds(word)).length === 0);
    const versions = await h.call('GET', `/api/discover/skills/${skill.skill_id}/versions`);
    expect(
      versions.body.versions.map((v: { verification: { status: string } }) => v.verification.status),
    ).toEqual(['failed', 'passed']);
    expect(versions.body.versions[0].verification.reason).toMatch(/^endpoint_health_check: HTTP 500/);
  });

  it('When a version is replaced before it was verified, then it is recorded as superseded and only the newest is verified', async () => {
    skills.set('pin-super', { kind: 'healthy', respond: translate });
    const skill = buildSkill({ endpoint: skills.url('pin-super') });
    await withWorkersStopped(h, async () => {
      await h.register(key, skill);
      await h.register(key, { ...skill, description: 'The second description of this translator.' });
      await h.register(key, { ...skill, description: 'The third description of this translator.' });
    });
    await waitFor('active', async () => (await status(skill.skill_id)) === 'active', 30_000);
    const versions = await h.call('GET', `/api/discover/skills/${skill.skill_id}/versions?limit=2`);
    expect(versions.body.total).toBe(3);
    expect(
      versions.body.versions.map((v: { revision: number; verification: { status: string } }) => [
        v.revision,
        v.verification.status,
      ]),
    ).toEqual([
      [3, 'passed'],
      [2, 'superseded'],
    ]);
    const older = await h.call('GET', `/api/discover/skills/${skill.skill_id}/versions?limit=2&offset=2`);
    expect(older.body.versions.map((v: { revision: number }) => v.revision)).toEqual([1]);
    expect(older.body.versions[0].verification.status).toBe('superseded');
    expect(skills.hits('pin-super').POST).toBe(1);
  });

  it(`When a skill is registered more than ${VERSIONS_KEPT} times, then only its last ${VERSIONS_KEPT} versions are kept`, async () => {
    const [owner] = await h.sql<{ id: string }>('SELECT id FROM api_keys ORDER BY created_at LIMIT 1');
    const skill = buildSkill();
    for (let i = 0; i < VERSIONS_KEPT + 2; i++) {
      const body = { ...skill, description: `Version ${i} of a translator that is updated a lot.` };
      await h.service.directory.upsert(body, owner!.id, definitionHash(body));
    }
    const [count] = await h.sql<{ n: number; oldest: number }>(
      'SELECT count(*)::int AS n, min(revision) AS oldest FROM skill_versions WHERE skill_id = $1',
      skill.skill_id,
    );
    expect(count).toEqual({ n: VERSIONS_KEPT, oldest: 3 });
  });

  it('When another key registers the same skill_id, then it is refused and no version is recorded', async () => {
    skills.set('pin-owned', { kind: 'healthy', respond: translate });
    const skill = buildSkill({ endpoint: skills.url('pin-owned') });
    expect((await h.register(key, skill)).status).toBe(201);
    const intruder = await h.createKey('intruder');
    const hijack = await h.register(intruder, { ...skill, endpoint: skills.url('pin-elsewhere') });
    expect(hijack.status).toBe(403);
    const versions = await h.call('GET', `/api/discover/skills/${skill.skill_id}/versions`);
    expect(versions.body.total).toBe(1);
    expect(versions.body.versions[0].definition.endpoint).toBe(skills.url('pin-owned'));
  });

  it('When the versions of an unknown or invalid skill or with bad paging are asked for, then the answer is 404 or 400 in the error envelope', async () => {
    const skill = buildSkill();
    await h.register(key, skill);
    const base = `/api/discover/skills/${skill.skill_id}/versions`;
    const unknown = await h.call('GET', '/api/discover/skills/no-such-skill/versions');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'not_found', requestId: expect.any(String) });
    for (const bad of [
      '/api/discover/skills/..%2Fetc/versions',
      '/api/discover/skills/%00/versions',
      `/api/discover/skills/${'a'.repeat(200)}/versions`,
      `${base}?limit=0`,
      `${base}?limit=21`,
      `${base}?limit=-1`,
      `${base}?limit=1e3`,
      `${base}?offset=x`,
      `${base}?offset=99999999999`,
      `${base}?limit=1&limit=2`,
      `${base}?sort=newest`,
    ]) {
      const res = await h.call('GET', bad);
      expect([bad, res.status]).toEqual([bad, 400]);
      expect(res.body).toMatchObject({ code: 'invalid_request', requestId: expect.any(String) });
    }
  });
});
