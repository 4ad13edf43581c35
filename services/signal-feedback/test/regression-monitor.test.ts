import { createHash } from 'node:crypto';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import {
  createContext,
  createProduct,
  signUp,
  startHarness,
  type Harness,
  type SignedIn,
  waitFor,
} from './support/harness';
import { DeploymentRepository } from '../src/data/deployments';
import { monthKey } from '../src/domain/plans';
import type { VerificationResult } from '../src/schemas/verification';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';
import { insertSignalHistory } from './support/signal-history';

// The open-window monitor and product webhooks (README, "The open-window monitor" and "Webhooks
// (signal-feedback)"), end to end: the real database, the service's own delivery worker and a local
// receiver that verifies the Standard Webhooks signature as a customer's would.
let h: Harness;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  h = await startHarness('signal_feedback_regression_monitor_test', {
    env: {
      SSRF_ALLOWLIST: '127.0.0.1',
      MONITOR_INTERVAL_MS: '0',
      WEBHOOK_POLL_INTERVAL_MS: '20',
      WEBHOOK_RETRY_BASE_MS: '20',
      WEBHOOK_MAX_ATTEMPTS: '3',
    },
  });
});
afterAll(async () => {
  await h?.close();
  await receiver?.close();
});

const MINUTE_MS = 60_000;
const WEEK_MS = 7 * 24 * 60 * MINUTE_MS;

interface Approved {
  user: SignedIn;
  product: { id: string; apiKey: string };
  context: { id: string };
  proposalId: string;
}

/** A user with one product, one checkout context and one approved proposal. */
async function approvedProposal(): Promise<Approved> {
  const user = await signUp(h);
  await h.db.$executeRawUnsafe(`UPDATE users SET plan = 'scale' WHERE id = $1::uuid`, user.userId);
  const product = await createProduct(user);
  const context = await createContext(user, product.id);
  const burst = [
    ...Array.from({ length: 6 }, () => ({ type: 'payment_failed' })),
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

/** `total` signals of the context over `[from, to)`, `failing` of them `payment_failed`, straight into the table. */
const history = (a: Approved, from: Date, to: Date, total: number, failing: number) =>
  insertSignalHistory(h.db, { productId: a.product.id, contextId: a.context.id, from, to, total, failing });

/** An event queued for `a`'s product straight into the outbox, to `url` (`tag` names its webhook-id). */
const queueDelivery = (a: Approved, tag: string, url: string) =>
  h.db.webhookDelivery.create({
    data: {
      productId: a.product.id,
      eventType: 'regression_detected',
      messageId: `msg_${tag}_${a.product.id}`,
      url,
      body: '{}',
    },
  });

/** The one delivery of `a`'s product, once the worker has given it up. */
async function givenUp(a: Approved, what: string) {
  await waitFor(async () => {
    const row = await h.db.webhookDelivery.findFirst({ where: { productId: a.product.id } });
    return row?.status === 'failed';
  }, what);
  return h.db.webhookDelivery.findFirstOrThrow({ where: { productId: a.product.id } });
}

/**
 * A deployment an hour ago with a day-long window (still open), after `failingAfter` of 300 signals
 * failed against 15 of 300 before it (the hour before and the same hour a week earlier).
 */
async function openDeployment(a: Approved, failingAfter: number): Promise<string> {
  const at = new Date(Date.now() - 60 * MINUTE_MS);
  await history(a, new Date(at.getTime() - 60 * MINUTE_MS), at, 300, 15);
  await history(
    a,
    new Date(at.getTime() - WEEK_MS),
    new Date(at.getTime() - WEEK_MS + 60 * MINUTE_MS),
    300,
    15,
  );
  await history(a, at, new Date(Date.now() - MINUTE_MS), 300, failingAfter);
  const res = await request(h.baseUrl)
    .post(`/api/proposals/${a.proposalId}/deployments`)
    .set('x-api-key', a.product.apiKey)
    .send({ deployed_at: at.toISOString(), version: 'v2.4.0', window_minutes: 1440 })
    .expect(201);
  return res.body.id as string;
}

/** `regressions_detected_total` as /metrics reports it now. */
async function detectedTotal(): Promise<number> {
  const metrics = await (await fetch(`${h.metricsUrl}/metrics`)).text();
  return Number(/regressions_detected_total\{service="signal-feedback"\} (\d+)/.exec(metrics)?.[1] ?? 0);
}

const setWebhook = (a: Approved, body: Record<string, unknown>) =>
  a.user.agent.put(`/api/products/${a.product.id}/webhook`).set('x-csrf-token', a.user.csrf).send(body);

describe('Product webhook settings', () => {
  it('When a URL is set without a secret, then a whsec_ secret is generated and shown this once; reading the settings never shows it; a rotation shows a new one', async () => {
    const a = await approvedProposal();
    const first = await setWebhook(a, { url: receiver.url });
    expect(first.status).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.body).toMatchObject({ product_id: a.product.id, url: receiver.url, secret_set: true });
    expect(first.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const read = await a.user.agent.get(`/api/products/${a.product.id}/webhook`).expect(200);
    expect(read.body).toEqual({
      product_id: a.product.id,
      url: receiver.url,
      secret_set: true,
      deliveries: [],
    });
    const kept = await setWebhook(a, { url: `${receiver.url}/v2` }).expect(200);
    expect(kept.body.secret).toBeUndefined();
    const stored = await h.db.product.findUniqueOrThrow({ where: { id: a.product.id } });
    expect(stored.webhookSecret).toBe(first.body.secret);

    const rotated = await setWebhook(a, { url: receiver.url, rotate_secret: true }).expect(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(first.body.secret);

    const own = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect((await setWebhook(a, { url: receiver.url, secret: own })).body.secret).toBeUndefined();
    expect((await h.db.product.findUniqueOrThrow({ where: { id: a.product.id } })).webhookSecret).toBe(own);

    const removed = await a.user.agent
      .delete(`/api/products/${a.product.id}/webhook`)
      .set('x-csrf-token', a.user.csrf)
      .expect(200);
    expect(removed.body).toMatchObject({ url: null, secret_set: false });
  });

  it.each([
    ['ftp://127.0.0.1/hooks', 'must be an absolute http(s) URL'],
    ['http://user:pw@127.0.0.1/hooks', 'must not carry a user name or password'],
    ['http://127.0.0.1/hooks#x', 'must not carry a #fragment'],
    ['http://10.1.2.3/hooks', 'is not allowed'],
    ['http://169.254.169.254/latest/meta-data', 'is not allowed'],
    ['http://[::1]:8080/hooks', 'is not allowed'],
  ])(
    'When the URL is %s, then 400 invalid_request names body.url and nothing is stored',
    async (url, message) => {
      const a = await approvedProposal();
      const res = await setWebhook(a, { url });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.details.issues[0]).toMatchObject({ path: 'body.url' });
      expect(res.body.details.issues[0].message).toContain(message);
      expect((await h.db.product.findUniqueOrThrow({ where: { id: a.product.id } })).webhookUrl).toBeNull();
    },
  );

  it("When the secret is not whsec_ base64 of 24 to 64 bytes, or the product is another user's, then 400 or 404", async () => {
    const a = await approvedProposal();
    const short = await setWebhook(a, {
      url: receiver.url,
      secret: `whsec_${Buffer.alloc(8).toString('base64')}`,
    });
    expect(short.status).toBe(400);
    expect(short.body.details.issues[0]).toMatchObject({ path: 'body.secret' });
    expect((await setWebhook(a, { url: receiver.url, secret: 'hunter2' })).status).toBe(400);
    const other = await signUp(h);
    const res = await other.agent
      .put(`/api/products/${a.product.id}/webhook`)
      .set('x-csrf-token', other.csrf)
      .send({ url: receiver.url });
    expect(res.status).toBe(404);
    expect((await other.agent.get(`/api/products/${a.product.id}/webhook`)).status).toBe(404);
  });
});

describe('The open-window monitor', () => {
  it('When an open deployment clearly hurts, then two concurrent passes record regression_detected once, raise one "revert" proposal and the receiver gets one signed event (retried after a 503 under the same webhook-id)', async () => {
    const a = await approvedProposal();
    const secret = (await setWebhook(a, { url: receiver.url }).expect(200)).body.secret as string;
    const deploymentId = await openDeployment(a, 120);
    receiver.plan([503]);
    const seen = receiver.received.length;
    const detectedBefore = await detectedTotal();

    const passes = await Promise.all([h.service.monitor.runOnce(), h.service.monitor.runOnce()]);
    expect(passes.reduce((n, p) => n + p.detected, 0)).toBe(1);
    // A later pass (its spacing undone) finds it already recorded.
    await h.db.$executeRawUnsafe(
      `UPDATE deployments SET monitored_at = NULL WHERE id = $1::uuid`,
      deploymentId,
    );
    expect((await h.service.monitor.runOnce()).detected).toBe(0);

    const d = await h.db.deployment.findUniqueOrThrow({ where: { id: deploymentId } });
    expect(d.regressionDetectedAt).toBeInstanceOf(Date);
    expect(d.verdict).toBe('pending');
    const listed = await request(h.baseUrl)
      .get(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    expect(listed.body[0]).toMatchObject({
      id: deploymentId,
      regression_detected_at: d.regressionDetectedAt!.toISOString(),
    });
    const evidence = d.regressionEvidence as { always_valid_p_value: number; effect: { ci_low: number } };
    expect(evidence.always_valid_p_value).toBeLessThanOrEqual(0.05);
    expect(evidence.effect.ci_low).toBeGreaterThan(0);

    const proposals = await request(h.baseUrl)
      .get('/api/proposals')
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    const reverts = (
      proposals.body as {
        regression_of?: { deployment_id: string };
        proposed_change: string;
        priority_score: number;
        id: string;
      }[]
    ).filter((p) => p.regression_of?.deployment_id === deploymentId);
    expect(reverts).toHaveLength(1);
    expect(reverts[0]!.proposed_change).toBe(`Revert deployment ${deploymentId} (version v2.4.0).`);
    expect(reverts[0]!.priority_score).toBe(90);

    await waitFor(async () => receiver.received.length >= seen + 2, 'the retried delivery');
    const [failed, delivered] = receiver.received.slice(seen);
    expect(failed!.answered).toBe(503);
    expect(delivered!.answered).toBe(200);
    expect(delivered!.headers['webhook-id']).toBe(failed!.headers['webhook-id']);
    expect(delivered!.headers['x-webhook-attempt']).toBe('2');
    const event = new Webhook(secret).verify(
      delivered!.body,
      delivered!.headers as Record<string, string>,
    ) as {
      type: string;
      data: Record<string, unknown>;
    };
    expect(event.type).toBe('regression_detected');
    expect(event.data).toMatchObject({
      product_id: a.product.id,
      deployment: { id: deploymentId, version: 'v2.4.0', window_minutes: 1440 },
      proposal: { id: a.proposalId, context_id: a.context.id },
      revert_proposal_id: reverts[0]!.id,
      provisional: true,
      always_valid_p_value: evidence.always_valid_p_value,
      // The 120 written into the window and the 6 of the burst that made the proposal.
      figures: { after: { signals: 310, failing: 126 } },
    });
    // Signed with another secret, the same delivery does not verify.
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(
        delivered!.body,
        delivered!.headers as Record<string, string>,
      ),
    ).toThrow();

    await waitFor(async () => {
      const row = await h.db.webhookDelivery.findFirst({ where: { productId: a.product.id } });
      return row?.status === 'delivered';
    }, 'the outbox row marked delivered');
    const metrics = await (await fetch(`${h.metricsUrl}/metrics`)).text();
    // Other tests of this file detect regressions too, in a random order.
    expect(await detectedTotal()).toBe(detectedBefore + 1);
    expect(metrics).toMatch(/webhook_attempts_total\{outcome="retry",service="signal-feedback"\} 1\b/);
    expect(metrics).toMatch(/webhook_attempts_total\{outcome="delivered",service="signal-feedback"\} [1-9]/);
    const settings = await a.user.agent.get(`/api/products/${a.product.id}/webhook`).expect(200);
    expect(settings.body.deliveries).toEqual([
      expect.objectContaining({
        event_type: 'regression_detected',
        status: 'delivered',
        attempts: 2,
        last_status: 200,
      }),
    ]);
  });

  it('When the monitor already raised the revert and the closed window then says regressed, then the verdict is stored and the month counts the one proposal once', async () => {
    const a = await approvedProposal();
    const deploymentId = await openDeployment(a, 120);
    expect((await h.service.monitor.runOnce()).detected).toBe(1);
    const month = monthKey(new Date());
    const counted = async () =>
      (
        await h.db.$queryRawUnsafe<{ proposals: number }[]>(
          `SELECT proposals FROM usage_counters WHERE user_id = $1::uuid AND month = $2::date`,
          a.user.userId,
          month,
        )
      )[0]?.proposals;
    const before = await counted();
    const open = await h.db.deployment.findUniqueOrThrow({ where: { id: deploymentId } });
    const verification = {
      ...(open.regressionEvidence as object),
      verdict: 'regressed',
    } as VerificationResult;
    const outcome = await new DeploymentRepository(h.db).complete(deploymentId, verification, {
      proposal: {
        productId: a.product.id,
        contextId: a.context.id,
        priorityScore: 90,
        diagnosis: 'd',
        currentState: 'c',
        proposedChange: 'p',
        evidenceSummary: 'e',
        predictedImpact: 'i',
        signalCount: 1,
        evidence: {},
        // The verdict's proposal and the monitor's revert share their evidence hash.
        evidenceHash: createHash('sha256').update(`regression:${deploymentId}`).digest('hex'),
        source: 'evidence',
      },
      userId: a.user.userId,
      month,
      limit: null,
    });
    expect(outcome).toEqual({ stored: true, regressionProposalId: null });
    expect(await counted()).toBe(before);
    expect((await h.db.deployment.findUniqueOrThrow({ where: { id: deploymentId } })).verdict).toBe(
      'regressed',
    );
  });

  it('When an open deployment does not change the failing rate, then nothing is recorded and no webhook is queued', async () => {
    const a = await approvedProposal();
    await setWebhook(a, { url: receiver.url }).expect(200);
    const deploymentId = await openDeployment(a, 15);
    await h.service.monitor.runOnce();
    const d = await h.db.deployment.findUniqueOrThrow({ where: { id: deploymentId } });
    expect(d.monitoredAt).toBeInstanceOf(Date);
    expect(d.regressionDetectedAt).toBeNull();
    const listed = await request(h.baseUrl)
      .get(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', a.product.apiKey)
      .expect(200);
    expect(listed.body[0]).toMatchObject({ id: deploymentId, regression_detected_at: null });
    expect(await h.db.webhookDelivery.count({ where: { productId: a.product.id } })).toBe(0);
  });

  it('When a queued delivery points at a metadata address, then the guarded connection refuses it and it is given up at the first attempt', async () => {
    const a = await approvedProposal();
    await setWebhook(a, { url: receiver.url }).expect(200);
    const seen = receiver.received.length;
    await queueDelivery(a, 'ssrf', 'http://169.254.169.254/latest/meta-data');
    const row = await givenUp(a, 'the refused delivery given up');
    expect(row.attempts).toBe(1);
    expect(row.lastStatus).toBeNull();
    expect(row.lastError).toMatch(/169\.254\.169\.254|not allowed|metadata/i);
    expect(receiver.received.length).toBe(seen);
  });
  it('When a queued delivery belongs to a product whose secret is gone, then it is given up unsent at once, naming why', async () => {
    const a = await approvedProposal();
    await setWebhook(a, { url: receiver.url }).expect(200);
    const seen = receiver.received.length;
    await h.db.$transaction([
      h.db.product.update({ where: { id: a.product.id }, data: { webhookSecret: null } }),
      queueDelivery(a, 'nosecret', receiver.url),
    ]);
    const row = await givenUp(a, 'the unsignable delivery given up');
    expect(row.lastStatus).toBeNull();
    expect(row.lastError).toBe('the product has no webhook secret any more');
    expect(receiver.received.length).toBe(seen);
  });
});
