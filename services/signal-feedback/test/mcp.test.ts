import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import request from 'supertest';
import { toJsonSchema } from '@repo/schemas';
import { mcpClientPool, metricValue, scrape, toolErrorOf } from '@repo/service-kit/testing';
import { Deployment, DeploymentList, RecordDeploymentArgs } from '../src/schemas/deployments';
import { ListProposalsArgs, ProposalList } from '../src/schemas/proposals';
import { ReceivedResponse, sendSignalsArgs } from '../src/schemas/signals';
import {
  createContext,
  createProduct,
  signUp,
  startHarness,
  type Harness,
  type SignedIn,
} from './support/harness';

const MAX_BATCH = 50;

let h: Harness;
/** MCP clients as an agent framework runs them (official SDK, Streamable HTTP), closed after the suite. */
const clients = mcpClientPool(() => h.baseUrl);
const client = (headers?: Record<string, string>) => clients.connect(headers);

beforeAll(async () => {
  h = await startHarness('signal_feedback_mcp_test', { env: { MAX_BATCH_SIZE: String(MAX_BATCH) } });
});
afterAll(async () => {
  await clients.closeAll();
  await h?.close();
});

interface Setup {
  user: SignedIn;
  product: { id: string; apiKey: string };
  agent: Client;
}

/** A user with one product and an MCP client carrying its key. */
async function setup(): Promise<Setup> {
  const user = await signUp(h);
  const product = await createProduct(user);
  return { user, product, agent: await client({ 'x-api-key': product.apiKey }) };
}

const signalRows = (productId: string) =>
  h.db.$queryRawUnsafe<{ type: string; context_id: string | null; sentiment: string; payload: unknown }[]>(
    'SELECT type, context_id, sentiment::text, payload FROM signals WHERE product_id = $1::uuid ORDER BY id',
    productId,
  );

const allSignals = async () =>
  (await h.db.$queryRawUnsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM signals'))[0]!.n;

/** The current value of a series on the metrics listener (0 when it does not exist yet). */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  return metricValue(await scrape(h.metricsUrl), name, labels) ?? 0;
}

const toolCalls = (tool: string, code: string) => metric('mcp_tool_calls_total', { tool, code });

describe('signal-feedback MCP endpoint', () => {
  test('When an agent lists the tools, then it gets the four tools with the HTTP API schemas', async () => {
    const anonymous = await client();
    const { tools } = await anonymous.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'list_deployments',
      'list_proposals',
      'record_deployment',
      'send_signals',
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('send_signals')?.inputSchema).toEqual(
      toJsonSchema(sendSignalsArgs(MAX_BATCH), 'input'),
    );
    expect(byName.get('send_signals')?.outputSchema).toEqual(toJsonSchema(ReceivedResponse, 'output'));
    expect(byName.get('list_proposals')?.inputSchema).toEqual(toJsonSchema(ListProposalsArgs, 'input'));
    expect(byName.get('list_proposals')?.outputSchema).toEqual(toJsonSchema(ProposalList, 'output'));
    expect(byName.get('send_signals')?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get('list_proposals')?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('record_deployment')?.inputSchema).toEqual(toJsonSchema(RecordDeploymentArgs, 'input'));
    expect(byName.get('record_deployment')?.outputSchema).toEqual(toJsonSchema(Deployment, 'output'));
    expect(byName.get('list_deployments')?.outputSchema).toEqual(toJsonSchema(DeploymentList, 'output'));
    expect(byName.get('list_deployments')?.annotations?.readOnlyHint).toBe(true);
    for (const tool of tools) {
      expect(tool.description).toMatch(/Free within the plan's/);
      expect(tool.description).toMatch(/x-api-key header/);
    }
    expect(anonymous.getInstructions()).toMatch(/spk_ key/);
    expect(anonymous.getServerVersion()).toMatchObject({ name: 'signal-feedback' });
  });

  test('When send_signals is called with a valid key, then the signals are stored, routed and classed, and it answers received', async () => {
    const { user, product, agent } = await setup();
    const context = await createContext(user, product.id);
    const [okBefore, acceptedBefore] = [
      await toolCalls('send_signals', 'ok'),
      await metric('signals_accepted_total'),
    ];
    const result = await agent.callTool({
      name: 'send_signals',
      arguments: {
        signals: [
          { type: 'checkout_completed', payload: { step: 'confirm' } },
          { type: 'payment_failed', payload: { error_code: 'card_declined' }, context_id: context.id },
          { type: 'page_view' },
        ],
      },
    });
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toEqual({ received: 3 });
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual({ received: 3 });
    expect(await signalRows(product.id)).toEqual([
      {
        type: 'checkout_completed',
        context_id: context.id,
        sentiment: 'positive',
        payload: { step: 'confirm' },
      },
      {
        type: 'payment_failed',
        context_id: context.id,
        sentiment: 'negative',
        payload: { error_code: 'card_declined' },
      },
      { type: 'page_view', context_id: context.id, sentiment: 'neutral', payload: null },
    ]);
    expect((await user.agent.get('/api/auth/me')).body.usage.signals).toBe(3);
    expect((await toolCalls('send_signals', 'ok')) - okBefore).toBe(1);
    expect((await metric('signals_accepted_total')) - acceptedBefore).toBe(3);
  });

  test('When the MCP connection sends the key as Authorization: Bearer, then send_signals and list_proposals work as with x-api-key', async () => {
    const { product } = await setup();
    const bearer = await client({ authorization: `Bearer ${product.apiKey}` });
    const sent = await bearer.callTool({
      name: 'send_signals',
      arguments: { signals: [{ type: 'bearer_signal', payload: { via: 'bearer' } }] },
    });
    expect(sent.isError).toBeUndefined();
    expect(sent.structuredContent).toEqual({ received: 1 });
    expect(await signalRows(product.id)).toEqual([
      { type: 'bearer_signal', context_id: null, sentiment: 'neutral', payload: { via: 'bearer' } },
    ]);
    const listed = await bearer.callTool({ name: 'list_proposals', arguments: {} });
    expect(listed.isError).toBeUndefined();
    expect(listed.structuredContent).toEqual({ proposals: [] });
    // A bearer token that is not a key is refused like a wrong x-api-key.
    const wrong = await client({ authorization: 'Bearer spk_short' });
    expect(
      toolErrorOf(await wrong.callTool({ name: 'send_signals', arguments: { signals: [{ type: 'x' }] } })),
    ).toMatchObject({ code: 'unauthorized', error: 'API key invalid' });
    expect(await signalRows(product.id)).toHaveLength(1);
  });

  test('When send_signals is called without a key or with a wrong one, then it is an unauthorized tool error and nothing is stored', async () => {
    const { product } = await setup();
    const before = { rows: await allSignals(), calls: await toolCalls('send_signals', 'unauthorized') };
    const args = { signals: [{ type: 'page_view' }] };

    const anonymous = await client();
    expect(toolErrorOf(await anonymous.callTool({ name: 'send_signals', arguments: args }))).toMatchObject({
      code: 'unauthorized',
      error: 'API key missing: send it in the x-api-key header or as Authorization: Bearer <key>',
      requestId: expect.any(String),
    });
    const forged = product.apiKey.slice(0, -2) + (product.apiKey.endsWith('A') ? 'BB' : 'AA');
    for (const key of [forged, 'spk_short', 'not-a-key']) {
      const wrong = await client({ 'x-api-key': key });
      expect(toolErrorOf(await wrong.callTool({ name: 'send_signals', arguments: args }))).toMatchObject({
        code: 'unauthorized',
        error: 'API key invalid',
      });
    }
    expect(await allSignals()).toBe(before.rows);
    expect((await toolCalls('send_signals', 'unauthorized')) - before.calls).toBe(4);
  });

  test('When a signal is invalid (no type, NUL in a string, wrong types), then the batch is an invalid_request naming arguments.signals.<index> and nothing is stored', async () => {
    const { product, agent } = await setup();
    const missingType = toolErrorOf(
      await agent.callTool({
        name: 'send_signals',
        arguments: { signals: [{ type: 'ok' }, { payload: { a: 1 } }] },
      }),
    );
    expect(missingType).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'arguments.signals.1.type', message: expect.any(String) }] },
    });

    const nulType = toolErrorOf(
      await agent.callTool({ name: 'send_signals', arguments: { signals: [{ type: 'bad\u0000type' }] } }),
    );
    expect(nulType).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'arguments.signals.0.type' }] },
    });

    const nulPayload = toolErrorOf(
      await agent.callTool({
        name: 'send_signals',
        arguments: { signals: [{ type: 'ok' }, { type: 'ok', payload: { note: 'a\u0000b' } }] },
      }),
    );
    expect(nulPayload).toMatchObject({
      code: 'invalid_request',
      details: {
        issues: [
          {
            path: 'arguments.signals.1.payload.note',
            message: 'must not contain the NUL character (U+0000)',
          },
        ],
      },
    });

    const wrongTypes = toolErrorOf(
      await agent.callTool({
        name: 'send_signals',
        arguments: { signals: [{ type: 42 }, { type: 'x', payload: 'text', context_id: 'not-a-uuid' }] },
      }),
    );
    expect(wrongTypes.code).toBe('invalid_request');
    const paths = (wrongTypes.details as { issues: { path: string }[] }).issues.map((d) => d.path).sort();
    expect(paths).toEqual([
      'arguments.signals.0.type',
      'arguments.signals.1.context_id',
      'arguments.signals.1.payload',
    ]);

    for (const envelope of [missingType, nulType, nulPayload, wrongTypes])
      for (const d of (envelope.details as { issues: { path: string }[] }).issues)
        expect(d.path).toMatch(/^arguments\.signals\./);
    expect(await signalRows(product.id)).toHaveLength(0);
  });

  test('When the batch is empty, longer than MAX_BATCH_SIZE or not an array, then it is refused naming arguments.signals and nothing is stored', async () => {
    const { product, agent } = await setup();
    const tooMany = Array.from({ length: MAX_BATCH + 1 }, (_, i) => ({ type: `t${i}` }));
    for (const signals of [tooMany, [], 'page_view']) {
      const envelope = toolErrorOf(await agent.callTool({ name: 'send_signals', arguments: { signals } }));
      expect(envelope).toMatchObject({
        code: 'invalid_request',
        details: { issues: [{ path: 'arguments.signals' }] },
      });
    }
    expect(toolErrorOf(await agent.callTool({ name: 'send_signals', arguments: {} })).details).toMatchObject({
      issues: [{ path: 'arguments.signals' }],
    });
    expect(await signalRows(product.id)).toHaveLength(0);
    const exactly = await agent.callTool({
      name: 'send_signals',
      arguments: { signals: tooMany.slice(0, MAX_BATCH) },
    });
    expect(exactly.structuredContent).toEqual({ received: MAX_BATCH });
    expect(await signalRows(product.id)).toHaveLength(MAX_BATCH);
  });

  test('When a batch would cross the plan quota, then it is a quota_exceeded tool error with the details and nothing of it is stored', async () => {
    const { user, product, agent } = await setup();
    await h.db.$executeRawUnsafe(
      `INSERT INTO usage_counters (user_id, month, signals, proposals) VALUES ($1::uuid, date_trunc('month', now() AT TIME ZONE 'utc')::date, 498, 0)`,
      user.userId,
    );
    const before = {
      refused: await metric('signals_refused_total', { reason: 'quota' }),
      calls: await toolCalls('send_signals', 'quota_exceeded'),
    };
    const signals = [{ type: 'a' }, { type: 'b' }, { type: 'c' }];
    const refused = toolErrorOf(await agent.callTool({ name: 'send_signals', arguments: { signals } }));
    expect(refused).toMatchObject({
      code: 'quota_exceeded',
      details: { plan: 'free', limit: 500, used: 498, requested: 3, resets_at: expect.any(String) },
    });
    expect(Date.parse((refused.details as { resets_at: string }).resets_at)).toBeGreaterThan(Date.now());
    expect(await signalRows(product.id)).toHaveLength(0);
    expect((await metric('signals_refused_total', { reason: 'quota' })) - before.refused).toBe(3);
    expect((await toolCalls('send_signals', 'quota_exceeded')) - before.calls).toBe(1);

    // What is left still fits; HTTP and MCP count against the same quota.
    const fits = await agent.callTool({ name: 'send_signals', arguments: { signals: signals.slice(0, 1) } });
    expect(fits.structuredContent).toEqual({ received: 1 });
    const http = await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send([{ type: 'd' }, { type: 'e' }]);
    expect(http.status).toBe(429);
    expect(http.body.details).toMatchObject({ used: 499, requested: 2 });
    expect((await user.agent.get('/api/auth/me')).body.usage.signals).toBe(499);
  });

  test('When a signal names a context of another product, then the batch is an invalid_request naming its context_id and nothing is stored', async () => {
    const owner = await setup();
    const foreign = await createContext(owner.user, owner.product.id);
    const { user, product, agent } = await setup();
    const own = await createContext(user, product.id);
    const before = await metric('signals_refused_total', { reason: 'invalid' });
    const envelope = toolErrorOf(
      await agent.callTool({
        name: 'send_signals',
        arguments: {
          signals: [
            { type: 'x', context_id: own.id },
            { type: 'y', context_id: foreign.id },
          ],
        },
      }),
    );
    expect(envelope).toMatchObject({
      code: 'invalid_request',
      details: {
        issues: [{ path: 'arguments.signals.1.context_id', message: 'is not a context of this product' }],
      },
    });
    expect(await signalRows(product.id)).toHaveLength(0);
    expect(await signalRows(owner.product.id)).toHaveLength(0);
    expect((await metric('signals_refused_total', { reason: 'invalid' })) - before).toBe(2);
  });

  test('When list_proposals is called with a key, then it answers what GET /api/proposals answers with that key', async () => {
    const { user, product, agent } = await setup();
    const checkout = await createContext(user, product.id);
    const search = await createContext(user, product.id, {
      name: 'Search',
      content: 'Query to result click',
      positive_signals: ['result_clicked'],
      negative_signals: ['no_results'],
    });
    // Two contexts with different failure rates, so the two proposals have different priorities.
    const signals = [
      ...Array.from({ length: 8 }, (_, i) => ({
        type: 'payment_failed',
        payload: { error_code: 'card_declined', attempt: i },
        context_id: checkout.id,
      })),
      ...Array.from({ length: 2 }, () => ({ type: 'checkout_completed', context_id: checkout.id })),
      ...Array.from({ length: 2 }, () => ({
        type: 'no_results',
        payload: { q: 'shoes' },
        context_id: search.id,
      })),
      ...Array.from({ length: 6 }, () => ({ type: 'result_clicked', context_id: search.id })),
    ];
    expect(
      (await agent.callTool({ name: 'send_signals', arguments: { signals } })).structuredContent,
    ).toEqual({
      received: signals.length,
    });
    const run = await user.agent.post('/api/analysis/run').set('x-csrf-token', user.csrf);
    expect(run.body.proposals_created).toBe(2);

    const http = (query: string) =>
      request(h.baseUrl).get(`/api/proposals${query}`).set('x-api-key', product.apiKey);
    const all = await agent.callTool({ name: 'list_proposals', arguments: {} });
    const httpAll = await http('');
    expect(httpAll.body).toHaveLength(2);
    expect(all.structuredContent).toEqual({ proposals: httpAll.body });
    expect((all.structuredContent as { proposals: { context_id: string }[] }).proposals[0]?.context_id).toBe(
      checkout.id,
    );

    const first = await agent.callTool({
      name: 'list_proposals',
      arguments: { status: 'pending', limit: 1 },
    });
    expect(first.structuredContent).toEqual({ proposals: (await http('?status=pending&limit=1')).body });
    expect((first.structuredContent as { proposals: unknown[] }).proposals).toHaveLength(1);
    const approved = await agent.callTool({ name: 'list_proposals', arguments: { status: 'approved' } });
    expect(approved.structuredContent).toEqual({ proposals: [] });

    // Another product's key sees none of them.
    const other = await setup();
    expect((await other.agent.callTool({ name: 'list_proposals', arguments: {} })).structuredContent).toEqual(
      {
        proposals: [],
      },
    );
  });

  test('When record_deployment and list_deployments are called with a key, then they do what the HTTP routes do, refusals included', async () => {
    const { user, product, agent } = await setup();
    const context = await createContext(user, product.id);
    const burst = [
      ...Array.from({ length: 6 }, () => ({ type: 'payment_failed', context_id: context.id })),
      ...Array.from({ length: 2 }, () => ({ type: 'checkout_completed', context_id: context.id })),
    ];
    await agent.callTool({ name: 'send_signals', arguments: { signals: burst } });
    const run = await user.agent.post('/api/analysis/run').set('x-csrf-token', user.csrf);
    const proposalId = run.body.proposals[0].id as string;

    // Pending: refused, nothing stored.
    const refused = toolErrorOf(
      await agent.callTool({ name: 'record_deployment', arguments: { proposal_id: proposalId } }),
    );
    expect(refused).toMatchObject({ code: 'proposal_not_approved', details: { status: 'pending' } });
    expect(await h.db.deployment.count({ where: { proposalId } })).toBe(0);

    await request(h.baseUrl)
      .patch(`/api/proposals/${proposalId}`)
      .set('x-api-key', product.apiKey)
      .send({ status: 'approved' })
      .expect(200);
    const recorded = await agent.callTool({
      name: 'record_deployment',
      arguments: { proposal_id: proposalId, version: 'v3.0.0', window_minutes: 60 },
    });
    expect(recorded.isError).toBeUndefined();
    expect(recorded.structuredContent).toMatchObject({
      proposal_id: proposalId,
      version: 'v3.0.0',
      window_minutes: 60,
      signal_type: 'payment_failed',
      verification: { provisional: true },
    });
    const id = (recorded.structuredContent as { id: string }).id;
    expect(await h.db.deployment.findUniqueOrThrow({ where: { id } })).toMatchObject({ version: 'v3.0.0' });

    const listed = await agent.callTool({ name: 'list_deployments', arguments: { proposal_id: proposalId } });
    const http = await request(h.baseUrl)
      .get(`/api/proposals/${proposalId}/deployments`)
      .set('x-api-key', product.apiKey)
      .expect(200);
    // Open windows are measured up to the moment of asking: compare the rest.
    type Listed = { verification: { verdict: string; provisional: boolean } };
    const withoutClock = (list: Listed[]) =>
      list.map((d) => ({
        ...d,
        verification: { verdict: d.verification.verdict, provisional: d.verification.provisional },
      }));
    expect(withoutClock((listed.structuredContent as { deployments: never[] }).deployments)).toEqual(
      withoutClock(http.body),
    );

    // Another product's key sees no such proposal; bad arguments name the field.
    const other = await setup();
    expect(
      toolErrorOf(
        await other.agent.callTool({ name: 'list_deployments', arguments: { proposal_id: proposalId } }),
      ).code,
    ).toBe('not_found');
    const bad = toolErrorOf(
      await agent.callTool({ name: 'record_deployment', arguments: { proposal_id: proposalId, alpha: 2 } }),
    );
    expect(bad).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'arguments.alpha' }] },
    });
    const future = toolErrorOf(
      await agent.callTool({
        name: 'record_deployment',
        arguments: { proposal_id: proposalId, deployed_at: new Date(Date.now() + 3_600_000).toISOString() },
      }),
    );
    expect(future).toMatchObject({
      code: 'invalid_request',
      details: { issues: [{ path: 'arguments.deployed_at' }] },
    });
    // A control that is the treated context, or not the product's, is refused at its argument.
    const contexts = toolErrorOf(
      await agent.callTool({
        name: 'record_deployment',
        arguments: { proposal_id: proposalId, control_contexts: [context.id, other.product.id] },
      }),
    );
    expect(contexts).toMatchObject({
      code: 'invalid_request',
      details: {
        issues: [
          { path: 'arguments.control_contexts.0', code: 'custom' },
          { path: 'arguments.control_contexts.1', code: 'invalid_value' },
        ],
      },
    });
    expect(await h.db.deployment.count({ where: { proposalId } })).toBe(1);
  });

  test('When list_proposals gets bad arguments or no key, then it is a tool error, never a 500', async () => {
    const { agent } = await setup();
    for (const args of [{ limit: 0 }, { limit: 201 }, { limit: '5' }, { status: 'done' }]) {
      const envelope = toolErrorOf(await agent.callTool({ name: 'list_proposals', arguments: args }));
      expect(envelope.code).toBe('invalid_request');
      expect((envelope.details as { issues: { path: string }[] }).issues[0]?.path).toMatch(
        /^arguments\.(limit|status)$/,
      );
    }
    const anonymous = await client();
    expect(toolErrorOf(await anonymous.callTool({ name: 'list_proposals', arguments: {} })).code).toBe(
      'unauthorized',
    );
  });

  test('When an MCP request carries only a session cookie, then it is not authenticated; with the key it needs no CSRF token', async () => {
    const email = `mcp-cookie-${Date.now()}@example.com`;
    const signup = await fetch(`${h.baseUrl}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery' }),
    });
    expect(signup.status).toBe(201);
    const cookie = signup.headers.get('set-cookie')!.split(';')[0]!;
    const { csrf_token: csrf } = (await signup.json()) as { csrf_token: string };
    const created = await fetch(`${h.baseUrl}/api/products`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf },
      body: JSON.stringify({ name: 'Cookie app' }),
    });
    expect(created.status).toBe(200);
    const product = (await created.json()) as { id: string; api_key: string };

    const cookieOnly = await client({ cookie });
    for (const name of ['send_signals', 'list_proposals']) {
      const args = name === 'send_signals' ? { signals: [{ type: 'x' }] } : {};
      expect(toolErrorOf(await cookieOnly.callTool({ name, arguments: args }))).toMatchObject({
        code: 'unauthorized',
        error: 'API key missing: send it in the x-api-key header or as Authorization: Bearer <key>',
      });
    }
    expect(await signalRows(product.id)).toHaveLength(0);

    // A cookie beside the key changes nothing: no x-csrf-token, even from another origin.
    const withKey = await client({
      cookie,
      'x-api-key': product.api_key,
      origin: 'https://elsewhere.example',
    });
    const sent = await withKey.callTool({ name: 'send_signals', arguments: { signals: [{ type: 'x' }] } });
    expect(sent.structuredContent).toEqual({ received: 1 });
    expect(await signalRows(product.id)).toHaveLength(1);
  });

  test('When /mcp is asked with GET or sent something that is not JSON-RPC, then it answers a 4xx, never a 500', async () => {
    const get = await request(h.baseUrl).get('/mcp');
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(get.body).toMatchObject({ code: 'method_not_allowed', requestId: expect.any(String) });
    const accept = 'application/json, text/event-stream';
    const badJson = await request(h.baseUrl)
      .post('/mcp')
      .set('accept', accept)
      .set('content-type', 'application/json')
      .send('{"jsonrpc":');
    expect(badJson.status).toBe(400);
    expect(badJson.body.code).toBe('invalid_json');
    const notRpc = await request(h.baseUrl).post('/mcp').set('accept', accept).send({ hello: 'world' });
    expect(notRpc.status).toBe(400);
  });

  test('When an agent reads /llms.txt, then it is markdown naming the service, the plans, the key and the links', async () => {
    const res = await fetch(`${h.baseUrl}/llms.txt`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/markdown/);
    const text = await res.text();
    expect(text.startsWith('# signal-feedback\n\n> ')).toBe(true);
    for (const link of ['(/openapi.json)', '(/docs)', '(/mcp)', '(/)']) expect(text).toContain(link);
    for (const fact of [
      'send_signals',
      'list_proposals',
      'x-api-key',
      'over HTTP and over MCP (`Authorization: Bearer <key>` works too)',
      'spk_',
      'POST /api/products',
      'quota_exceeded',
    ])
      expect(text).toContain(fact);
    expect(text).toContain(
      '- free (default): 500 signals, 3 proposals and 3 deployments per month, 1 product',
    );
    expect(text).toContain(
      '- scale ($299/month): 500,000 signals, unlimited proposals and unlimited deployments per month, unlimited products',
    );
    expect(text).toContain(`up to ${MAX_BATCH}`);
  });
});
