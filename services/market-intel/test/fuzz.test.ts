import { getBase58Decoder } from '@solana/kit';
import fc from 'fast-check';
import { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY, type RunnerHeartbeat } from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
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
import { buildReport, startHarness, type Harness } from './support/harness';

// Property-based fuzzing of every operation of market-intel's own /openapi.json, read from the
// running service (real PostgreSQL, RabbitMQ and the local Solana ledger the harness spawns): valid
// and hostile requests, unpaid or with garbage X-PAYMENT / PAYMENT-SIGNATURE headers (random strings,
// base64 of random JSON, well-formed x402 envelopes around random 64-byte signatures or random
// transactions). First with no runner (compute answers its documented preflight 503), then with a
// healthy runner (garbage payments must be refused with 402, or 429 once the client's verification
// budget is spent). A failure prints fast-check's seed and path; replay it with FUZZ_SEED/FUZZ_PATH.
jest.setTimeout(180_000);

const RUN_SETTINGS = fuzzRunSettings(30);
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const base58 = getBase58Decoder();
/** The client address of the fuzzing traffic (documentation range). */
const FUZZ_CLIENT = '203.0.113.77';

let h: Harness;
let runner: Broker | undefined;
let operations: FuzzOperation[];
/** The v2 offers (PAYMENT-REQUIRED `accepts`) of every paid route, to wrap around garbage transactions. */
const offers: unknown[] = [];
const examples: Record<string, unknown[]> = {
  sector: ['fintech', 'dev-tools', 'nonexistent-sector'],
  // A public address literal: accepted without a DNS lookup (nothing is delivered: no job runs).
  webhook_url: ['https://93.184.216.34/hooks/fuzz'],
  // The string form has lines of its own (`Key: value`) that its JSON Schema cannot say: a valid one,
  // so that a request drawn as valid is valid.
  session_config: ['Profile: Solo\nSignal: fuzzing', { profile: 'Solo' }],
};
const seen = new Map<string, Map<number, number>>();

function count(request: FuzzRequest, response: FuzzResponse): void {
  const statuses = seen.get(request.operationId) ?? new Map<number, number>();
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  seen.set(request.operationId, statuses);
}

const base64 = (value: unknown) => Buffer.from(JSON.stringify(value) ?? 'null', 'utf8').toString('base64');
const signature = fc.uint8Array({ minLength: 64, maxLength: 64 }).map((bytes) => base58.decode(bytes));
const network = fc.constantFrom(
  'solana',
  'solana-devnet',
  'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  'ethereum',
  '',
);
const transaction = fc
  .uint8Array({ minLength: 1, maxLength: 400 })
  .map((b) => Buffer.from(b).toString('base64'));

/** Garbage for X-PAYMENT: random text, base64 of random JSON, well-formed v1/v2 envelopes around random proofs. */
function garbageXPayment(): fc.Arbitrary<string> {
  const v1 = fc.record({
    x402Version: fc.constantFrom<unknown>(1, 2, '1', 0),
    scheme: fc.constantFrom('exact', 'upto', ''),
    network,
    payload: fc.oneof(
      signature.map((txSignature) => ({ txSignature })),
      transaction.map((tx) => ({ transaction: tx })),
      fc.jsonValue({ maxDepth: 2 }),
    ),
  });
  return fc.oneof(
    // Each of these costs the service about 1.2 s of bounded getTransaction retries before its 402.
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom('solana', 'solana-devnet'), signature)
        .map(([n, s]) =>
          base64({ x402Version: 1, scheme: 'exact', network: n, payload: { txSignature: s } }),
        ),
    },
    { weight: 2, arbitrary: v1.map(base64) },
    { weight: 1, arbitrary: v1.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(base64) },
    {
      weight: 1,
      arbitrary: fc.string({
        unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
        maxLength: 200,
      }),
    },
    { weight: 1, arbitrary: fc.base64String({ maxLength: 400 }) },
  );
}

/** Garbage for PAYMENT-SIGNATURE: v2 payloads around a real offer (or junk) and random transactions. */
function garbagePaymentSignature(): fc.Arbitrary<string> {
  const accepted = fc.oneof(
    fc.nat().map((i) => offers[i % Math.max(1, offers.length)] ?? {}),
    fc.jsonValue({ maxDepth: 2 }),
  );
  return fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .tuple(accepted, transaction)
        .map(([a, tx]) => base64({ x402Version: 2, accepted: a, payload: { transaction: tx } })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(accepted, signature)
        .map(([a, s]) => base64({ x402Version: 2, accepted: a, payload: { txSignature: s } })),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(base64) },
    { weight: 1, arbitrary: fc.base64String({ maxLength: 400 }) },
  );
}

/** Publishes one heartbeat of a runner whose LLM and search answer. */
async function healthyRunner(): Promise<void> {
  runner ??= await Broker.connect({ url: h.amqpUrl, connectionName: 'fuzz runner', logger: silent });
  await runner.waitForConnection();
  const heartbeat: RunnerHeartbeat = {
    v: 1,
    runnerId: 'fuzz-runner',
    at: new Date().toISOString(),
    intervalMs: 5000,
    llm: { ok: true, latency_ms: 10, error: null, errorClass: null },
    search: null,
    inFlightSteps: 0,
  };
  await runner.publish(COMPUTE_TOPOLOGY.exchanges.heartbeat, '', heartbeat, { persistent: false });
  await waitFor('a healthy runner', async () => (await fetch(`${h.baseUrl}/api/v1/health`)).status === 200);
}

beforeAll(async () => {
  h = await startHarness('market_intel_fuzz_test', {
    // One heartbeat keeps the runner fresh for the whole suite. Behind one trusted proxy, the fuzzing
    // comes from FUZZ_CLIENT (its verification budget runs out) and the final payment from 127.0.0.1.
    env: {
      RUNNER_STALE_AFTER_MS: '600000',
      WEBHOOK_SECRET: 'fuzz-webhook-secret-0123456789',
      TRUST_PROXY: '1',
    },
  });
  await h.reports.importReport(buildReport(), 'import');
  const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
  for (const path of ['/api/v1/scout/gaps', '/api/v1/scout/brief', '/api/v1/scout/keywords']) {
    const offer = (await fetch(h.baseUrl + path)).headers.get('payment-required');
    const accepts = offer
      ? (JSON.parse(Buffer.from(offer, 'base64').toString('utf8')) as { accepts?: unknown[] }).accepts
      : undefined;
    offers.push(...(accepts ?? []));
  }
  operations = fuzzOperations(doc, {
    examples,
    garbageCredentials: { x402: garbageXPayment(), x402v2: garbagePaymentSignature() },
  });
}, 120_000);

afterAll(async () => {
  if (process.env.FUZZ_REPORT) {
    const lines = [...seen].map(
      ([op, statuses]) => `${op}: ${[...statuses].map(([s, n]) => `${s}×${n}`).join(' ')}`,
    );
    process.stdout.write(`market-intel statuses\n${lines.join('\n')}\n`);
  }
  await runner?.close(1000);
  await h?.close();
});

const options = (extra: Partial<FuzzCheckOptions> = {}): FuzzCheckOptions => ({
  baseUrl: h.baseUrl,
  headers: { 'x-forwarded-for': FUZZ_CLIENT },
  ...RUN_SETTINGS,
  onResponse: count,
  ...extra,
});

describe('fuzzing market-intel from its own OpenAPI document', () => {
  it('When the document is read from the running service, then it has every operation of the contract', () => {
    expect(operations.map((o) => `${o.method} ${o.path}`).sort()).toEqual([
      'GET /.well-known/did.json',
      'GET /.well-known/jwks.json',
      'GET /api/v1/health',
      'GET /api/v1/jobs/{jobId}',
      'GET /api/v1/scout/brief',
      'GET /api/v1/scout/gaps',
      'GET /api/v1/scout/keywords',
      'GET /api/v1/scout/pain-clusters',
      'GET /api/v1/scout/trends',
      'GET /api/v1/sectors',
      'POST /api/v1/forge/ideate',
      'POST /api/v1/prove/debate',
    ]);
  });

  it('When no runner is up and every operation gets valid requests, unpaid or with garbage payment headers, then no answer is 5xx but the documented 503s, every status is documented and every error is the envelope (402: Error402)', async () => {
    const failures = await fuzzCheckAll(operations, 'valid', options());
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
  });

  it('When no runner is up and every operation gets hostile requests (wrong types, missing fields, out-of-range numbers, oversized and hostile strings, __proto__ keys, deep nesting, malformed JSON, random bytes), then likewise, and nothing that breaks the document is accepted', async () => {
    const failures = await fuzzCheckAll(operations, 'hostile', options());
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
    expect(({} as Record<string, unknown>).fuzz_polluted).toBeUndefined();
  });

  it('When a runner is healthy and paid operations get conforming requests, unpaid or with garbage payment headers, then every answer is 402 or 429 unless the request was refused before any payment (never 5xx, never served)', async () => {
    await healthyRunner();
    // PAYMENT-SIGNATURE garbage wraps the service's own v2 offers (random transactions inside).
    expect(offers.length).toBeGreaterThan(0);
    const paid = operations.filter((o) => o.secured);
    const refused = new Set<string>();
    const failures = await fuzzCheckAll(
      paid,
      'valid',
      options({
        onResponse: (request, response) => {
          count(request, response);
          if (response.status === 402 || response.status === 429) {
            refused.add(request.operationId);
            return;
          }
          // Checks that come before the payment (services/market-intel/README.md, "Endpoints": 400 or
          // 422, nothing charged): rules beyond the schema, such as a webhook_url that does not resolve
          // or a NUL character.
          const code = (response.json as { code?: unknown } | undefined)?.code;
          const validation =
            (response.status === 400 || response.status === 422) && code === 'invalid_request';
          if (!validation)
            throw new Error(
              `an unpaid or garbage-paid request answered ${response.status}: ${response.text.slice(0, 300)}`,
            );
        },
      }),
    );
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
    // Every paid operation got as far as refusing a missing or garbage payment.
    expect([...refused].sort()).toEqual(paid.map((o) => o.operationId).sort());
  });

  it('When the fuzzing is over, then the service is still ready and healthy and sells data', async () => {
    // A fresh heartbeat: the runner's health must not hang on which test ran before, or how long ago.
    await healthyRunner();
    expect((await fetch(`${h.baseUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${h.baseUrl}/api/v1/health`)).status).toBe(200);
    expect((await fetch(`${h.baseUrl}/api/v1/sectors`)).status).toBe(200);
    const paid = await h.pay('/api/v1/scout/gaps?sector=fintech&limit=2');
    expect(paid.response.status).toBe(200);
  });
});

describe('the one error dialect (docs/architecture.md, "One error dialect")', () => {
  it('When every operation gets an unknown query parameter (twice, through the hot path), an unknown body field, a missing field, a JSON body sent as text/plain and a body over the limit, then 400 (422 for compute bodies) invalid_request naming it before any 402, 415 and 413 with details.limit_bytes', async () => {
    const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
    const problems = await errorDialectProblems(doc, operations, {
      baseUrl: h.baseUrl,
      credentials: {},
      bodyLimitBytes: 100 * 1024,
      headers: { 'x-forwarded-for': FUZZ_CLIENT },
      bodyStatus: { forgeIdeate: 422, proveDebate: 422 },
    });
    expect(problems).toEqual([]);
  });

  it('When a Data API URL carries a misspelt parameter (?sectr=fintech), then it is a 400 naming it and suggesting `sector` every time, never a 402, and nothing is charged', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const res = await fetch(`${h.baseUrl}/api/v1/scout/gaps?sectr=fintech`);
      expect(res.status).toBe(400);
      expect(res.headers.get('payment-required')).toBeNull();
      expect(await res.json()).toMatchObject({
        code: 'invalid_request',
        error: 'query parameter `sectr` is not a parameter of this operation; did you mean `sector`?',
        details: { issues: [{ path: 'query.sectr', code: 'unknown_parameter' }] },
      });
    }
    // The URL spelt right is still offered for payment.
    expect((await fetch(`${h.baseUrl}/api/v1/scout/gaps?sector=fintech`)).status).toBe(402);
  });
});

describe('regressions the fuzzing found', () => {
  it('When a path parameter is not valid percent-encoding (GET /api/v1/jobs/%), then 400 invalid_request in the envelope, not 500', async () => {
    const res = await fetch(`${h.baseUrl}/api/v1/jobs/%`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: 'The URL path is not valid percent-encoding',
      code: 'invalid_request',
      requestId: expect.any(String),
    });
  });

  it('When the idea of a paid debate holds a NUL character, then 422 before the payment is taken (it was verified, then answered 500 with no job)', async () => {
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const res = await h.postWithProof(
      '/api/v1/prove/debate',
      { idea: 'A reconciliation copilot \u0000 for mid-size fintechs' },
      signature,
    );
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({
      code: 'invalid_request',
      details: {
        issues: [
          {
            path: 'body.idea',
            code: 'invalid_characters',
            message: 'must not contain the NUL character (U+0000)',
          },
        ],
      },
    });
    expect(await h.paymentRows(signature)).toEqual([]);
  });
});
