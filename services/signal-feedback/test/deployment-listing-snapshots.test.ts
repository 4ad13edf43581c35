import request from 'supertest';
import {
  createContext,
  createProduct,
  freshDatabase,
  signUp,
  startHarness,
  type Harness,
} from './support/harness';
import { insertSignalHistory } from './support/signal-history';

// The open-deployment listing's fast path (README, "The open-window monitor"; docs/architecture.md,
// "Fast paths"): three replicas on one database and one clock. `monitorReplica` runs the monitor's
// pass (which stores the figures), `servingReplica` only lists, both with DEPLOYMENT_LISTING_SNAPSHOTS
// on; `offReplica` has it off and always computes. Nothing is shared but the database.
let monitorReplica: Harness;
let servingReplica: Harness;
let offReplica: Harness;
let clockMs = Date.now();
const now = () => new Date(clockMs);
const MINUTE_MS = 60_000;
const WEEK_MS = 7 * 24 * 60 * MINUTE_MS;
/** Two monitor periods: MONITOR_INTERVAL_MS is 0 (no loop; the test runs each pass), counted as 1 s. */
const MAX_AGE_MS = 2_000;

beforeAll(async () => {
  const databaseUrl = await freshDatabase('signal_feedback_listing_snapshots_test');
  const start = (snapshots: boolean) =>
    startHarness('', {
      reuseDatabaseUrl: databaseUrl,
      env: { MONITOR_INTERVAL_MS: '0', DEPLOYMENT_LISTING_SNAPSHOTS: String(snapshots) },
      overrides: { now },
    });
  monitorReplica = await start(true);
  servingReplica = await start(true);
  offReplica = await start(false);
});
afterAll(async () => {
  await monitorReplica?.close();
  await servingReplica?.close();
  await offReplica?.close();
});

interface Open {
  productId: string;
  apiKey: string;
  checkoutId: string;
  proposalId: string;
  deploymentId: string;
}

/** `total` signals of a context over `[from, to)`, `failing` of them `payment_failed`, straight into the table. */
const history = (
  productId: string,
  contextId: string,
  window: { from: number; to: number },
  total: number,
  failing: number,
) => insertSignalHistory(monitorReplica.db, { productId, contextId, ...window, total, failing });

/**
 * A product with a checkout and an express checkout (its control), and a deployment of the checkout's
 * approved proposal an hour ago with a day-long window (open), with signals before and after it.
 */
async function openDeployment(): Promise<Open> {
  const user = await signUp(monitorReplica);
  await monitorReplica.db.$executeRawUnsafe(
    `UPDATE users SET plan = 'scale' WHERE id = $1::uuid`,
    user.userId,
  );
  const product = await createProduct(user);
  const checkout = await createContext(user, product.id);
  const express = await createContext(user, product.id, { name: 'Express checkout' });
  // Dated by the test's clock, which the analysis reads (the database would date them by its own).
  const timestamp = new Date(clockMs - 2 * 60 * MINUTE_MS).toISOString();
  const burst = [
    ...Array.from({ length: 6 }, () => ({ type: 'payment_failed', context_id: checkout.id, timestamp })),
    ...Array.from({ length: 4 }, () => ({ type: 'checkout_completed', context_id: checkout.id, timestamp })),
  ];
  await request(monitorReplica.baseUrl)
    .post('/api/signals')
    .set('x-api-key', product.apiKey)
    .send(burst)
    .expect(200);
  const run = await user.agent.post('/api/analysis/run').set('x-csrf-token', user.csrf).expect(200);
  const proposalId = (run.body.proposals as { id: string; context_id: string }[]).find(
    (p) => p.context_id === checkout.id,
  )!.id;
  await request(monitorReplica.baseUrl)
    .patch(`/api/proposals/${proposalId}`)
    .set('x-api-key', product.apiKey)
    .send({ status: 'approved' })
    .expect(200);
  const at = clockMs - 60 * MINUTE_MS;
  const weekEarlier = { from: at - WEEK_MS, to: at - WEEK_MS + 59 * MINUTE_MS };
  const after = { from: at, to: clockMs - MINUTE_MS };
  await history(product.id, checkout.id, weekEarlier, 300, 60);
  await history(product.id, checkout.id, after, 300, 15);
  await history(product.id, express.id, weekEarlier, 200, 40);
  await history(product.id, express.id, after, 200, 40);
  const res = await request(monitorReplica.baseUrl)
    .post(`/api/proposals/${proposalId}/deployments`)
    .set('x-api-key', product.apiKey)
    .send({
      deployed_at: new Date(at).toISOString(),
      version: 'v3.1.0',
      window_minutes: 1440,
      control_contexts: [express.id],
    })
    .expect(201);
  return {
    productId: product.id,
    apiKey: product.apiKey,
    checkoutId: checkout.id,
    proposalId,
    deploymentId: res.body.id as string,
  };
}

/** The deployments listing of `o`'s proposal on `replica`, as its product's key sees it. */
async function listing(replica: Harness, o: Open): Promise<Record<string, unknown>[]> {
  const res = await request(replica.baseUrl)
    .get(`/api/proposals/${o.proposalId}/deployments`)
    .set('x-api-key', o.apiKey);
  expect(res.status).toBe(200);
  return res.body as Record<string, unknown>[];
}

const verificationOf = (rows: Record<string, unknown>[]) =>
  rows[0]!.verification as {
    provisional: boolean;
    computed_at: string;
    p_value: number | null;
    effect: { p_value: number | null; z: number | null } | null;
    method: { estimator: string; treated_contexts: string[] };
    after: { signals: number; negative: number };
  };

/** Runs the monitor's pass on its replica (it looks at every open deployment not looked at yet). */
async function monitorPass(): Promise<void> {
  await monitorReplica.service.monitor.runOnce();
}

const storedRow = (id: string) =>
  monitorReplica.db.$queryRawUnsafe<{ provisional_at: Date | null; provisional_figures: unknown }[]>(
    `SELECT provisional_at, provisional_figures FROM deployments WHERE id = $1::uuid`,
    id,
  );

describe('The open-deployment listing with DEPLOYMENT_LISTING_SNAPSHOTS on and off', () => {
  it('When the monitor stored the figures and no signal came since, then another replica serves them, equal to what the listing with the switch off computes at that moment', async () => {
    clockMs = Date.now();
    const o = await openDeployment();
    await monitorPass();
    const [stored] = await storedRow(o.deploymentId);
    expect(stored?.provisional_at?.getTime()).toBe(clockMs);
    const computedThen = await listing(offReplica, o);

    clockMs += 1_000;
    const served = await listing(servingReplica, o);
    expect(served).toEqual(computedThen);
    const v = verificationOf(served);
    expect(v).toMatchObject({ provisional: true, p_value: null, method: { estimator: 'did' } });
    expect(v.effect).toMatchObject({ p_value: null, z: null });
    expect(v.computed_at).toBe(new Date(clockMs - 1_000).toISOString());
    expect(v.after).toMatchObject({ signals: 300, negative: 15 });
    // The monitor's replica serves them too; with the switch off, a listing computes as of now.
    expect(await listing(monitorReplica, o)).toEqual(served);
    expect(verificationOf(await listing(offReplica, o)).computed_at).toBe(now().toISOString());
  });

  it('When a new signal of the product arrives, then the stored figures are stale: every replica computes, with the new signal, the same answer as with the switch off', async () => {
    clockMs = Date.now();
    const o = await openDeployment();
    await monitorPass();
    const before = verificationOf(await listing(servingReplica, o));
    expect(before.computed_at).toBe(now().toISOString());

    await request(servingReplica.baseUrl)
      .post('/api/signals')
      .set('x-api-key', o.apiKey)
      .send({
        type: 'payment_failed',
        context_id: o.checkoutId,
        timestamp: new Date(clockMs - 30_000).toISOString(),
      })
      .expect(200);
    clockMs += 1_000;
    const served = await listing(servingReplica, o);
    expect(verificationOf(served).computed_at).toBe(now().toISOString());
    expect(verificationOf(served).after).toMatchObject({ signals: 301, negative: 16 });
    expect(served).toEqual(await listing(offReplica, o));
    // The row still holds the older figures: they were not served.
    const [stored] = await storedRow(o.deploymentId);
    expect((stored?.provisional_figures as { after: { signals: number } }).after.signals).toBe(300);

    // The next pass (a period later) covers the new signal, and its figures are served again.
    await monitorPass();
    clockMs += 500;
    const again = verificationOf(await listing(servingReplica, o));
    expect(again.computed_at).toBe(new Date(clockMs - 500).toISOString());
    expect(again.after).toMatchObject({ signals: 301, negative: 16 });
  });

  it("When another product receives a signal, then this product's stored figures stay current, and neither product ever gets the other's figures", async () => {
    clockMs = Date.now();
    const a = await openDeployment();
    const b = await openDeployment();
    await monitorPass();
    await request(servingReplica.baseUrl)
      .post('/api/signals')
      .set('x-api-key', b.apiKey)
      .send({ type: 'checkout_completed', context_id: b.checkoutId })
      .expect(200);
    clockMs += 1_000;
    const servedA = verificationOf(await listing(servingReplica, a));
    const servedB = verificationOf(await listing(servingReplica, b));
    expect(servedA.computed_at).toBe(new Date(clockMs - 1_000).toISOString());
    expect(servedB.computed_at).toBe(now().toISOString());
    expect(servedA.method.treated_contexts).toEqual([a.checkoutId]);
    expect(servedB.method.treated_contexts).toEqual([b.checkoutId]);
    // A key never lists another product's proposal, stored figures or not.
    await request(servingReplica.baseUrl)
      .get(`/api/proposals/${a.proposalId}/deployments`)
      .set('x-api-key', b.apiKey)
      .expect(404);
  });

  it('When the stored figures are older than two monitor periods, then the listing computes them', async () => {
    clockMs = Date.now();
    const o = await openDeployment();
    await monitorPass();
    clockMs += MAX_AGE_MS;
    expect(verificationOf(await listing(servingReplica, o)).computed_at).toBe(
      new Date(clockMs - MAX_AGE_MS).toISOString(),
    );
    clockMs += 1;
    const late = await listing(servingReplica, o);
    expect(verificationOf(late).computed_at).toBe(now().toISOString());
    expect(late).toEqual(await listing(offReplica, o));
  });

  it('When the switch is off, then the monitor stores nothing', async () => {
    clockMs = Date.now();
    const o = await openDeployment();
    await offReplica.service.monitor.runOnce();
    const [stored] = await storedRow(o.deploymentId);
    expect(stored).toEqual({ provisional_at: null, provisional_figures: null });
  });
});
