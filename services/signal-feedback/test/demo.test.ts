import { runSignalFeedbackDemo } from '../scripts/demo';
import { startHarness, type Harness } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('signal_feedback_demo_test');
});
afterAll(async () => h.close());

// The demo waits, as a user would, for its deployment's after-window to close: one minute here (the
// shortest window the API takes), two in `pnpm demo`.
test("When the demo runs against the service, then it prints proposals made from the signals it sent, and its deployment's verdict", async () => {
  const lines: string[] = [];
  const result = await runSignalFeedbackDemo({
    baseUrl: h.baseUrl,
    log: (l) => lines.push(l),
    pollMs: 2_000,
    windowMinutes: 1,
    databaseUrl: h.databaseUrl,
  });
  // The burst (60 checkout, 20 onboarding), then a week earlier and after the deployment 60 checkout
  // and 40 express checkout signals each.
  expect(result.signalsSent).toBe(280);
  // Two weeks earlier, imported as history: 57 checkout and 40 express checkout signals.
  expect(result.signalsImported).toBe(97);
  expect(result.proposals).toHaveLength(2);
  expect(await h.db.signal.count({ where: { productId: result.productId } })).toBe(280 + 97);
  expect(await h.db.proposal.count({ where: { productId: result.productId } })).toBe(2);
  const text = lines.join('\n');
  expect(text).toContain('payment_failed');
  expect(text).toContain('verification_failed');
  expect(text).toContain('card_declined');

  // The proposal's failing types are payment_failed and checkout_abandoned. Checkout a week earlier:
  // 32 + 8 of 60 signals; after: 4 payment_failed of 60. The express checkout, its control, 10 of 40
  // both times.
  expect(result.deployment.verification).toMatchObject({
    verdict: 'improved',
    provisional: false,
    label: 'observational',
    method: { estimator: 'did', control_selection: 'explicit' },
    before: { signals: 60, negative: 40 },
    after: { signals: 60, negative: 4 },
    control: { before: { signals: 40, negative: 10 }, after: { signals: 40, negative: 10 } },
    placebo: { significant: false },
    per_type: [{ signal_type: 'payment_failed' }, { signal_type: 'checkout_abandoned' }],
    traffic: { significant: false, observed_treated_after: 60 },
  });
  expect(result.deployment.verification.effect!.ci_high).toBeLessThan(0);
  const stored = await h.db.deployment.findUniqueOrThrow({ where: { id: result.deployment.id } });
  expect(stored).toMatchObject({
    proposalId: result.deployment.proposalId,
    verdict: 'improved',
    version: 'v2.5.0',
  });
  expect(text).toMatch(/verification: IMPROVED \(significant\), label observational/);
  expect(text).toMatch(/treated \(checkout\): 66\.7 % of 60 a week earlier -> 6\.7 % of 60 after/);
  expect(text).toMatch(/control \(explicit, 1 context\(s\)\): 25\.0 % of 40 -> 25\.0 % of 40/);
  expect(text).toMatch(/effect \(did\): odds ratio 0\.\d+ \(95 % interval/);
  expect(text).toMatch(/checkout_abandoned: odds ratio [\d.]+, Holm-adjusted p = /);
  expect(text).toMatch(/traffic check: 60 treated signals after, 60 expected/);
  // The placebo's windows are two weeks back, older than any timestamp the API accepts: imported.
  expect(text).toMatch(/admin import-signals: 97 signals of the same minutes two weeks earlier imported/);
  expect(text).toMatch(
    /placebo one week earlier: odds ratio [\d.]+ \(95 % interval .*\), p = [\d.]+, not significant: no pre-trend/,
  );
}, 240_000);
