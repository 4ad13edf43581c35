import { skillRouterClient } from '@repo/api-client';
import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// The typed client of @repo/api-client (generated from the OpenAPI document this service serves)
// against the running service: its calls compile against the document and get what the API answers.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('skill_router_typed_client_test');
});
afterAll(() => h?.close());

describe('The typed skill-router client', () => {
  it('When it creates a key, registers a skill, lists, reads and routes, then each typed answer is what the API answers', async () => {
    const created = await skillRouterClient(h.baseUrl).POST('/api/auth/key', {
      body: { name: 'typed-agent' },
    });
    expect(created.response.status).toBe(201);
    const client = skillRouterClient(h.baseUrl, created.data!.api_key);

    const skill = buildSkill({ capabilities: ['translation', 'typedclient'] });
    const registered = await client.POST('/api/discover/register', { body: skill });
    expect(registered.response.status).toBe(201);
    expect(registered.data).toMatchObject({
      ok: true,
      skill_id: skill.skill_id,
      status: 'pending_verification',
    });
    await h.sql(`UPDATE skills SET status = 'active' WHERE skill_id = $1`, skill.skill_id);
    await h.reloadRouting();

    const list = await client.GET('/api/discover/skills', {
      params: { query: { category: 'typedclient', limit: 5 } },
    });
    expect(list.data?.skills.map((s) => s.skill_id)).toEqual([skill.skill_id]);
    const detail = await client.GET('/api/discover/skills/{id}', {
      params: { path: { id: skill.skill_id } },
    });
    expect(detail.data?.verification.steps).toEqual(expect.any(Array));

    const routed = await client.POST('/api/discover/route', {
      body: { task: 'typedclient translation', limit: 3 },
    });
    expect(routed.data?.matches[0]?.skill_id).toBe(skill.skill_id);
  });

  it('When it reads a skill that does not exist, then the error is the typed envelope', async () => {
    const { error, response } = await skillRouterClient(h.baseUrl).GET('/api/discover/skills/{id}', {
      params: { path: { id: 'no-such-skill' } },
    });
    expect(response.status).toBe(404);
    expect(error).toMatchObject({ code: 'not_found', requestId: expect.any(String) });
  });
});
