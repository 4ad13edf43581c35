import { runSignalFeedbackDemo } from '../scripts/demo';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_demo_test');
});
afterAll(async () => h.close());

// The demo waits, as a user would, for its deployment's one-minute after-window to close.
test("When the demo runs against the service, then it prints proposals made from the signals it sent, and its deployment's verdict", async () => {
  const lines: string[] = [];
  const result = await runSignalFeedbackDemo({
    baseUrl: h.baseUrl,
    log: (l) => lines.push(l),
    pollMs: 2_000,
  });
  expect(result.signalsSent).toBe(140);
  expect(result.proposals).toHaveLength(2);
  expect(await h.db.signal.count({ where: { productId: result.productId } })).toBe(140);
  expect(await h.db.proposal.count({ where: { productId: result.productId } })).toBe(2);
  const text = lines.join('\n');
  expect(text).toContain('payment_failed');
  expect(text).toContain('verification_failed');
  expect(text).toContain('card_declined');

  // Before: 32 payment_failed of 60 checkout signals; after: 4 of 60.
  expect(result.deployment.verification).toMatchObject({
    verdict: 'improved',
    provisional: false,
    before: { signals: 60, negative: 32 },
    after: { signals: 60, negative: 4 },
  });
  const stored = await h.db.deployment.findUniqueOrThrow({ where: { id: result.deployment.id } });
  expect(stored).toMatchObject({
    proposalId: result.deployment.proposalId,
    verdict: 'improved',
    version: 'v2.5.0',
  });
  expect(text).toMatch(
    /verification: IMPROVED \(significant\): 53\.3 % of 60 before -> 6\.7 % of 60 after, z = -5\.\d+/,
  );
}, 150_000);
