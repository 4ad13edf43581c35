import { randomUUID } from 'node:crypto';
import request from 'supertest';
import {
  changeOutcome,
  feedbackPriority,
  IMPROVED_FACTOR,
  REGRESSED_FACTOR,
} from '../src/domain/proposal-priority';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';

// The priority feedback (README, "Priority feedback"): a deployment's outcome scales the priority of
// the proposals of its kind (same context, same failing type).

describe('The priority rule', () => {
  it('When the last change of a kind regressed, improved or told nothing, then the score is halved, raised by a quarter (at most 100) or kept', () => {
    expect(REGRESSED_FACTOR).toBe(0.5);
    expect(IMPROVED_FACTOR).toBe(1.25);
    expect(feedbackPriority(80, 'regressed')).toBe(40);
    expect(feedbackPriority(60, 'improved')).toBe(75);
    expect(feedbackPriority(90, 'improved')).toBe(100);
    expect(feedbackPriority(33.33, 'regressed')).toBe(16.7);
    for (const outcome of ['inconclusive', 'pending', null] as const)
      expect(feedbackPriority(42, outcome)).toBe(42);
    // A revert answers the very change that regressed: never scaled.
    expect(feedbackPriority(90, 'regressed', true)).toBe(90);
  });

  it('When the monitor detected a regression, then it counts as regressed unless the final verdict is improved', () => {
    expect(changeOutcome('pending', true)).toBe('regressed');
    expect(changeOutcome('inconclusive', true)).toBe('regressed');
    expect(changeOutcome('improved', true)).toBe('improved');
    expect(changeOutcome('pending', false)).toBe('pending');
    expect(changeOutcome('regressed', false)).toBe('regressed');
  });

  it('When scores are drawn at random, then the result stays within [0, 100] and within the factors of the base', () => {
    for (let i = 0; i < 200; i++) {
      const base = Math.random() * 100;
      for (const outcome of ['improved', 'regressed', 'inconclusive', 'pending', null] as const) {
        const s = feedbackPriority(base, outcome);
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThanOrEqual(100);
        expect(s).toBeGreaterThanOrEqual(Math.round(base * REGRESSED_FACTOR * 10) / 10 - 0.05);
        expect(s).toBeLessThanOrEqual(Math.min(100, base * IMPROVED_FACTOR) + 0.05);
      }
    }
  });
});

describe('Priority feedback on the wire', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('signal_feedback_proposal_priority_test');
  });
  afterAll(() => h?.close());

  /** A proposal stored as the analysis would, of `type` (its most frequent failing type). */
  async function proposal(
    productId: string,
    contextId: string,
    type: string,
    score: number,
    status: 'pending' | 'approved' = 'pending',
  ): Promise<string> {
    const p = await h.db.proposal.create({
      data: {
        productId,
        contextId,
        status,
        priorityScore: score,
        diagnosis: `${type} is frequent`,
        currentState: '-',
        proposedChange: `Fix ${type}`,
        evidenceSummary: '-',
        predictedImpact: '-',
        signalCount: 10,
        evidence: { top_failing_types: [{ type, count: 6 }] },
        evidenceHash: randomUUID(),
        source: 'evidence',
      },
    });
    return p.id;
  }

  it('When a change of one kind regressed and then improved, then the pending proposals of that kind fall to half and rise by a quarter, other kinds keep their score, the listing is ordered by the scaled score and each proposal names the last change of its kind', async () => {
    const user = await signUp(h);
    const product = await createProduct(user);
    const checkout = await createContext(user, product.id);
    const search = await createContext(user, product.id, {
      name: 'Search',
      negative_signals: ['no_results'],
    });
    const shipped = await proposal(product.id, checkout.id, 'payment_failed', 70, 'approved');
    const sameKind = await proposal(product.id, checkout.id, 'payment_failed', 80);
    const otherType = await proposal(product.id, checkout.id, 'checkout_abandoned', 50);
    const otherContext = await proposal(product.id, search.id, 'payment_failed', 60);
    const deployment = await h.db.deployment.create({
      data: {
        proposalId: shipped,
        deployedAt: new Date(Date.now() - 3_600_000),
        version: 'v7',
        windowMinutes: 1440,
        signalType: 'payment_failed',
        alpha: 0.05,
      },
    });
    const list = async () =>
      (
        await request(h.baseUrl)
          .get('/api/proposals?status=pending')
          .set('x-api-key', product.apiKey)
          .expect(200)
      ).body as {
        id: string;
        priority_score: number;
        base_priority_score: number;
        last_change_of_kind: null | { deployment_id: string; outcome: string; regression_detected: boolean };
      }[];

    // Pending and nothing detected: nothing changes, but the proposal shows the change.
    let listed = await list();
    expect(listed.map((p) => [p.id, p.priority_score])).toEqual([
      [sameKind, 80],
      [otherContext, 60],
      [otherType, 50],
    ]);
    expect(listed[0]!.last_change_of_kind).toMatchObject({
      deployment_id: deployment.id,
      outcome: 'pending',
      regression_detected: false,
    });
    expect(listed[1]!.last_change_of_kind).toBeNull();

    // The monitor detected a regression while the window is open.
    await h.db.deployment.update({
      where: { id: deployment.id },
      data: { regressionDetectedAt: new Date() },
    });
    listed = await list();
    expect(listed.map((p) => [p.id, p.priority_score, p.base_priority_score])).toEqual([
      [otherContext, 60, 60],
      [otherType, 50, 50],
      [sameKind, 40, 80],
    ]);
    expect(listed[2]!.last_change_of_kind).toMatchObject({ outcome: 'regressed', regression_detected: true });

    // The final verdict says improved: the kind gains.
    await h.db.deployment.update({ where: { id: deployment.id }, data: { verdict: 'improved' } });
    listed = await list();
    expect(listed.map((p) => [p.id, p.priority_score])).toEqual([
      [sameKind, 100],
      [otherContext, 60],
      [otherType, 50],
    ]);

    // The session listing applies the same rule.
    const bySession = await user.agent
      .get(`/api/proposals?status=pending&product_id=${product.id}`)
      .expect(200);
    expect((bySession.body as { id: string; priority_score: number }[])[0]).toMatchObject({
      id: sameKind,
      priority_score: 100,
    });
  });
});
