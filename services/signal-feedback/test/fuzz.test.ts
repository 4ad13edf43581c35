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
import { AccountRepository } from '../src/data/accounts';
import { newSessionTokens } from '../src/domain/sessions';
import { startHarness, type Harness } from './support/harness';

// Property-based fuzzing of every operation of signal-feedback's own /openapi.json, read from the
// running service (real PostgreSQL): valid and hostile requests, with a real session (cookie and CSRF
// token) or product key, without credentials and with garbage ones. Every answer is judged against
// the document (see @repo/openapi-fuzz, fuzzOperations). A failure prints fast-check's seed and
// path; replay it with FUZZ_SEED/FUZZ_PATH.
jest.setTimeout(120_000);

const RUN_SETTINGS = fuzzRunSettings(60);
const PASSWORD = 'correct horse battery staple';

let h: Harness;
let operations: FuzzOperation[];
let userId: string;
/** Credential values by security scheme name; replaced when a fuzzed log-out or key rotation ends them. */
const credentials: Record<string, string> = {};
/** Records that exist, and the session's CSRF token, so some generated requests get past the checks. */
const examples: Record<string, string[]> = {
  id: [],
  product_id: [],
  context_id: [],
  'x-csrf-token': [],
  type: ['payment_failed', 'checkout_completed'],
};
const seen = new Map<string, Map<number, number>>();

/** A JSON request with the current session and CSRF token. */
async function asUser(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(h.baseUrl + path, {
    method,
    headers: {
      cookie: `sf_session=${credentials.session ?? ''}`,
      'x-csrf-token': examples['x-csrf-token']?.[0] ?? '',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** A context of the fuzzing product, whose id joins the known ids. */
async function addContext(productId: string): Promise<void> {
  const context = await asUser('POST', '/api/context', {
    product_id: productId,
    name: 'Checkout',
    content: 'Cart to payment confirmation',
    positive_signals: ['checkout_completed'],
    negative_signals: ['payment_failed'],
  });
  examples.id?.push(String(context.id));
  examples.context_id?.push(String(context.id));
}

/**
 * A new session for the fuzzing user, stored as log-in stores one: after a fuzzed log-out, the
 * service's own log-in may be slowed by the fuzzed failed log-ins of this address.
 */
async function replaceSession(): Promise<void> {
  const tokens = newSessionTokens();
  await new AccountRepository(h.db).createSession({
    tokenHash: tokens.tokenHash,
    userId,
    csrfToken: tokens.csrfToken,
    expiresAt: new Date(Date.now() + 3_600_000),
  });
  credentials.session = tokens.token;
  examples['x-csrf-token']?.splice(0, Infinity, tokens.csrfToken);
}

/** Keeps the credentials and known ids usable after answers that ended or removed them. */
async function onResponse(request: FuzzRequest, response: FuzzResponse): Promise<void> {
  const statuses = seen.get(request.operationId) ?? new Map<number, number>();
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  seen.set(request.operationId, statuses);
  if (request.auth.mode !== 'valid' || response.status >= 300) return;
  const body = response.json as Record<string, unknown> | undefined;
  if (request.operationId === 'logout') await replaceSession();
  if (request.operationId === 'rotateProductKey' && typeof body?.api_key === 'string') {
    // The fuzzing product's key was replaced: the suite holds the new one.
    if (body.id === examples.product_id?.[0]) {
      credentials.apiKey = body.api_key;
      credentials.apiKeyQuery = body.api_key;
    }
  }
  if (request.operationId === 'deleteContext' && body?.id === examples.context_id?.at(-1))
    await addContext(examples.product_id?.[0] ?? '');
  if (request.operationId === 'deleteProduct' && body?.id === examples.product_id?.[0]) {
    // The fuzzing product is gone with its key and contexts: the suite goes on with a new one.
    await addProduct();
  }
}

/** A product (on the Scale plan's limits) with one context; its key and ids become the suite's. */
async function addProduct(): Promise<void> {
  const product = await asUser('POST', '/api/products', { name: 'Fuzzed app' });
  credentials.apiKey = String(product.api_key);
  credentials.apiKeyQuery = String(product.api_key);
  examples.id?.unshift(String(product.id));
  examples.product_id?.unshift(String(product.id));
  await addContext(String(product.id));
}

beforeAll(async () => {
  h = await startHarness('signal_feedback_fuzz_test');
  // A real account and session through the API; on the Scale plan so quotas do not hide the paths.
  const email = `fuzz-${Date.now()}@example.com`;
  const signup = await fetch(`${h.baseUrl}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  if (signup.status !== 201) throw new Error(`signup failed: ${signup.status}`);
  const me = (await signup.json()) as { csrf_token: string; user: { id: string } };
  userId = me.user.id;
  credentials.session = /sf_session=([^;]+)/.exec(signup.headers.get('set-cookie') ?? '')?.[1] ?? '';
  examples['x-csrf-token']?.push(me.csrf_token);
  await new AccountRepository(h.db).setPlan(email, 'scale');

  await addProduct();
  // Enough signals for the analysis to write a proposal from the evidence (no LLM configured).
  const signals = await fetch(`${h.baseUrl}/api/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': credentials.apiKey ?? '' },
    body: JSON.stringify([
      ...Array.from({ length: 8 }, (_, i) => ({ type: 'payment_failed', payload: { attempt: i } })),
      ...Array.from({ length: 4 }, () => ({ type: 'checkout_completed' })),
    ]),
  });
  if (signals.status !== 200) throw new Error(`signals failed: ${signals.status}`);
  const run = (await asUser('POST', '/api/analysis/run')) as { proposals?: { id: string }[] };
  for (const p of run.proposals ?? []) examples.id?.push(p.id);

  const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
  operations = fuzzOperations(doc, {
    credentialSchemes: ['apiKey', 'apiKeyQuery', 'session'],
    examples,
    garbageCredentials: {
      // Keys and session tokens of the right shape that were never issued, beside generic garbage.
      apiKey: fc.oneof(
        fc.stringMatching(/^spk_[1-9A-HJ-NP-Za-km-z]{43,44}$/),
        fc.constantFrom('', 'spk_', ' '),
      ),
      apiKeyQuery: fc.oneof(
        fc.stringMatching(/^spk_[1-9A-HJ-NP-Za-km-z]{43,44}$/),
        fc.constantFrom('', 'spk_'),
      ),
      session: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{43}$/), fc.constantFrom('', 'x'.repeat(101))),
    },
  });
});

afterAll(async () => {
  if (process.env.FUZZ_REPORT) {
    const lines = [...seen].map(
      ([op, statuses]) => `${op}: ${[...statuses].map(([s, n]) => `${s}×${n}`).join(' ')}`,
    );
    process.stdout.write(`signal-feedback statuses\n${lines.join('\n')}\n`);
  }
  await h?.close();
});

const options = (): FuzzCheckOptions => ({
  baseUrl: h.baseUrl,
  credentials,
  ...RUN_SETTINGS,
  onResponse,
});

describe('fuzzing signal-feedback from its own OpenAPI document', () => {
  it('When the document is read from the running service, then it has the operations of the contract', () => {
    const names = operations.map((o) => `${o.method} ${o.path}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'POST /api/signals',
        'POST /api/ingest',
        'GET /api/proposals',
        'POST /api/products',
        'POST /api/context',
        'GET /api/context',
        'PATCH /api/context',
        'DELETE /api/context',
      ]),
    );
  });

  it('When every operation gets valid requests with a real session or key, none or a garbage one, then no answer is 5xx, every status is documented and every error is the envelope', async () => {
    const failures = await fuzzCheckAll(operations, 'valid', options());
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
  });

  it('When every operation gets hostile requests (wrong types, missing fields, out-of-range numbers, oversized and hostile strings, __proto__ keys, deep nesting, malformed JSON, random bytes), then no answer is 5xx, every status is documented, every error is the envelope and nothing that breaks the document is accepted', async () => {
    const failures = await fuzzCheckAll(operations, 'hostile', options());
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
    // __proto__ keys carried { fuzz_polluted: true }: no prototype of the service's process took it.
    expect(({} as Record<string, unknown>).fuzz_polluted).toBeUndefined();
  });

  it('When the fuzzing is over, then the service is still ready and answers normal requests', async () => {
    expect((await fetch(`${h.baseUrl}/readyz`)).status).toBe(200);
    const sent = await fetch(`${h.baseUrl}/api/signals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': credentials.apiKey ?? '' },
      body: JSON.stringify({ type: 'checkout_completed', payload: { step: 'confirm' } }),
    });
    expect(sent.status).toBe(200);
    expect(await sent.json()).toEqual({ received: 1 });
    const me = await asUser('GET', '/api/auth/me');
    expect(me).toMatchObject({ user: { id: userId } });
  });
});

describe('the one error dialect (docs/architecture.md, "One error dialect")', () => {
  it('When every operation gets an unknown query parameter, an unknown body field, a missing field, a JSON body sent as text/plain, a body over the limit and its key as Authorization: Bearer, then 400 invalid_request naming it in words, 415, 413 with details.limit_bytes, and the Bearer key is accepted', async () => {
    const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
    const problems = await errorDialectProblems(doc, operations, {
      baseUrl: h.baseUrl,
      credentials: { ...credentials, bearer: credentials.apiKey ?? '' },
      bodyLimitBytes: 1024 * 1024,
      headers: { 'x-csrf-token': examples['x-csrf-token']?.[0] ?? '' },
    });
    expect(problems).toEqual([]);
  });
});

describe('regressions the fuzzing found', () => {
  it('When a signal payload is nested 5000 levels deep, then 400 invalid_request names the payload, not 500', async () => {
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    for (const [path, body, field] of [
      ['/api/ingest', `[{"type":"checkout_completed","payload":{"pB;B-5 ":${deep}}}]`, 'body.0.payload'],
      ['/api/signals', `{"type":"checkout_completed","payload":{"a":${deep}}}`, 'body.payload'],
    ] as const) {
      const res = await fetch(h.baseUrl + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': credentials.apiKey ?? '' },
        body,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: 'invalid_request',
        details: { issues: [{ path: field, message: 'must not be nested deeper than 64 levels' }] },
      });
    }
  });

  it('When a path parameter is not valid percent-encoding (PATCH /api/proposals/%), then 400 invalid_request, not 500', async () => {
    const res = await fetch(`${h.baseUrl}/api/proposals/%`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'x-api-key': credentials.apiKey ?? '' },
      body: JSON.stringify({ status: 'approved' }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_request' });
  });

  it('When a client without a session logs out, then 204, as the document now says (the session is optional)', async () => {
    const res = await fetch(`${h.baseUrl}/api/auth/logout`, { method: 'POST' });
    expect(res.status).toBe(204);
  });
});
