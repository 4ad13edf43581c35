import request from 'supertest';
import {
  freshDatabase,
  createContext,
  createProduct,
  signUp,
  startHarness,
  waitFor,
  type Harness,
  type SignedIn,
} from './support/harness';
import { llmAnswer, startFakeLlm, type FakeLlm } from './support/fake-llm';

let h: Harness;
let llm: FakeLlm;
beforeAll(async () => {
  llm = await startFakeLlm([llmAnswer()]);
  h = await startHarness('signal_feedback_proposals_test', {
    env: {
      LLM_BASE_URL: llm.baseUrl,
      LLM_API_KEY: 'test-key',
      LLM_MODEL: 'fake-model',
      LLM_TIMEOUT_MS: '5000',
    },
  });
});
afterAll(async () => {
  await h.close();
  await llm.close();
});
beforeEach(() => llm.reset([llmAnswer()]));

interface Setup {
  user: SignedIn;
  product: { id: string; apiKey: string };
  context: { id: string };
}

async function setup(): Promise<Setup> {
  const user = await signUp(h);
  const product = await createProduct(user);
  const context = await createContext(user, product.id);
  return { user, product, context };
}

/** A checkout burst: 6 card declines, 2 timeouts, 4 completions. */
async function sendBurst(s: Setup, base = h.baseUrl): Promise<void> {
  const signals = [
    ...Array.from({ length: 6 }, (_, i) => ({
      type: 'payment_failed',
      payload: { error_code: 'card_declined', step: 'payment', attempt: i },
    })),
    ...Array.from({ length: 2 }, () => ({
      type: 'payment_failed',
      payload: { error_code: 'timeout', step: 'payment' },
    })),
    ...Array.from({ length: 4 }, () => ({ type: 'checkout_completed', payload: { step: 'confirm' } })),
  ];
  await request(base).post('/api/signals').set('x-api-key', s.product.apiKey).send(signals).expect(200);
}

const run = (u: SignedIn) => u.agent.post('/api/analysis/run').set('x-csrf-token', u.csrf);

describe('Analysis into proposals', () => {
  test('When a context has enough signals and an LLM is configured, then a proposal carries evidence from the data and prose from the LLM', async () => {
    const s = await setup();
    await sendBurst(s);
    const res = await run(s.user);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ contexts_analyzed: 1, proposals_created: 1 });
    const [p] = res.body.proposals;
    expect(p).toMatchObject({
      product_id: s.product.id,
      context_id: s.context.id,
      status: 'pending',
      signal_count: 12,
      diagnosis: 'Card payments fail for declined cards.',
      proposed_change: 'Offer another payment method after a decline.',
    });
    expect(p.evidence_summary).toContain('8 negative (67%)');
    expect(p.evidence_summary).toContain('payment_failed (8)');
    expect(p.evidence_summary).toContain(
      'error_code=card_declined (6×, 75% of failures vs 0% of other signals)',
    );
    expect(p.priority_score).toBeGreaterThan(40);
    const row = await h.db.proposal.findUniqueOrThrow({ where: { id: p.id } });
    expect(row.source).toBe('llm');
    expect(row.evidence).toMatchObject({
      negative: 8,
      positive: 4,
      trend: 'new',
      top_failing_types: [{ type: 'payment_failed', count: 8 }],
    });
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]!.model).toBe('fake-model');
    expect(llm.requests[0]!.messages[1]!.content).toContain('card_declined');
    const listed = await request(h.baseUrl).get('/api/proposals').set('x-api-key', s.product.apiKey);
    expect(listed.body).toEqual([p]);
  });

  test('When the analysis runs again on unchanged evidence, then no new proposal is made and the LLM is not asked', async () => {
    const s = await setup();
    await sendBurst(s);
    await run(s.user).expect(200);
    llm.requests.length = 0;
    const again = await run(s.user);
    expect(again.body.proposals_created).toBe(0);
    expect(llm.requests).toHaveLength(0);
    expect(await h.db.proposal.count({ where: { contextId: s.context.id } })).toBe(1);
  });

  test('When fewer than 5 signals arrived in the last 24 hours, then no proposal', async () => {
    const s = await setup();
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', s.product.apiKey)
      .send([{ type: 'payment_failed' }, { type: 'payment_failed' }])
      .expect(200);
    await h.db.$executeRawUnsafe(
      `INSERT INTO signals (product_id, context_id, type, sentiment, created_at) SELECT $1::uuid, $2::uuid, 'payment_failed', 'negative', now() - interval '30 hours' FROM generate_series(1, 10)`,
      s.product.id,
      s.context.id,
    );
    const res = await run(s.user);
    expect(res.body.proposals_created).toBe(0);
    expect(await h.db.proposal.count({ where: { contextId: s.context.id } })).toBe(0);
  });

  test('When the LLM answers invalid JSON once, then one repair request fixes it', async () => {
    llm.reset([{ content: 'Sure! Here is a proposal.' }, llmAnswer({ diagnosis: 'Repaired diagnosis.' })]);
    const s = await setup();
    await sendBurst(s);
    const res = await run(s.user);
    expect(res.body.proposals[0].diagnosis).toBe('Repaired diagnosis.');
    expect(llm.requests).toHaveLength(2);
    // The repair turn: the rejected answer, then a request to answer again naming what was wrong.
    expect(llm.requests[1]!.messages.at(-2)).toEqual({
      role: 'assistant',
      content: 'Sure! Here is a proposal.',
    });
    expect(llm.requests[1]!.messages.at(-1)!.content).toContain('not JSON');
  });

  test('When the LLM keeps answering the wrong shape or fails, then the proposal is written from the evidence', async () => {
    llm.reset([{ content: JSON.stringify({ diagnosis: 'only one field' }) }]);
    const s = await setup();
    await sendBurst(s);
    const res = await run(s.user);
    expect(res.body.proposals_created).toBe(1);
    expect(res.body.proposals[0].diagnosis).toContain('payment_failed');
    expect(llm.requests).toHaveLength(2);
    expect((await h.db.proposal.findUniqueOrThrow({ where: { id: res.body.proposals[0].id } })).source).toBe(
      'evidence',
    );
  });

  test('When the LLM answers HTTP 500, then the proposal is written from the evidence and the analysis goes on', async () => {
    llm.reset([{ status: 500 }]);
    const s = await setup();
    await sendBurst(s);
    const res = await run(s.user);
    expect(res.status).toBe(200);
    expect(res.body.proposals_created).toBe(1);
    expect(llm.requests.length).toBeGreaterThanOrEqual(1);
    expect((await h.db.proposal.findUniqueOrThrow({ where: { id: res.body.proposals[0].id } })).source).toBe(
      'evidence',
    );
  });

  test('When the trend worsens against the previous window, then the evidence says so and the score is higher', async () => {
    const calm = await setup();
    const worse = await setup();
    // Previous window: calm already failed 8 of 12 (as now); worse failed none of 10.
    for (const [s, n] of [
      [calm, 4],
      [worse, 10],
    ] as const) {
      await h.db.$executeRawUnsafe(
        `INSERT INTO signals (product_id, context_id, type, sentiment, created_at) SELECT $1::uuid, $2::uuid, 'checkout_completed', 'positive', now() - interval '30 hours' FROM generate_series(1, $3::int)`,
        s.product.id,
        s.context.id,
        n,
      );
    }
    await h.db.$executeRawUnsafe(
      `INSERT INTO signals (product_id, context_id, type, sentiment, created_at) SELECT $1::uuid, $2::uuid, 'payment_failed', 'negative', now() - interval '30 hours' FROM generate_series(1, 8)`,
      calm.product.id,
      calm.context.id,
    );
    await sendBurst(calm);
    await sendBurst(worse);
    const a = (await run(calm.user)).body.proposals[0];
    const b = (await run(worse.user)).body.proposals[0];
    const ev = (id: string) =>
      h.db.proposal.findUniqueOrThrow({ where: { id } }).then((p) => p.evidence as { trend: string });
    expect((await ev(a.id)).trend).toBe('stable');
    expect((await ev(b.id)).trend).toBe('worsening');
    expect(b.priority_score).toBeGreaterThan(a.priority_score);
  });

  test('When the Free plan has made 3 proposals this month, then no fourth is made', async () => {
    const s = await setup();
    await h.db.$executeRawUnsafe(
      `INSERT INTO usage_counters (user_id, month, signals, proposals) VALUES ($1::uuid, date_trunc('month', now() AT TIME ZONE 'utc')::date, 0, 3)`,
      s.user.userId,
    );
    await sendBurst(s);
    const res = await run(s.user);
    expect(res.body.proposals_created).toBe(0);
    expect(llm.requests).toHaveLength(0);
    expect(await h.db.proposal.count({ where: { productId: s.product.id } })).toBe(0);
  });

  test('When two replicas analyse the same data at once, then exactly one proposal is made', async () => {
    const s = await setup();
    await sendBurst(s);
    const other = await startHarness('unused', {
      reuseDatabaseUrl: h.databaseUrl,
      env: { LLM_BASE_URL: llm.baseUrl, LLM_MODEL: 'fake-model' },
    });
    try {
      const results = await Promise.all([
        h.service.analysis.runOnce('schedule'),
        other.service.analysis.runOnce('schedule'),
        h.service.analysis.runOnce('schedule'),
      ]);
      expect(
        results.reduce((n, r) => n + r.proposals.filter((p) => p.context_id === s.context.id).length, 0),
      ).toBe(1);
      expect(await h.db.proposal.count({ where: { contextId: s.context.id } })).toBe(1);
      expect(await h.db.analysisRun.count({ where: { trigger: 'schedule' } })).toBeGreaterThanOrEqual(3);
    } finally {
      await other.close();
    }
  });
});

describe('Scheduled analysis without an LLM', () => {
  test('When the schedule runs, then proposals appear written from the evidence', async () => {
    const url = await freshDatabase('signal_feedback_schedule_test');
    const sched = await startHarness('unused', {
      reuseDatabaseUrl: url,
      env: { ANALYSIS_INTERVAL_MS: '100' },
    });
    try {
      const user = await signUp(sched);
      const product = await createProduct(user);
      const context = await createContext(user, product.id);
      await sendBurst({ user, product, context }, sched.baseUrl);
      await waitFor(
        async () => (await sched.db.proposal.count({ where: { contextId: context.id } })) === 1,
        'a scheduled proposal',
      );
      const [p] = (await user.agent.get('/api/proposals')).body;
      expect(p.diagnosis).toContain('payment_failed');
      expect(p.proposed_change).toContain('error_code');
      expect((await sched.db.proposal.findFirstOrThrow({ where: { contextId: context.id } })).source).toBe(
        'evidence',
      );
    } finally {
      await sched.close();
    }
  });
});

describe('GET /api/proposals and status changes', () => {
  async function withProposal(): Promise<Setup & { proposalId: string }> {
    const s = await setup();
    await sendBurst(s);
    const res = await run(s.user);
    return { ...s, proposalId: res.body.proposals[0].id as string };
  }

  test('When listing with a status filter and a limit, then only matching proposals come back; without auth, 401', async () => {
    const s = await withProposal();
    expect(
      (await request(h.baseUrl).get('/api/proposals?status=pending').set('x-api-key', s.product.apiKey)).body,
    ).toHaveLength(1);
    expect(
      (await request(h.baseUrl).get('/api/proposals?status=approved').set('x-api-key', s.product.apiKey))
        .body,
    ).toHaveLength(0);
    expect(
      (await request(h.baseUrl).get('/api/proposals?limit=0').set('x-api-key', s.product.apiKey)).status,
    ).toBe(400);
    expect(
      (await request(h.baseUrl).get('/api/proposals?status=done').set('x-api-key', s.product.apiKey)).status,
    ).toBe(400);
    expect((await request(h.baseUrl).get('/api/proposals')).status).toBe(401);
    expect((await request(h.baseUrl).get('/api/proposals').set('x-api-key', 'spk_bad')).status).toBe(401);
    const other = await setup();
    expect(
      (await request(h.baseUrl).get('/api/proposals').set('x-api-key', other.product.apiKey)).body,
    ).toEqual([]);
    expect((await other.user.agent.get('/api/proposals')).body).toEqual([]);
    expect((await s.user.agent.get('/api/proposals')).body.map((p: { id: string }) => p.id)).toEqual([
      s.proposalId,
    ]);
  });

  test('When a pending proposal is deferred, then pending again, then approved, then each change is stored; anything after approval is 409', async () => {
    const s = await withProposal();
    const change = (status: string) =>
      s.user.agent.patch(`/api/proposals/${s.proposalId}`).set('x-csrf-token', s.user.csrf).send({ status });
    expect((await change('deferred')).body.status).toBe('deferred');
    expect((await change('pending')).body.status).toBe('pending');
    expect((await change('approved')).body.status).toBe('approved');
    for (const to of ['pending', 'rejected', 'deferred', 'approved']) {
      const res = await change(to);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 'invalid_transition', details: { from: 'approved', to } });
    }
    expect((await h.db.proposal.findUniqueOrThrow({ where: { id: s.proposalId } })).status).toBe('approved');
  });

  test('When a proposal is rejected with the API key, then it is final; pending to pending is 409', async () => {
    const s = await withProposal();
    const change = (status: string) =>
      request(h.baseUrl)
        .patch(`/api/proposals/${s.proposalId}`)
        .set('x-api-key', s.product.apiKey)
        .send({ status });
    expect((await change('pending')).status).toBe(409);
    expect((await change('rejected')).body.status).toBe('rejected');
    expect((await change('approved')).status).toBe(409);
  });

  test('When another user or key changes a proposal, or the status is invalid, then 404/400/403 and it stays pending', async () => {
    const s = await withProposal();
    const other = await setup();
    expect(
      (
        await other.user.agent
          .patch(`/api/proposals/${s.proposalId}`)
          .set('x-csrf-token', other.user.csrf)
          .send({ status: 'approved' })
      ).status,
    ).toBe(404);
    expect(
      (
        await request(h.baseUrl)
          .patch(`/api/proposals/${s.proposalId}`)
          .set('x-api-key', other.product.apiKey)
          .send({ status: 'approved' })
      ).status,
    ).toBe(404);
    expect(
      (
        await s.user.agent
          .patch(`/api/proposals/${s.proposalId}`)
          .set('x-csrf-token', s.user.csrf)
          .send({ status: 'done' })
      ).status,
    ).toBe(400);
    expect(
      (await s.user.agent.patch(`/api/proposals/${s.proposalId}`).send({ status: 'approved' })).status,
    ).toBe(403);
    expect(
      (
        await s.user.agent
          .patch('/api/proposals/not-a-uuid')
          .set('x-csrf-token', s.user.csrf)
          .send({ status: 'approved' })
      ).status,
    ).toBe(400);
    expect((await h.db.proposal.findUniqueOrThrow({ where: { id: s.proposalId } })).status).toBe('pending');
  });

  test('When two status changes race from pending, then exactly one applies', async () => {
    const s = await withProposal();
    const results = await Promise.all(
      ['approved', 'rejected'].map((status) =>
        request(h.baseUrl)
          .patch(`/api/proposals/${s.proposalId}`)
          .set('x-api-key', s.product.apiKey)
          .send({ status }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
  });
});
