import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import request from 'supertest';
import { chromiumPath } from '@repo/service-kit/testing';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';
import { insertSignalHistory } from './support/signal-history';

// The dashboard's verdicts and priority feedback (README, "Deployments and verification" and
// "Priority feedback"): a final verdict with its interval, method, checks and label; an open
// deployment marked "not final" without a fixed-horizon p-value, whose monitor detected a regression;
// and on a proposal of the same kind, what happened to that change. Screenshots go to the temp folder.
const SHOTS = path.join(os.tmpdir(), 'signal-feedback-verdicts');
const PASSWORD = 'correct horse battery';
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const WEEK_MS = 7 * DAY_MS;

let h: Harness;
let browser: Browser;
let email: string;
let closedId: string;
let openId: string;
let sameKindId: string;

/** `total` signals of a context spread over `[from, from + spanMs)`, the first `failing` of them payment_failed. */
const history = (
  productId: string,
  contextId: string,
  from: number,
  spanMs: number,
  total: number,
  failing: number,
) => insertSignalHistory(h.db, { productId, contextId, from, to: from + spanMs, total, failing });

beforeAll(async () => {
  console.log(`Verdict screenshots: ${SHOTS}`);
  h = await startHarness('signal_feedback_dashboard_verdicts_test');
  const user = await signUp(h, { password: PASSWORD });
  email = user.email;
  await h.db.$executeRawUnsafe(`UPDATE users SET plan = 'scale'::"Plan" WHERE id = $1::uuid`, user.userId);
  const product = await createProduct(user, 'Acme Shop');
  const checkout = await createContext(user, product.id);
  const search = await createContext(user, product.id, {
    name: 'Search',
    positive_signals: ['checkout_completed'],
    negative_signals: ['payment_failed'],
  });
  const now = Date.now();
  const closedAt = now - 3 * DAY_MS;
  const openAt = now - 2 * HOUR_MS;
  // The closed deployment: Checkout fell from 10 % to 5 % failing while Search stayed at 10 %, in its
  // after-window, the same day a week earlier and the placebo's day two weeks earlier.
  for (const [at, checkoutFailing] of [
    [closedAt - 2 * WEEK_MS, 40],
    [closedAt - WEEK_MS, 40],
    [closedAt, 20],
  ] as const) {
    await history(product.id, checkout.id, at, DAY_MS, 400, checkoutFailing);
    await history(product.id, search.id, at, DAY_MS, 400, 40);
  }
  // The open deployment: Checkout at 40 % failing in the two hours since, 10 % before, Search steady.
  for (const [at, checkoutFailing] of [
    [openAt - 2 * WEEK_MS, 30],
    [openAt - WEEK_MS, 30],
    [openAt, 120],
  ] as const) {
    await history(product.id, checkout.id, at, 2 * HOUR_MS - 60_000, 300, checkoutFailing);
    await history(product.id, search.id, at, 2 * HOUR_MS - 60_000, 300, 30);
  }
  const burst = [
    ...Array.from({ length: 6 }, () => ({ type: 'payment_failed', context_id: checkout.id })),
    ...Array.from({ length: 4 }, () => ({ type: 'checkout_completed', context_id: checkout.id })),
  ];
  await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send(burst).expect(200);
  const run = await user.agent.post('/api/analysis/run').set('x-csrf-token', user.csrf).expect(200);
  const approved = (run.body.proposals as { id: string; context_id: string }[]).find(
    (p) => p.context_id === checkout.id,
  )!;
  await request(h.baseUrl)
    .patch(`/api/proposals/${approved.id}`)
    .set('x-api-key', product.apiKey)
    .send({ status: 'approved' })
    .expect(200);
  const deploy = async (at: number, version: string) =>
    (
      await request(h.baseUrl)
        .post(`/api/proposals/${approved.id}/deployments`)
        .set('x-api-key', product.apiKey)
        .send({ version, deployed_at: new Date(at).toISOString(), window_minutes: 1440 })
        .expect(201)
    ).body as { id: string; verification: { verdict: string; provisional: boolean } };
  const closed = await deploy(closedAt, 'v1.0.0');
  expect(closed.verification).toMatchObject({ provisional: false, verdict: 'improved' });
  closedId = closed.id;
  openId = (await deploy(openAt, 'v1.1.0')).id;
  expect((await h.service.monitor.runOnce()).detected).toBe(1);
  // Another pending proposal of the same kind (Checkout, payment_failed), scored 70 by the analysis.
  sameKindId = (
    await h.db.proposal.create({
      data: {
        productId: product.id,
        contextId: checkout.id,
        priorityScore: 70,
        diagnosis: 'Card payments fail on the last step',
        currentState: 'Payment errors are shown without a retry.',
        proposedChange: 'Offer a retry with another card.',
        evidenceSummary: 'payment_failed 30 % of checkout signals',
        predictedImpact: 'Fewer abandoned checkouts.',
        signalCount: 40,
        evidence: { top_failing_types: [{ type: 'payment_failed', count: 12 }] },
        evidenceHash: randomUUID(),
        source: 'evidence',
      },
    })
  ).id;
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** Page width beyond the viewport (0 when nothing overflows horizontally). */
const overflow = (page: Page) =>
  page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');

test.each([
  { name: 'desktop', width: 1400 },
  { name: 'phone', width: 390 },
])(
  'At $width px ($name): a final verdict shows its label, interval, method and checks; an open one says "not final", shows no fixed-horizon p-value and the detected regression; a proposal of its kind shows what happened and its lowered priority',
  async ({ name, width }) => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(m.text());
    });
    try {
      await page.goto(h.baseUrl + '/');
      await page.fill('#auth-email', email);
      await page.fill('#auth-password', PASSWORD);
      await page.click('#login');
      await page.locator('#account').waitFor();

      const closed = page.locator(`.deployments li[data-deployment-id="${closedId}"]`);
      await closed.waitFor();
      expect(await closed.locator('.verdict').textContent()).toBe('Improved');
      expect(await closed.locator('.not-final').count()).toBe(0);
      expect(await closed.locator('.verdict-badge.label').getAttribute('data-label')).toBe('observational');
      expect(await closed.locator('.effect').textContent()).toMatch(
        /^Effect: the odds of a failing signal × 0\.\d+ \(95 % interval 0\.\d+ – 0\.\d+; less likely\), p (<|=) 0\.\d+\.$/,
      );
      expect(await closed.locator('.method').textContent()).toContain(
        'Method: Difference-in-differences against 1 control context (picked automatically)',
      );
      expect(await closed.locator('.checks').textContent()).toMatch(
        /^Checks: placebo passed: no difference before the change; traffic as the controls predict: 400 signals after, 400 expected\.$/,
      );

      const open = page.locator(`.deployments li[data-deployment-id="${openId}"]`);
      expect(await open.locator('.verdict').textContent()).toBe('Regression detected');
      expect(await open.locator('.not-final').textContent()).toBe('not final');
      const effect = (await open.locator('.effect').textContent()) ?? '';
      expect(effect).toMatch(/^Effect so far: the odds of a failing signal × \d/);
      // No fixed-horizon p-value while the window is open; only the always-valid monitor's.
      expect(effect).not.toMatch(/p [<=]/);
      expect(await open.locator('.verdict-text').textContent()).not.toMatch(/p [<=]/);
      expect(await open.locator('.monitor').textContent()).toMatch(
        /^Monitor: regression detected \(always-valid p (<|=) 0\.\d+ ≤ 0\.05\)\.$/,
      );

      const sameKind = page.locator(`li.proposal[data-proposal-id="${sameKindId}"]`);
      expect(await sameKind.locator('.last-change').getAttribute('data-outcome')).toBe('regressed');
      expect(await sameKind.locator('.last-change').textContent()).toMatch(
        /^Last change of this kind: version v1\.1\.0 on .+ UTC: a regression was detected while measuring\. Priority 35\.0 instead of 70\.0\.$/,
      );
      expect(await sameKind.locator('.score').textContent()).toBe('35.0');
      expect(await overflow(page)).toBe(0);

      await closed.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(SHOTS, `${name}-verdicts.png`), fullPage: true });
      await page.locator('#proposals').screenshot({ path: path.join(SHOTS, `${name}-proposals.png`) });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  },
  60_000,
);
