import { runSignalFeedbackDemo } from '../scripts/demo';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_demo_test');
});
afterAll(async () => h.close());

test('When the demo runs against the service, then it prints proposals made from the signals it sent', async () => {
  const lines: string[] = [];
  const result = await runSignalFeedbackDemo({ baseUrl: h.baseUrl, log: (l) => lines.push(l) });
  expect(result.signalsSent).toBe(80);
  expect(result.proposals).toHaveLength(2);
  expect(await h.db.signal.count({ where: { productId: result.productId } })).toBe(80);
  expect(await h.db.proposal.count({ where: { productId: result.productId } })).toBe(2);
  const text = lines.join('\n');
  expect(text).toContain('payment_failed');
  expect(text).toContain('verification_failed');
  expect(text).toContain('card_declined');
});
