import request from 'supertest';
import { metricValue, scrape } from '@repo/service-kit/testing';
import {
  createContext,
  createProduct,
  signUp,
  startHarness,
  type Harness,
  waitFor,
  type SignedIn,
} from './support/harness';
import { insertSignalHistory } from './support/signal-history';

let h: Harness;
let replica: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_deployments_test');
  // A second replica on the same database, for the verification that must run once. Its key cache
  // keeps entries a minute: only the key-change notification can end a deleted key there in time.
  replica = await startHarness('signal_feedback_deployments_test', {
    reuseDatabaseUrl: h.databaseUrl,
    env: { API_KEY_CACHE_TTL_MS: '60000' },
  });
});
afterAll(async () => {
  await replica?.close();
  await h?.close();
});

const DAY_MS = 24 * 3_600_000;

interface Approved {
  user: SignedIn;
  product: { id: string; apiKey: string };
  context: { id: string };
  proposalId: string;
}

/** A user on `plan` with one product, one checkout context and one approved proposal. */
async function approvedProposal(plan = 'scale'): Promise<Approved> {
  const user = await signUp(h);
  await h.db.$executeRawUnsafe(`UPDATE users SET plan = $1::"Plan" WHERE id = $2::uuid`, plan, user.userId);
  const product = await createProduct(user);
  const context = await createContext(user, product.id);
  const burst = [
    ...Array.from({ length: 6 }, () => ({ type: 'payment_failed', payload: { code: 'card_declined' } })),
    ...Array.from({ length: 4 }, () => ({ type: 'checkout_completed' })),
  ];
  await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send(burst).expect(200);
  const run = await user.agent.post('/api/analysis/run').set('x-csrf-token', user.csrf).expect(200);
  const proposalId = run.body.proposals[0].id as string;
  await request(h.baseUrl)
    .patch(`/api/proposals/${proposalId}`)
    .set('x-api-key', product.apiKey)
    .send({ status: 'approved' })
    .expect(200);
  return { user, product, context, proposalId };
}

/**
 * Writes a signal history straight into the table (the API accepts timestamps at most 7 days old, and
 * the before-window lies a week before the after-window): `total` signals of `contextId` (default the
 * proposal's) spread evenly over `[from, to)`, `failing` of them, spread evenly too, `payment_failed`
 * (negative), the others `checkout_completed` (positive).
 */
const history = (
  a: Approved,
  from: Date,
  to: Date,
  total: number,
  failing: number,
  contextId = a.context.id,
) =>
  insertSignalHistory(h.db, {
    productId: a.product.id,
    contextId,
    from,
    to,
    total,
    failing,
    spreadFailing: true,
  });

const WEEK_MS = 7 * DAY_MS;

/** The 24-hour windows of a deployment at `at`: after, before (a week earlier), placebo-before (two). */
const windowsOf = (at: Date) => ({
  after: [at, new Date(at.getTime() + DAY_MS)] as const,
  before: [new Date(at.getTime() - WEEK_MS), new Date(at.getTime() - WEEK_MS + DAY_MS)] as const,
  placeboBefore: [
    new Date(at.getTime() - 2 * WEEK_MS),
    new Date(at.getTime() - 2 * WEEK_MS + DAY_MS),
  ] as const,
});

type Counts = { total: number; failing: number };

/**
 * A deployment whose 24-hour after-window has closed but that nobody verified yet: recorded now (open),
 * then moved two days back in the table, as if that time had passed, with the histories of its windows
 * in the proposal's context (`placeboBefore` only when given) and in each of `controls`.
 */
async function closedDeployment(
  a: Approved,
  before: Counts,
  after: Counts,
  options: {
    body?: Record<string, unknown>;
    placeboBefore?: Counts;
    controls?: { id: string; placeboBefore?: Counts; before: Counts; after: Counts }[];
  } = {},
): Promise<{ id: string; deployedAt: Date }> {
  const res = await request(replica.baseUrl)
    .post(`/api/proposals/${a.proposalId}/deployments`)
    .set('x-api-key', a.product.apiKey)
    .send({ version: 'v2.4.0', window_minutes: 1440, ...options.body });
  expect(res.status).toBe(201);
  const deployedAt = new Date(Date.now() - 2 * DAY_MS);
  const w = windowsOf(deployedAt);
  const groups = [
    { id: a.context.id, placeboBefore: options.placeboBefore, before, after },
    ...(options.controls ?? []),
  ];
  for (const g of groups) {
    await history(a, ...w.before, g.before.total, g.before.failing, g.id);
    await history(a, ...w.after, g.after.total, g.after.failing, g.id);
    if (g.placeboBefore)
      await history(a, ...w.placeboBefore, g.placeboBefore.total, g.placeboBefore.failing, g.id);
  }
  // Moved back last: once closed, a scheduled verification may store its verdict at once.
  await h.db.deployment.update({ where: { id: res.body.id }, data: { deployedAt } });
  return { id: res.body.id as string, deployedAt };
}

const listDeployments = (a: Approved, base = h.baseUrl) =>
  request(base).get(`/api/proposals/${a.proposalId}/deployments`).set('x-api-key', a.product.apiKey);

const stored = (id: string) =>
  h.db.deployment.findUniqueOrThrow({
    where: { id },
    select: { verdict: true, verification: true, verifiedAt: true },
  });

describe('Recording deployments', () => {
  test('When a proposal is approved, then a deployment is recorded with the defaults, counted, and the proposal shows it', async () => {
    const a = await approvedProposal('free');
    const res = await a.user.agent
      .post(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-csrf-token', a.user.csrf)
      .send({ version: 'v1.3.0', note: 'one-click retry after a decline' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      proposal_id: a.proposalId,
      version: 'v1.3.0',
      note: 'one-click retry after a decline',
      window_minutes: 1440,
      signal_type: 'payment_failed',
      regression_proposal_id: null,
      verification: {
        provisional: true,
        verdict: 'inconclusive',
        reason: 'too_few_signals',
        alpha: 0.05,
        min_signals: 30,
      },
    });
    expect(Math.abs(Date.parse(res.body.deployed_at) - Date.now())).toBeLessThan(60_000);
    const row = await h.db.deployment.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row).toMatchObject({
      proposalId: a.proposalId,
      verdict: 'pending',
      verification: null,
      alpha: 0.05,
    });
    const usage = await h.db.usageCounter.findMany({ where: { userId: a.user.userId } });
    expect(usage.map((u) => u.deployments)).toEqual([1]);

    const proposals = await request(h.baseUrl)
      .get('/api/proposals')
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    expect(proposals.body[0]).toMatchObject({
      id: a.proposalId,
      deployment: {
        id: res.body.id,
        version: 'v1.3.0',
        verdict: 'pending',
        deployed_at: res.body.deployed_at,
      },
    });
  });

  test('When the proposal is pending, then the deployment is refused with 409 proposal_not_approved and nothing is stored', async () => {
    const user = await signUp(h);
    const product = await createProduct(user);
    const context = await createContext(user, product.id);
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', product.apiKey)
      .send(Array.from({ length: 6 }, () => ({ type: 'payment_failed', context_id: context.id })))
      .expect(200);
    const run = await user.agent.post('/api/analysis/run').set('x-csrf-token', user.csrf).expect(200);
    const pendingId = run.body.proposals[0].id as string;
    const res = await request(h.baseUrl)
      .post(`/api/proposals/${pendingId}/deployments`)
      .set('x-api-key', product.apiKey)
      .send({});
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'proposal_not_approved', details: { status: 'pending' } });
    expect(await h.db.deployment.count({ where: { proposalId: pendingId } })).toBe(0);
  });

  test("When another owner's key or session names a proposal, then it is 404 and nothing is stored", async () => {
    const a = await approvedProposal();
    const other = await signUp(h);
    const otherProduct = await createProduct(other);
    const byKey = await request(h.baseUrl)
      .post(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', otherProduct.apiKey)
      .send({});
    const bySession = await other.agent
      .post(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-csrf-token', other.csrf)
      .send({});
    const listed = await request(h.baseUrl)
      .get(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', otherProduct.apiKey);
    for (const res of [byKey, bySession, listed]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect(await h.db.deployment.count({ where: { proposalId: a.proposalId } })).toBe(0);
  });

  test('When deployed_at is so long ago that the after-window has closed, then the answer carries the final verdict', async () => {
    const a = await approvedProposal();
    const deployedAt = new Date(Date.now() - 3 * DAY_MS);
    await history(a, ...windowsOf(deployedAt).before, 200, 80);
    await history(a, ...windowsOf(deployedAt).after, 200, 20);
    const res = await request(h.baseUrl)
      .post(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', a.product.apiKey)
      .send({ deployed_at: deployedAt.toISOString(), alpha: 0.01 })
      .expect(201);
    expect(res.body.verification).toMatchObject({
      verdict: 'improved',
      provisional: false,
      alpha: 0.01,
      z: -6.9282,
    });
    expect((await stored(res.body.id)).verdict).toBe('improved');
  });

  test('When the body is bad, then each case is a 400 naming the field, and without credentials a 401', async () => {
    const a = await approvedProposal();
    const post = (body: unknown) =>
      request(h.baseUrl)
        .post(`/api/proposals/${a.proposalId}/deployments`)
        .set('x-api-key', a.product.apiKey)
        .send(body as object);
    const cases: [unknown, string][] = [
      [{ deployed_at: 'yesterday' }, 'body.deployed_at'],
      [{ deployed_at: new Date(Date.now() + DAY_MS).toISOString() }, 'body.deployed_at'],
      [{ window_minutes: 0 }, 'body.window_minutes'],
      [{ window_minutes: 20_000 }, 'body.window_minutes'],
      [{ alpha: 0.5 }, 'body.alpha'],
      [{ version: 'v\u0000' }, 'body.version'],
      [{ version: 'x'.repeat(101) }, 'body.version'],
    ];
    for (const [body, path] of cases) {
      const res = await post(body);
      expect([res.status, res.body.code]).toEqual([400, 'invalid_request']);
      expect(res.body.details.issues.map((d: { path: string }) => d.path)).toContain(path);
    }
    const bad = await request(h.baseUrl)
      .post('/api/proposals/not-a-uuid/deployments')
      .set('x-api-key', a.product.apiKey)
      .send({});
    expect(bad.status).toBe(400);
    const anonymous = await request(h.baseUrl).post(`/api/proposals/${a.proposalId}/deployments`).send({});
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 'unauthorized']);
    expect(await h.db.deployment.count({ where: { proposalId: a.proposalId } })).toBe(0);
  });

  test('When a proposal has more than 50 deployments, then the list holds the newest 50', async () => {
    const a = await approvedProposal();
    for (let i = 0; i < 52; i++)
      await request(h.baseUrl)
        .post(`/api/proposals/${a.proposalId}/deployments`)
        .set('x-api-key', a.product.apiKey)
        .send({ version: `v${i}`, deployed_at: new Date(Date.now() - (60 - i) * 60_000).toISOString() })
        .expect(201);
    const listed = (await listDeployments(a).expect(200)).body as { version: string }[];
    expect(listed.map((d) => d.version)).toEqual(Array.from({ length: 50 }, (_, i) => `v${51 - i}`));
  });

  test("When the plan's monthly deployments are used up, then the next is 429 quota_exceeded with Retry-After", async () => {
    const a = await approvedProposal('free');
    for (let i = 0; i < 3; i++)
      await request(h.baseUrl)
        .post(`/api/proposals/${a.proposalId}/deployments`)
        .set('x-api-key', a.product.apiKey)
        .send({ version: `v${i}` })
        .expect(201);
    const res = await request(h.baseUrl)
      .post(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', a.product.apiKey)
      .send({ version: 'v3' });
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({
      code: 'quota_exceeded',
      details: { quota: 'deployments', plan: 'free', limit: 3 },
    });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(await h.db.deployment.count({ where: { proposalId: a.proposalId } })).toBe(3);
  });
});

describe('Verification', () => {
  test('When the failing share falls from 40 % to 10 % over 200 signals each, then the verdict is improved with the exact figures', async () => {
    const a = await approvedProposal();
    const d = await closedDeployment(a, { total: 200, failing: 80 }, { total: 200, failing: 20 });
    // Signals outside both windows, and those of the burst sent now, are not counted.
    const res = await listDeployments(a).expect(200);
    expect(res.body).toHaveLength(1);
    expect(res.body[0].verification).toMatchObject({
      verdict: 'improved',
      reason: 'significant',
      provisional: false,
      before: {
        from: new Date(d.deployedAt.getTime() - WEEK_MS).toISOString(),
        to: new Date(d.deployedAt.getTime() - WEEK_MS + DAY_MS).toISOString(),
        signals: 200,
        negative: 80,
        negative_rate: 0.4,
      },
      after: { signals: 200, negative: 20, negative_rate: 0.1 },
      z: -6.9282,
      p_value: 4.262e-12,
      alpha: 0.05,
    });
    const row = await stored(d.id);
    expect(row.verdict).toBe('improved');
    expect(row.verification).toEqual(res.body[0].verification);
    expect(await h.db.proposal.count({ where: { regressionOfId: d.id } })).toBe(0);
    const proposals = await request(h.baseUrl)
      .get('/api/proposals')
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    expect(proposals.body.find((p: { id: string }) => p.id === a.proposalId).deployment.verdict).toBe(
      'improved',
    );
  });

  test('When the failing share rises from 25 % to 40 %, then the verdict is regressed and one new proposal cites the deployment', async () => {
    const a = await approvedProposal();
    const d = await closedDeployment(a, { total: 120, failing: 30 }, { total: 90, failing: 36 });
    expect(await h.service.deployments.verifyDue()).toBeGreaterThanOrEqual(1);
    const row = await stored(d.id);
    expect(row.verdict).toBe('regressed');
    expect(row.verification).toMatchObject({
      verdict: 'regressed',
      before: { signals: 120, negative: 30, negative_rate: 0.25 },
      after: { signals: 90, negative: 36, negative_rate: 0.4 },
      z: 2.3172,
      p_value: 0.02049,
    });
    const raised = await h.db.proposal.findMany({ where: { regressionOfId: d.id } });
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({ contextId: a.context.id, status: 'pending', signalCount: 90 });
    expect(raised[0]!.diagnosis).toContain('25.0 % to 40.0 %');
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.regression_proposal_id).toBe(raised[0]!.id);
    const proposals = await request(h.baseUrl)
      .get('/api/proposals')
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    expect(proposals.body.find((p: { id: string }) => p.id === raised[0]!.id).regression_of).toEqual({
      deployment_id: d.id,
      proposal_id: a.proposalId,
    });
    // Asking again changes nothing.
    await listDeployments(a).expect(200);
    expect(await h.db.proposal.count({ where: { regressionOfId: d.id } })).toBe(1);
  });

  test('When a window has fewer signals than the minimum, then the verdict is inconclusive (too_few_signals)', async () => {
    const a = await approvedProposal();
    const d = await closedDeployment(a, { total: 10, failing: 5 }, { total: 29, failing: 0 });
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.verification).toMatchObject({
      verdict: 'inconclusive',
      reason: 'too_few_signals',
      before: { signals: 10, negative: 5, negative_rate: 0.5 },
      after: { signals: 29, negative: 0, negative_rate: 0 },
      min_signals: 30,
    });
    expect((await stored(d.id)).verdict).toBe('inconclusive');
  });

  test('When the rate does not change, or changes too little, then the verdict is inconclusive (not_significant)', async () => {
    const same = await approvedProposal();
    await closedDeployment(same, { total: 200, failing: 40 }, { total: 200, failing: 40 });
    const small = await approvedProposal();
    await closedDeployment(small, { total: 100, failing: 30 }, { total: 100, failing: 22 });
    const [a] = (await listDeployments(same).expect(200)).body;
    const [b] = (await listDeployments(small).expect(200)).body;
    expect(a.verification).toMatchObject({
      verdict: 'inconclusive',
      reason: 'not_significant',
      z: 0,
      p_value: 1,
    });
    expect(b.verification).toMatchObject({
      verdict: 'inconclusive',
      reason: 'not_significant',
      z: -1.2897,
      p_value: 0.1972,
      before: { negative_rate: 0.3 },
      after: { negative_rate: 0.22 },
    });
  });

  test('When the after-window is still open, then the figures are provisional over the elapsed time and nothing is stored', async () => {
    const a = await approvedProposal();
    const deployedAt = new Date(Date.now() - 30 * 60_000);
    // The same half hour a week earlier, and the half hour before that (outside the window).
    await history(
      a,
      new Date(deployedAt.getTime() - WEEK_MS - 30 * 60_000),
      new Date(deployedAt.getTime() - WEEK_MS),
      40,
      10,
    );
    await history(
      a,
      new Date(deployedAt.getTime() - WEEK_MS),
      new Date(deployedAt.getTime() - WEEK_MS + 30 * 60_000),
      60,
      30,
    );
    await history(a, deployedAt, new Date(), 60, 30);
    const created = await request(h.baseUrl)
      .post(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', a.product.apiKey)
      .send({ deployed_at: deployedAt.toISOString(), window_minutes: 120 })
      .expect(201);
    expect(created.body.verification).toMatchObject({
      provisional: true,
      provisional_note: expect.stringMatching(/^Not final/),
      verdict: 'inconclusive',
      reason: 'provisional',
      before: { signals: 60, negative: 30 },
      // No fixed-horizon p-value while the window is open, anywhere.
      z: null,
      p_value: null,
      effect: { p_value: null, z: null, adjusted_p_value: null },
      naive: { p_value: null },
      monitor: { always_valid_p_value: expect.any(Number), regression_detected: false },
    });
    // The before-window is as long as the time elapsed, a week earlier: the half hour before it is outside.
    expect(Date.parse(created.body.verification.before.from)).toBeGreaterThanOrEqual(
      deployedAt.getTime() - WEEK_MS,
    );
    expect(
      created.body.verification.per_type.every(
        (t: { adjusted_p_value: unknown }) => t.adjusted_p_value === null,
      ),
    ).toBe(true);
    // Other tests' deployments may be due (the order is random): only this one must stay pending.
    await h.service.deployments.verifyDue();
    expect(await stored(created.body.id)).toMatchObject({
      verdict: 'pending',
      verification: null,
      verifiedAt: null,
    });
  });

  test('When two replicas run the scheduled verification at once, then each deployment is verified once and raises one proposal', async () => {
    await h.service.deployments.verifyDue(); // whatever other tests left due
    const regressions = await Promise.all([approvedProposal(), approvedProposal(), approvedProposal()]);
    const improvements = await Promise.all([approvedProposal(), approvedProposal()]);
    const ids = [
      ...(await Promise.all(
        regressions.map((a) => closedDeployment(a, { total: 120, failing: 30 }, { total: 90, failing: 36 })),
      )),
      ...(await Promise.all(
        improvements.map((a) =>
          closedDeployment(a, { total: 200, failing: 80 }, { total: 200, failing: 20 }),
        ),
      )),
    ].map((d) => d.id);
    const verdicts = async (m: Harness) => {
      const text = await scrape(m.metricsUrl);
      return ['improved', 'regressed', 'inconclusive'].reduce(
        (sum, verdict) => sum + (metricValue(text, 'deployments_verified_total', { verdict }) ?? 0),
        0,
      );
    };
    const before = (await verdicts(h)) + (await verdicts(replica));
    const counts = await Promise.all([
      h.service.deployments.verifyDue(),
      replica.service.deployments.verifyDue(),
      h.service.deployments.verifyDue(),
      replica.service.deployments.verifyDue(),
    ]);
    expect(counts.reduce((x, y) => x + y, 0)).toBe(5);
    expect((await verdicts(h)) + (await verdicts(replica)) - before).toBe(5);
    const rows = await h.db.deployment.findMany({ where: { id: { in: ids } } });
    expect(rows.map((r) => r.verdict).sort()).toEqual([
      'improved',
      'improved',
      'regressed',
      'regressed',
      'regressed',
    ]);
    expect(rows.every((r) => r.leaseUntil === null && r.verifiedAt !== null)).toBe(true);
    expect(await h.db.proposal.count({ where: { regressionOfId: { in: ids } } })).toBe(3);
  });

  test('When the schedule is on, then a closed deployment gets its verdict without anyone asking', async () => {
    const scheduled = await startHarness('signal_feedback_deployments_test', {
      reuseDatabaseUrl: h.databaseUrl,
      env: { VERIFICATION_INTERVAL_MS: '100' },
    });
    try {
      const a = await approvedProposal();
      const d = await closedDeployment(a, { total: 200, failing: 80 }, { total: 200, failing: 20 });
      await waitFor(async () => (await stored(d.id)).verdict === 'improved', 'the scheduled verification');
      const text = await scrape(scheduled.metricsUrl);
      expect(metricValue(text, 'deployments_verified_total', { verdict: 'improved' })).toBeGreaterThanOrEqual(
        1,
      );
      expect(
        metricValue(text, 'background_loop_rounds_total', { loop: 'verification-schedule', outcome: 'idle' }),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      await scheduled.close();
    }
  });

  test("When the plan's monthly proposals are used up, then a regression is stored without raising a proposal", async () => {
    const a = await approvedProposal('free');
    await h.db.$executeRawUnsafe(
      `UPDATE usage_counters SET proposals = 3 WHERE user_id = $1::uuid`,
      a.user.userId,
    );
    const d = await closedDeployment(a, { total: 120, failing: 30 }, { total: 90, failing: 36 });
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.verification.verdict).toBe('regressed');
    expect(listed.regression_proposal_id).toBeNull();
    expect(await h.db.proposal.count({ where: { regressionOfId: d.id } })).toBe(0);
  });
});

/** Two more contexts of the proposal's product, the controls of its deployments. */
async function withControls(a: Approved): Promise<{ id: string }[]> {
  return [
    await createContext(a.user, a.product.id, { name: 'Search' }),
    await createContext(a.user, a.product.id, { name: 'Account' }),
  ];
}

describe('Controlled verdicts', () => {
  test('When every context drifts the same way and the change did nothing, then the verdict is inconclusive, though the naive test says regressed', async () => {
    const a = await approvedProposal();
    const [search, account] = await withControls(a);
    // The failing share doubles everywhere (an upstream outage), in proportion to each context's volume.
    const d = await closedDeployment(
      a,
      { total: 400, failing: 40 },
      { total: 400, failing: 80 },
      {
        placeboBefore: { total: 400, failing: 40 },
        controls: [search!, account!].map((c) => ({
          id: c.id,
          placeboBefore: { total: 600, failing: 60 },
          before: { total: 600, failing: 60 },
          after: { total: 600, failing: 120 },
        })),
      },
    );
    expect(await h.service.deployments.verifyDue()).toBeGreaterThanOrEqual(1);
    const [listed] = (await listDeployments(a).expect(200)).body;
    const v = listed.verification;
    expect(v).toMatchObject({
      verdict: 'inconclusive',
      reason: 'not_significant',
      label: 'observational',
      provisional: false,
      provisional_note: null,
      method: {
        estimator: 'did',
        treated_contexts: [a.context.id],
        control_selection: 'automatic',
        signal_types: ['payment_failed'],
        windows: { whole_weeks: false, reweighted: true, period_minutes: 10_080 },
      },
      control: {
        before: { signals: 1200, negative: 120, negative_rate: 0.1 },
        after: { signals: 1200, negative: 240, negative_rate: 0.2 },
      },
      before: { signals: 400, negative: 40 },
      after: { signals: 400, negative: 80 },
      placebo: { significant: false },
      traffic: { significant: false, observed_treated_after: 400 },
      monitor: null,
    });
    expect(v.method.control_contexts.map((c: { context_id: string }) => c.context_id).sort()).toEqual(
      [search!.id, account!.id].sort(),
    );
    // The difference-in-differences is about zero, its interval spans it; the old test alone would
    // have called this a regression.
    expect(Math.abs(v.effect.estimate)).toBeLessThan(0.05);
    expect(v.effect.ci_low).toBeLessThan(0);
    expect(v.effect.ci_high).toBeGreaterThan(0);
    expect(v.p_value).toBeLessThan(0.05);
    expect(v.naive.estimate).toBeGreaterThan(0.5);
    expect(v.per_type).toEqual([
      expect.objectContaining({ signal_type: 'payment_failed', adjusted_p_value: expect.any(Number) }),
    ]);
    expect((await stored(d.id)).verdict).toBe('inconclusive');
    expect(await h.db.proposal.count({ where: { regressionOfId: d.id } })).toBe(0);
  });

  test('When only the treated context gets worse, then the verdict is regressed with the DiD interval above 0, and one proposal cites it', async () => {
    const a = await approvedProposal();
    const [search, account] = await withControls(a);
    const d = await closedDeployment(
      a,
      { total: 400, failing: 40 },
      { total: 400, failing: 100 },
      {
        placeboBefore: { total: 400, failing: 40 },
        controls: [search!, account!].map((c) => ({
          id: c.id,
          placeboBefore: { total: 400, failing: 40 },
          before: { total: 400, failing: 40 },
          after: { total: 400, failing: 40 },
        })),
      },
    );
    const [listed] = (await listDeployments(a).expect(200)).body;
    const v = listed.verification;
    expect(v).toMatchObject({
      verdict: 'regressed',
      reason: 'significant',
      label: 'observational',
      method: { estimator: 'did' },
      placebo: { significant: false },
      traffic: { significant: false },
    });
    // ln of (100/300) / (40/360) = ln 3 against flat controls.
    expect(v.effect.estimate).toBeCloseTo(Math.log(3), 1);
    expect(v.effect.ci_low).toBeGreaterThan(0);
    expect(v.effect.odds_ratio_ci_low).toBeGreaterThan(1);
    expect(v.effect.p_value).toBeLessThan(0.05);
    expect((await stored(d.id)).verdict).toBe('regressed');
    const raised = await h.db.proposal.findMany({ where: { regressionOfId: d.id } });
    expect(raised).toHaveLength(1);
    expect(raised[0]!.evidence).toMatchObject({ kind: 'regression', label: 'observational', method: 'did' });
    expect(listed.regression_proposal_id).toBe(raised[0]!.id);
  });

  test('When the treated volume doubles against the controls, then the verdict is inconclusive (unreliable: volume_shift) with its figures, and raises nothing', async () => {
    const a = await approvedProposal();
    const [search] = await withControls(a);
    const d = await closedDeployment(
      a,
      { total: 300, failing: 30 },
      { total: 900, failing: 270 },
      {
        controls: [
          { id: search!.id, before: { total: 600, failing: 60 }, after: { total: 600, failing: 60 } },
        ],
      },
    );
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.verification).toMatchObject({
      verdict: 'inconclusive',
      reason: 'unreliable',
      label: 'unreliable: volume_shift',
      traffic: { significant: true, observed_treated_after: 900 },
    });
    // Independence of group and window: (300 + 900)(900 + 600) / 2400.
    expect(listed.verification.traffic.expected_treated_after).toBeCloseTo(750, 0);
    // The estimate is still shown, so people see what it said.
    expect(listed.verification.effect.ci_low).toBeGreaterThan(0);
    expect(await h.db.proposal.count({ where: { regressionOfId: d.id } })).toBe(0);
  });

  test('When the treated context was already drifting from the controls before the change, then the placebo marks it unreliable: pre_trend', async () => {
    const a = await approvedProposal();
    const [search] = await withControls(a);
    await closedDeployment(
      a,
      { total: 400, failing: 100 },
      { total: 400, failing: 160 },
      {
        placeboBefore: { total: 400, failing: 40 },
        controls: [
          {
            id: search!.id,
            placeboBefore: { total: 400, failing: 40 },
            before: { total: 400, failing: 40 },
            after: { total: 400, failing: 40 },
          },
        ],
      },
    );
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.verification).toMatchObject({
      verdict: 'inconclusive',
      reason: 'unreliable',
      label: 'unreliable: pre_trend',
      placebo: { significant: true },
    });
    expect(listed.verification.placebo.ci_low).toBeGreaterThan(0);
  });

  test('When the deployment names its controls, then only those are counted, not the busier automatic one', async () => {
    const a = await approvedProposal();
    const [search, account] = await withControls(a);
    const d = await closedDeployment(
      a,
      { total: 200, failing: 20 },
      { total: 200, failing: 20 },
      {
        body: { control_contexts: [search!.id] },
        controls: [
          { id: search!.id, before: { total: 40, failing: 4 }, after: { total: 40, failing: 4 } },
          { id: account!.id, before: { total: 500, failing: 50 }, after: { total: 500, failing: 50 } },
        ],
      },
    );
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed).toMatchObject({ id: d.id, contexts: [a.context.id], control_contexts: [search!.id] });
    expect(listed.verification.method).toMatchObject({
      control_selection: 'explicit',
      control_contexts: [{ context_id: search!.id, before_signals: 40, after_signals: 40 }],
    });
    expect(listed.verification.control.before.signals).toBe(40);
  });

  test('When no other context has enough signals, then the verdict falls back to before/after, labelled uncontrolled', async () => {
    const a = await approvedProposal();
    const [search] = await withControls(a);
    await closedDeployment(
      a,
      { total: 200, failing: 80 },
      { total: 200, failing: 20 },
      { controls: [{ id: search!.id, before: { total: 29, failing: 3 }, after: { total: 29, failing: 3 } }] },
    );
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.verification).toMatchObject({
      verdict: 'improved',
      label: 'uncontrolled',
      method: { estimator: 'before_after', control_contexts: [] },
      control: null,
      traffic: null,
    });
    expect(listed.verification.effect.ci_high).toBeLessThan(0);
  });

  test("When the deployment's alpha is 0.01 and the p-value about 0.02, then the verdict is inconclusive", async () => {
    const a = await approvedProposal();
    const d = await closedDeployment(
      a,
      { total: 120, failing: 30 },
      { total: 90, failing: 36 },
      { body: { alpha: 0.01 } },
    );
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.verification.effect.p_value).toBeGreaterThan(0.01);
    expect(listed.verification.effect.p_value).toBeLessThan(0.05);
    expect(listed.verification).toMatchObject({
      verdict: 'inconclusive',
      reason: 'not_significant',
      alpha: 0.01,
    });
    expect(await h.db.proposal.count({ where: { regressionOfId: d.id } })).toBe(0);
  });

  test('When the named contexts are wrong, then each case is a 400 naming the field, nothing is stored and nothing counted', async () => {
    const a = await approvedProposal();
    const [search] = await withControls(a);
    const elsewhere = await createContext(a.user, (await createProduct(a.user)).id, {
      name: 'Other product',
    });
    const post = (body: unknown) =>
      request(h.baseUrl)
        .post(`/api/proposals/${a.proposalId}/deployments`)
        .set('x-api-key', a.product.apiKey)
        .send(body as object);
    const unknownId = '3f2c1a7e-0000-4000-8000-000000000000';
    const ids = (n: number) =>
      Array.from({ length: n }, (_, i) => `3f2c1a7e-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const cases: [unknown, string, string][] = [
      [{ contexts: [unknownId] }, 'body.contexts.0', 'invalid_value'],
      [{ contexts: [a.context.id, elsewhere.id] }, 'body.contexts.1', 'invalid_value'],
      [{ control_contexts: [elsewhere.id] }, 'body.control_contexts.0', 'invalid_value'],
      [{ control_contexts: [a.context.id] }, 'body.control_contexts.0', 'custom'],
      [{ contexts: [search!.id], control_contexts: [search!.id] }, 'body.control_contexts.0', 'custom'],
      [{ contexts: [] }, 'body.contexts', 'too_small'],
      [{ contexts: [a.context.id, a.context.id] }, 'body.contexts', 'custom'],
      [{ contexts: ids(21) }, 'body.contexts', 'too_big'],
      [{ control_contexts: ids(51) }, 'body.control_contexts', 'too_big'],
      [{ control_contexts: ['not-a-uuid'] }, 'body.control_contexts.0', 'invalid_format'],
    ];
    for (const [body, path, code] of cases) {
      const res = await post(body);
      expect([res.status, res.body.code]).toEqual([400, 'invalid_request']);
      expect(res.body.details.issues).toContainEqual(expect.objectContaining({ path, code }));
    }
    expect(await h.db.deployment.count({ where: { proposalId: a.proposalId } })).toBe(0);
    const usage = await h.db.usageCounter.findMany({ where: { userId: a.user.userId } });
    expect(usage.every((u) => u.deployments === 0)).toBe(true);
    // Named rightly, it is stored as named.
    const ok = await post({ contexts: [a.context.id, search!.id] }).expect(201);
    expect(ok.body).toMatchObject({ contexts: [a.context.id, search!.id], control_contexts: null });
    expect(await h.db.deployment.findUniqueOrThrow({ where: { id: ok.body.id } })).toMatchObject({
      treatedContextIds: [a.context.id, search!.id],
      controlContextIds: [],
      signalTypes: ['payment_failed'],
    });
  });
});

describe("Verdicts stored before controls, and the monitor's provisional decision", () => {
  test('When a verdict was stored before controls existed, then it is shown as it was, uncontrolled, with nothing invented', async () => {
    const a = await approvedProposal();
    const d = await closedDeployment(a, { total: 10, failing: 1 }, { total: 10, failing: 1 });
    const at = d.deployedAt.getTime();
    const legacy = {
      verdict: 'regressed',
      reason: 'significant',
      provisional: false,
      before: {
        from: new Date(at - DAY_MS).toISOString(),
        to: d.deployedAt.toISOString(),
        signals: 120,
        negative: 30,
        negative_rate: 0.25,
      },
      after: {
        from: d.deployedAt.toISOString(),
        to: new Date(at + DAY_MS).toISOString(),
        signals: 90,
        negative: 36,
        negative_rate: 0.4,
      },
      z: 2.3172,
      p_value: 0.02049,
      alpha: 0.05,
      min_signals: 30,
      computed_at: new Date().toISOString(),
    };
    await h.db.$executeRawUnsafe(
      `UPDATE deployments SET verdict = 'regressed', verification = $2::jsonb, verified_at = now(),
              treated_context_ids = '{}', signal_types = '{}' WHERE id = $1::uuid`,
      d.id,
      JSON.stringify(legacy),
    );
    const [listed] = (await listDeployments(a).expect(200)).body;
    expect(listed.contexts).toEqual([a.context.id]);
    expect(listed.verification).toEqual({
      ...legacy,
      provisional_note: null,
      label: 'uncontrolled',
      effect: null,
      method: {
        estimator: 'before_after',
        treated_contexts: [a.context.id],
        control_selection: 'automatic',
        control_contexts: [],
        signal_types: [],
        windows: {
          before: { from: legacy.before.from, to: legacy.before.to },
          after: { from: legacy.after.from, to: legacy.after.to },
          placebo_before: null,
          placebo_after: null,
          period_minutes: 1440,
          whole_weeks: false,
          reweighted: false,
        },
      },
      control: null,
      naive: null,
      placebo: null,
      traffic: null,
      per_type: [],
      monitor: null,
    });
  });

  test('When the monitor asks for an open deployment, then it gets the provisional figures with the always-valid check; for a closed or unknown one, nothing', async () => {
    const a = await approvedProposal();
    const [search] = await withControls(a);
    const deployedAt = new Date(Date.now() - 60 * 60_000);
    const hour = (from: Date) => [from, new Date(from.getTime() + 60 * 60_000)] as const;
    // A week earlier 10 % failing in both contexts; since the deployment 40 % in the treated one only.
    await history(a, ...hour(new Date(deployedAt.getTime() - WEEK_MS)), 300, 30);
    await history(a, ...hour(new Date(deployedAt.getTime() - WEEK_MS)), 300, 30, search!.id);
    await history(a, deployedAt, new Date(), 300, 120);
    await history(a, deployedAt, new Date(), 300, 30, search!.id);
    const open = await request(h.baseUrl)
      .post(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', a.product.apiKey)
      .send({ deployed_at: deployedAt.toISOString(), window_minutes: 240 })
      .expect(201);
    const decision = await h.service.deployments.provisionalDecision(open.body.id);
    expect(decision?.deployment).toMatchObject({ id: open.body.id, treatedContextIds: [a.context.id] });
    expect(decision?.verification).toMatchObject({
      provisional: true,
      verdict: 'inconclusive',
      reason: 'provisional',
      label: 'observational',
      p_value: null,
      effect: { p_value: null },
      monitor: { regression_detected: true },
    });
    expect(decision!.verification.monitor!.always_valid_p_value).toBeLessThan(0.05);
    expect(decision!.verification.effect!.estimate).toBeGreaterThan(1);
    // Reading stores nothing.
    expect(await stored(open.body.id)).toMatchObject({ verdict: 'pending', verification: null });
    const closed = await closedDeployment(a, { total: 40, failing: 4 }, { total: 40, failing: 4 });
    expect(await h.service.deployments.provisionalDecision(closed.id)).toBeUndefined();
    expect(
      await h.service.deployments.provisionalDecision('3f2c1a7e-0000-4000-8000-000000000000'),
    ).toBeUndefined();
  });
});

describe('Series', () => {
  test('When a context has signals in some hours, then the series has every hour with exact counts and empty ones at zero', async () => {
    const a = await approvedProposal();
    const to = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000); // an hour boundary in the past
    const from = new Date(to.getTime() - 6 * 3_600_000);
    // Hour 1: 4 signals, 1 failing; hour 4: 10 signals, 5 failing; the rest empty.
    await history(a, new Date(from.getTime() + 3_600_000), new Date(from.getTime() + 2 * 3_600_000), 4, 1);
    await history(
      a,
      new Date(from.getTime() + 4 * 3_600_000),
      new Date(from.getTime() + 5 * 3_600_000),
      10,
      5,
    );
    const res = await request(h.baseUrl)
      .get(`/api/context/${a.context.id}/series`)
      .query({ from: from.toISOString(), to: to.toISOString(), bucket: 'hour' })
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    expect(res.body).toEqual(
      [0, 1, 2, 3, 4, 5].map((i) => ({
        start: new Date(from.getTime() + i * 3_600_000).toISOString(),
        ...(i === 1
          ? { signals: 4, negative: 1, negative_rate: 0.25 }
          : i === 4
            ? { signals: 10, negative: 5, negative_rate: 0.5 }
            : { signals: 0, negative: 0, negative_rate: null }),
      })),
    );
    const days = await a.user.agent
      .get(`/api/context/${a.context.id}/series`)
      .query({ from: new Date(to.getTime() - 3 * DAY_MS).toISOString(), to: to.toISOString(), bucket: 'day' })
      .expect(200);
    expect(days.body.length).toBeGreaterThanOrEqual(3);
    expect(days.body.reduce((n: number, b: { signals: number }) => n + b.signals, 0)).toBe(14);
    // Default: the last 7 days by hour, including the burst sent now.
    const week = await request(h.baseUrl)
      .get(`/api/context/${a.context.id}/series`)
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    expect([168, 169]).toContain(week.body.length);
    expect(week.body.reduce((n: number, b: { signals: number }) => n + b.signals, 0)).toBe(24);
  });

  test('When the range is bad or the context is not the caller’s, then 400, 404 or 401', async () => {
    const a = await approvedProposal();
    const other = await approvedProposal();
    const url = `/api/context/${a.context.id}/series`;
    const now = Date.now();
    const cases: [Record<string, string>, number][] = [
      [{ from: new Date(now).toISOString(), to: new Date(now - 1000).toISOString() }, 400],
      [{ from: new Date(now - 200 * DAY_MS).toISOString(), bucket: 'hour' }, 400],
      [{ from: new Date(now - 400 * DAY_MS).toISOString(), bucket: 'day' }, 400],
      [{ bucket: 'week' }, 400],
      [{ from: 'last tuesday' }, 400],
    ];
    for (const [query, status] of cases) {
      const res = await request(h.baseUrl).get(url).query(query).set('x-api-key', a.product.apiKey);
      expect([res.status, res.body.code]).toEqual([status, 'invalid_request']);
      expect(res.body.details.issues[0]).toMatchObject({ path: expect.stringMatching(/^query\./) });
    }
    const tooLong = await request(h.baseUrl)
      .get(url)
      .query({ from: new Date(now - 200 * DAY_MS).toISOString(), bucket: 'hour' })
      .set('x-api-key', a.product.apiKey);
    expect(tooLong.body.details).toEqual({
      issues: [
        {
          path: 'query.from',
          code: 'custom',
          message: expect.stringMatching(
            /^must be at most 2000 hour buckets before `to` \(this range needs \d+\)$/,
          ),
        },
      ],
    });
    const year = await request(h.baseUrl)
      .get(url)
      .query({ from: new Date(now - 365 * DAY_MS).toISOString(), bucket: 'day' })
      .set('x-api-key', a.product.apiKey);
    expect([year.status, year.body.length]).toEqual([200, 366]);
    const foreignKey = await request(h.baseUrl).get(url).set('x-api-key', other.product.apiKey);
    const foreignSession = await other.user.agent.get(url);
    expect([foreignKey.status, foreignSession.status]).toEqual([404, 404]);
    expect((await request(h.baseUrl).get(url)).status).toBe(401);
  });
});

describe('Renaming and deleting products', () => {
  test('When a product is renamed, then only its owner can, and the key stays', async () => {
    const a = await approvedProposal();
    const other = await signUp(h);
    const foreign = await other.agent
      .patch(`/api/products/${a.product.id}`)
      .set('x-csrf-token', other.csrf)
      .send({ name: 'Mine' });
    expect(foreign.status).toBe(404);
    const bad = await a.user.agent
      .patch(`/api/products/${a.product.id}`)
      .set('x-csrf-token', a.user.csrf)
      .send({ name: '  ' });
    expect(bad.status).toBe(400);
    const res = await a.user.agent
      .patch(`/api/products/${a.product.id}`)
      .set('x-csrf-token', a.user.csrf)
      .send({ name: 'Checkout (web)' })
      .expect(200);
    expect(res.body).toMatchObject({ id: a.product.id, name: 'Checkout (web)', context_count: 1 });
    expect((await h.db.product.findUniqueOrThrow({ where: { id: a.product.id } })).name).toBe(
      'Checkout (web)',
    );
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', a.product.apiKey)
      .send({ type: 'x' })
      .expect(200);
  });

  test('When a product is deleted, then everything it holds goes and its key stops working at once on every replica', async () => {
    const a = await approvedProposal();
    const d = await closedDeployment(a, { total: 40, failing: 10 }, { total: 40, failing: 12 });
    // The other replica has the key in its cache.
    await request(replica.baseUrl)
      .post('/api/signals')
      .set('x-api-key', a.product.apiKey)
      .send({ type: 'checkout_completed' })
      .expect(200);
    await request(replica.baseUrl).get('/api/proposals').set('x-api-key', a.product.apiKey).expect(200);

    const details = await a.user.agent.get(`/api/products/${a.product.id}`).expect(200);
    expect(details.body.contents).toEqual({
      contexts: 1,
      signals: 10 + 80 + 1,
      proposals: 1,
      deployments: 1,
    });
    const other = await signUp(h);
    expect(
      (await other.agent.delete(`/api/products/${a.product.id}`).set('x-csrf-token', other.csrf)).status,
    ).toBe(404);
    expect((await a.user.agent.delete(`/api/products/${a.product.id}`)).status).toBe(403);

    const res = await a.user.agent
      .delete(`/api/products/${a.product.id}`)
      .set('x-csrf-token', a.user.csrf)
      .expect(200);
    expect(res.body).toEqual({ id: a.product.id, deleted: true, contents: details.body.contents });
    // The notification reaches the replica within milliseconds; its cached entry would last a minute.
    await waitFor(
      async () =>
        (await request(replica.baseUrl).get('/api/proposals').set('x-api-key', a.product.apiKey)).status ===
        401,
      'the replica to refuse the deleted key',
      2_000,
    );
    const signalsNow = await request(replica.baseUrl)
      .post('/api/signals')
      .set('x-api-key', a.product.apiKey)
      .send({ type: 'checkout_completed' });
    expect([signalsNow.status, signalsNow.body.code]).toEqual([401, 'unauthorized']);
    const proposalsNow = await request(replica.baseUrl)
      .get('/api/proposals')
      .set('x-api-key', a.product.apiKey);
    expect(proposalsNow.status).toBe(401);
    expect(await h.db.product.count({ where: { id: a.product.id } })).toBe(0);
    expect(await h.db.context.count({ where: { productId: a.product.id } })).toBe(0);
    expect(await h.db.signal.count({ where: { productId: a.product.id } })).toBe(0);
    expect(await h.db.proposal.count({ where: { productId: a.product.id } })).toBe(0);
    expect(await h.db.deployment.count({ where: { id: d.id } })).toBe(0);
    // The month's usage stays counted.
    expect((await h.db.usageCounter.findFirstOrThrow({ where: { userId: a.user.userId } })).signals).toBe(11);
  });
});
