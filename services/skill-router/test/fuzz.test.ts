import fc from 'fast-check';
import {
  errorDialectProblems,
  fuzzCheckAll,
  fuzzOperations,
  fuzzRunSettings,
  type FuzzCheckOptions,
  type FuzzOperation,
  type FuzzRequest,
  type FuzzResponse,
  type OpenApiDocument,
} from '@repo/openapi-fuzz';
import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// Property-based fuzzing of every operation of skill-router's own /openapi.json, read from the
// running service (real PostgreSQL): valid and hostile requests, with a real key, without one and
// with garbage keys. Every answer is judged against the document (see @repo/openapi-fuzz,
// fuzzOperations). A failure prints fast-check's seed and path; replay it with FUZZ_SEED/FUZZ_PATH.
jest.setTimeout(120_000);

const RUN_SETTINGS = fuzzRunSettings(60);

let h: Harness;
let operations: FuzzOperation[];
const credentials: Record<string, string> = {};
/** Ids that exist, so some generated requests reach real records. */
const examples: Record<string, string[]> = {
  skill_id: [],
  id: [],
  endpoint: ['http://127.0.0.1:9/skill'],
};
/** Statuses seen per operation (printed with FUZZ_REPORT=1). */
const seen = new Map<string, Map<number, number>>();

function count(request: FuzzRequest, response: FuzzResponse): void {
  const statuses = seen.get(request.operationId) ?? new Map<number, number>();
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  seen.set(request.operationId, statuses);
}

beforeAll(async () => {
  // The per-key abuse limits stay on but out of the way, so most registrations and reports reach
  // the database (their 429s are covered by abuse-limits.test.ts).
  h = await startHarness('skill_router_fuzz_test', {
    REGISTRATIONS_PER_KEY_PER_DAY: '100000',
    REPORT_LIMIT_PER_KEY_SKILL: '100000',
  });
  credentials.apiKey = await h.createKey('fuzz-agent');
  const skill = buildSkill();
  const registered = await h.register(credentials.apiKey, skill);
  if (registered.status !== 201) throw new Error(`register failed: ${registered.status}`);
  examples.skill_id?.push(skill.skill_id);
  examples.id?.push(skill.skill_id);
  const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
  operations = fuzzOperations(doc, {
    credentialSchemes: ['apiKey'],
    examples,
    garbageCredentials: {
      // Keys of the right shape that were never issued, beside the generic garbage.
      apiKey: fc.oneof(
        fc.stringMatching(/^sk_router_[1-9A-HJ-NP-Za-km-z]{43,44}$/),
        fc.string({ maxLength: 60 }).map((s) => `sk_router_${s.replace(/[^\x20-\x7e]/g, '')}`),
        fc.constantFrom('', ' ', 'sk_router_', 'x'.repeat(8000)),
      ),
    },
  });
});

afterAll(async () => {
  if (process.env.FUZZ_REPORT) {
    const lines = [...seen].map(
      ([op, statuses]) => `${op}: ${[...statuses].map(([s, n]) => `${s}×${n}`).join(' ')}`,
    );
    process.stdout.write(`skill-router statuses\n${lines.join('\n')}\n`);
  }
  await h?.close();
});

const options = (): FuzzCheckOptions => ({
  baseUrl: h.baseUrl,
  credentials,
  ...RUN_SETTINGS,
  onResponse: count,
});

describe('fuzzing skill-router from its own OpenAPI document', () => {
  it('When the document is read from the running service, then it has every operation of the contract', () => {
    expect(operations.map((o) => `${o.method} ${o.path}`).sort()).toEqual([
      'GET /api/discover/skills',
      'GET /api/discover/skills/{id}',
      'GET /api/discover/skills/{id}/versions',
      'GET /api/health',
      'POST /api/auth/key',
      'POST /api/discover/register',
      'POST /api/discover/register/mcp',
      'POST /api/discover/report',
      'POST /api/discover/route',
    ]);
  });

  it('When every operation gets valid requests with a real key, none or a garbage one, then no answer is 5xx, every status is documented and every error is the envelope', async () => {
    const failures = await fuzzCheckAll(operations, 'valid', options());
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
  });

  it('When every operation gets hostile requests (wrong types, missing fields, out-of-range numbers, oversized and hostile strings, __proto__ keys, deep nesting, malformed JSON, random bytes), then no answer is 5xx, every status is documented, every error is the envelope and nothing that breaks the document is accepted', async () => {
    const failures = await fuzzCheckAll(operations, 'hostile', options());
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
    // __proto__ keys carried { fuzz_polluted: true }: no prototype of the service's process took it.
    expect(({} as Record<string, unknown>).fuzz_polluted).toBeUndefined();
  });

  it('When the fuzzing is over, then the service is still ready and healthy and answers normal requests', async () => {
    expect((await fetch(`${h.baseUrl}/readyz`)).status).toBe(200);
    expect((await h.call('GET', '/api/health')).status).toBe(200);
    const list = await h.call('GET', '/api/discover/skills?limit=5');
    expect(list.status).toBe(200);
    const key = await h.createKey('after-the-fuzz');
    const route = await h.call(
      'POST',
      '/api/discover/route',
      { task: 'translate text' },
      { 'x-api-key': key },
    );
    expect(route.status).toBe(200);
    expect(route.body).toMatchObject({ matches: expect.any(Array) });
  });
});

describe('the one error dialect (docs/architecture.md, "One error dialect")', () => {
  it('When every operation gets an unknown query parameter, an unknown body field, a missing field, a JSON body sent as text/plain, a body over the limit and its key as Authorization: Bearer, then 400 invalid_request naming it in words, 415, 413 with details.limit_bytes, and the Bearer key is accepted', async () => {
    const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
    const problems = await errorDialectProblems(doc, operations, {
      baseUrl: h.baseUrl,
      credentials: { ...credentials, bearer: credentials.apiKey ?? '' },
      bodyLimitBytes: 100 * 1024,
    });
    expect(problems).toEqual([]);
  });
});

describe('regressions the fuzzing found', () => {
  it('When a path parameter is not valid percent-encoding (GET /api/discover/skills/%), then 400 invalid_request in the envelope, not 500', async () => {
    for (const path of ['/api/discover/skills/%', '/api/discover/skills/%E0%A4%A']) {
      const res = await h.call('GET', path);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'The URL path is not valid percent-encoding',
        code: 'invalid_request',
        requestId: expect.any(String),
      });
    }
  });

  it('When a skill is registered with NUL characters in its description, then 400 invalid_request names the field, not 500', async () => {
    const res = await h.register(credentials.apiKey ?? '', buildSkill({ description: '\u0000'.repeat(10) }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'invalid_request',
      details: {
        issues: [
          {
            path: 'body.description',
            code: 'invalid_characters',
            message: 'must not contain the NUL character (U+0000)',
          },
        ],
      },
    });
  });
});
