import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { chromiumPath } from '@repo/service-kit/testing';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';

// The browser checks of the dashboard at a desktop and a phone width (README, "Dashboard"). Screenshots
// go to a fresh folder printed at the start; UPDATE_SCREENSHOT=1 also refreshes the README's
// docs/images/signal-feedback-dashboard.png.
const SHOTS = fs.mkdtempSync(path.join(os.tmpdir(), 'signal-feedback-dashboard-'));
const README_SHOT = path.resolve(__dirname, '../../../docs/images/signal-feedback-dashboard.png');
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const PASSWORD = 'correct horse battery';

let h: Harness;
let browser: Browser;
let email: string;
let checkout: { id: string };
let deploymentId: string;
let pendingId: string;

/** `count` signals of `contextId` spread over [from, from + spanMs), every `every`-th one negative. */
async function history(
  productId: string,
  contextId: string | null,
  from: number,
  spanMs: number,
  count: number,
  every = 3,
) {
  await h.db.$executeRawUnsafe(
    `INSERT INTO signals (product_id, context_id, type, payload, sentiment, created_at)
     SELECT $1::uuid, $2::uuid,
            CASE WHEN g % $6 = 0 THEN 'payment_failed' ELSE 'checkout_completed' END,
            jsonb_build_object('step', 'payment', 'n', g),
            (CASE WHEN $2::uuid IS NULL THEN 'neutral' WHEN g % $6 = 0 THEN 'negative' ELSE 'positive' END)::"Sentiment",
            $3::timestamptz + g * ($4::bigint * interval '1 millisecond') / $5::int
       FROM generate_series(0, $5::int - 1) AS g`,
    productId,
    contextId,
    new Date(from),
    spanMs,
    count,
    every,
  );
}

beforeAll(async () => {
  console.log(`Dashboard screenshots: ${SHOTS}`);
  h = await startHarness('signal_feedback_dashboard_charts_test');
  const user = await signUp(h, { password: PASSWORD });
  email = user.email;
  await h.db.$executeRawUnsafe(`UPDATE users SET plan = 'growth'::"Plan" WHERE id = $1::uuid`, user.userId);
  const product = await createProduct(user, 'Acme Shop');
  checkout = await createContext(user, product.id);
  const signup = await createContext(user, product.id, {
    name: 'Signup',
    positive_signals: ['signup_done'],
    negative_signals: ['captcha_failed'],
  });
  const now = Date.now();
  // Checkout: 5 an hour, a third failing, from six to two days ago; then, after the deployment two days
  // ago, 10 an hour, an eighth failing: 220 from 47 to 25 hours ago and 220 in the last 24 hours; and
  // 100 twenty days ago.
  await history(product.id, checkout.id, now - 6 * DAY_MS, 4 * DAY_MS, 480);
  await history(product.id, checkout.id, now - 47 * HOUR_MS, 22 * HOUR_MS, 220, 8);
  await history(product.id, checkout.id, now - 23 * HOUR_MS, 22 * HOUR_MS, 220, 8);
  await history(product.id, checkout.id, now - 20 * DAY_MS, 12 * HOUR_MS, 100);
  // The verdict's before-window is the deployment's day a week earlier: 120 more, a third failing.
  await history(product.id, checkout.id, now - 9 * DAY_MS, DAY_MS, 120);
  await history(product.id, null, now - 2 * HOUR_MS, HOUR_MS, 4);
  const failing = Array.from({ length: 6 }, () => ({ type: 'captcha_failed', context_id: signup.id }));
  await request(h.baseUrl).post('/api/signals').set('x-api-key', product.apiKey).send(failing).expect(200);

  // Checkout's proposal approved and deployed two days ago; Signup's stays pending.
  const run = await user.agent.post('/api/analysis/run').set('x-csrf-token', user.csrf).expect(200);
  const proposals = run.body.proposals as { id: string; context_id: string }[];
  const approved = proposals.find((p) => p.context_id === checkout.id)!;
  pendingId = proposals.find((p) => p.context_id === signup.id)!.id;
  await request(h.baseUrl)
    .patch(`/api/proposals/${approved.id}`)
    .set('x-api-key', product.apiKey)
    .send({ status: 'approved' })
    .expect(200);
  const deployed = await request(h.baseUrl)
    .post(`/api/proposals/${approved.id}/deployments`)
    .set('x-api-key', product.apiKey)
    .send({ version: 'v1.2.0', deployed_at: new Date(now - 2 * DAY_MS).toISOString() })
    .expect(201);
  deploymentId = deployed.body.id as string;

  browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

// The page's code runs as JavaScript source: this package's TypeScript has no DOM types.

/** Page width beyond the viewport (0 when nothing overflows horizontally). */
const overflow = (page: Page) =>
  page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');

/** The global Chart.js (its UMD build) instance of the Checkout chart, as JavaScript source. */
const checkoutChart = () =>
  `Chart.getChart(document.querySelector('figure[data-context-id="${checkout.id}"] canvas.main-chart'))`;

/** What the Checkout chart plots: its bucket count and the sum of its bars. */
const plotted = (page: Page) =>
  page.evaluate<{ buckets: number; signals: number }>(`(() => {
    const bars = ${checkoutChart()}?.data.datasets[0].data ?? [];
    return { buckets: bars.length, signals: bars.reduce((a, b) => a + b, 0) };
  })()`);

async function waitForPlotted(page: Page, expected: { buckets: number; signals: number }) {
  await page
    .locator(
      `figure[data-context-id="${checkout.id}"][data-buckets="${expected.buckets}"][data-signals="${expected.signals}"]`,
    )
    .waitFor();
  expect(await plotted(page)).toEqual(expected);
}

// One test per width: its steps share a page and run in order (jest randomizes the order of tests).
test.each([
  { name: 'desktop', width: 1400 },
  { name: 'phone', width: 390 },
])(
  'At $width px ($name): signed out, signed in, range switching, hover on a bar and on a deployment, the confirmation on Approve',
  async ({ name, width }) => {
    const problems: string[] = [];
    const dialogs: string[] = [];
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/api/auth/me')) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      // Every question is answered No: the test checks that it is asked and that nothing changes.
      void d.dismiss();
    });
    try {
      // Signed out: only the sign-in form shows, and nothing overflows.
      await page.goto(h.baseUrl + '/');
      await page.locator('#auth-view').waitFor();
      expect(await page.locator('#account').isVisible()).toBe(false);
      expect(await page.locator('#logout').isVisible()).toBe(false);
      expect(await page.locator('#account-plan').isVisible()).toBe(false);
      expect(await page.locator('#app-view').isVisible()).toBe(false);
      expect(await overflow(page)).toBe(0);
      await page.screenshot({ path: path.join(SHOTS, `${name}-signed-out.png`) });

      // Signed in: 7 days of hours (169 buckets) hold all but the burst of twenty days ago; the live
      // table lists the latest.
      await page.fill('#auth-email', email);
      await page.fill('#auth-password', PASSWORD);
      await page.click('#login');
      await page.locator('#account').waitFor();
      await waitForPlotted(page, { buckets: 169, signals: 920 });
      await page.locator('#latest tbody tr[data-signal-id]').first().waitFor();
      expect(await page.locator('#latest tbody tr').count()).toBe(20);
      expect(await overflow(page)).toBe(0);

      // Range switching changes the plotted data.
      await page.click('[data-range="24h"]');
      await waitForPlotted(page, { buckets: 25, signals: 220 });
      expect(await page.getAttribute('[data-range="24h"]', 'aria-pressed')).toBe('true');
      await page.click('[data-range="30d"]');
      expect(await page.inputValue('#bucket')).toBe('day');
      await waitForPlotted(page, { buckets: 31, signals: 1140 });
      await page.selectOption('#bucket', 'hour');
      await waitForPlotted(page, { buckets: 721, signals: 1140 });
      expect(await overflow(page)).toBe(0);
      // Custom: three days around the burst of twenty days ago, per day.
      await page.click('[data-range="custom"]');
      const start = new Date(Math.floor((Date.now() - 21 * DAY_MS) / DAY_MS) * DAY_MS);
      await page.fill('#range-from', start.toISOString().slice(0, 16));
      await page.fill('#range-to', new Date(start.getTime() + 3 * DAY_MS).toISOString().slice(0, 16));
      await page.selectOption('#bucket', 'day');
      await page.click('#custom-range button[type=submit]');
      await waitForPlotted(page, { buckets: 3, signals: 100 });
      // The breakdown by type covers the same range.
      const breakdown = page.locator(`figure[data-context-id="${checkout.id}"] canvas.breakdown-chart`);
      expect(await breakdown.getAttribute('aria-label')).toBe(
        'Checkout, signals by type: checkout_completed 66 (positive), payment_failed 34 (negative)',
      );

      // Hover on a busiest bar of the last 7 days shows its values.
      await page.click('[data-range="7d"]');
      await waitForPlotted(page, { buckets: 169, signals: 920 });
      const figure = page.locator(`figure[data-context-id="${checkout.id}"]`);
      await figure.locator('canvas.main-chart').scrollIntoViewIfNeeded();
      // The latest of the busiest bars, away from the deployment's marker (which covers the bars beside it).
      const point = await page.evaluate<{ x: number; y: number; count: number }>(`(() => {
        const chart = ${checkoutChart()};
        const bars = chart.data.datasets[0].data;
        const i = bars.lastIndexOf(Math.max(...bars));
        const bar = chart.getDatasetMeta(0).data[i];
        const box = chart.canvas.getBoundingClientRect();
        return { x: box.left + bar.x, y: box.top + bar.y + 3, count: bars[i] };
      })()`);
      await page.mouse.move(point.x, point.y);
      const tip = figure.locator('.chart-canvas-wrap .value-tip');
      await tip.waitFor({ state: 'visible' });
      expect(await tip.textContent()).toContain(`${point.count} signal`);
      expect(await tip.textContent()).toMatch(/negative \((\d+\.\d %|n\/a)\)/);
      await page.screenshot({ path: path.join(SHOTS, `${name}-hover.png`) });

      // The deployment has a real hit area: hovering it shows its verdict; it is listed beside the chart.
      const marker = figure.locator(`.markers button[data-deployment-id="${deploymentId}"]`);
      const box = (await marker.boundingBox())!;
      expect(box.width).toBeGreaterThanOrEqual(20);
      expect(box.height).toBeGreaterThan(100);
      await marker.hover();
      const markerTip = figure.locator('.chart-canvas-wrap .marker-tip');
      await markerTip.waitFor({ state: 'visible' });
      expect(await markerTip.textContent()).toMatch(
        /^v1\.2\.0 · .* UTCImproved: “payment_failed” fell from 33\.3 % of 120 signals before to 12\.\d % of 22\d signals after \(p < 0\.001\)\.$/,
      );
      await page.screenshot({ path: path.join(SHOTS, `${name}-deployment.png`) });
      if (name === 'desktop' && process.env.UPDATE_SCREENSHOT === '1') {
        // The README's picture: the charts with the deployment's verdict showing (by keyboard focus,
        // which the scrolling of an element screenshot does not end as it ends a hover).
        fs.mkdirSync(path.dirname(README_SHOT), { recursive: true });
        await page.mouse.move(1, 1);
        await page.locator('#signals-card').scrollIntoViewIfNeeded();
        await marker.focus();
        await page.locator('#signals-card').screenshot({ path: README_SHOT });
        await marker.blur();
      }
      expect(
        await figure.locator(`.deploy-list li[data-deployment-id="${deploymentId}"]`).textContent(),
      ).toContain('v1.2.0');
      await page.mouse.move(1, 1);
      await markerTip.waitFor({ state: 'hidden' });

      // Approve asks first; dismissed, nothing changes.
      const proposal = page.locator(`[data-proposal-id="${pendingId}"]`);
      await proposal.locator('[data-action=approved]').click();
      expect(dialogs).toEqual([
        'Approve the proposal for “Signup”? Approving is final: the proposal can no longer be rejected or deferred, and its deployments can then be recorded.',
      ]);
      expect((await h.db.proposal.findUniqueOrThrow({ where: { id: pendingId } })).status).toBe('pending');
      expect(await page.locator(`[data-proposal-id="${pendingId}"][data-status=pending]`).count()).toBe(1);
      // Analyze now: busy at once, then the reason per context and the warning about unrouted signals.
      expect(
        await page.evaluate(`(() => {
          const button = document.getElementById('analyze');
          button.click();
          return [button.disabled, button.textContent, button.getAttribute('aria-busy')];
        })()`),
      ).toEqual([true, 'Analyzing…', 'true']);
      const report = page.locator('#analysis-report');
      await report.locator(`li[data-context-id="${checkout.id}"]`).waitFor();
      expect(await report.locator(`li[data-context-id="${checkout.id}"]`).textContent()).toBe(
        'Checkout: 220 of 5 signals in 24 h — analysed: nothing new (the evidence matches an existing proposal).',
      );
      expect(await report.locator('.warning').textContent()).toBe(
        '4 signals of the last 24 h reached no context and were not analysed (see Contexts).',
      );
      expect(await page.textContent('#unrouted-warning')).toContain(
        'Acme Shop: 4 signals in the last 7 days',
      );
      expect(await page.locator('#analyze').isDisabled()).toBe(false);
      await page.screenshot({ path: path.join(SHOTS, `${name}-dashboard.png`), fullPage: true });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  },
  90_000,
);

test('When the system asks for dark mode at 360 px, then the page follows it and still fits', async () => {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 }, colorScheme: 'dark' });
  const page = await context.newPage();
  await page.goto(h.baseUrl + '/');
  await page.fill('#auth-email', email);
  await page.fill('#auth-password', PASSWORD);
  await page.click('#login');
  await page.locator(`figure[data-context-id="${checkout.id}"] canvas.main-chart`).waitFor();
  const background = await page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
  expect(background).toBe('rgb(18, 21, 28)');
  expect(await overflow(page)).toBe(0);
  await page.screenshot({ path: path.join(SHOTS, 'phone-360-dark.png'), fullPage: true });
  await context.close();
}, 60_000);

test("When a new product's first signals arrive, then the chart starts at 24 hours and its one bucket's rate shows", async () => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  try {
    const user = await signUp(h, { password: PASSWORD });
    await page.goto(h.baseUrl + '/');
    await page.fill('#auth-email', user.email);
    await page.fill('#auth-password', PASSWORD);
    await page.click('#login');
    await page.locator('#products li.empty').waitFor();
    expect(await page.textContent('#product-limit')).toBe('The free plan allows 1 product; you have 0. ');
    await page.fill('#product-name', 'First app');
    await page.click('#product-submit');
    await page.locator('#new-key:not([hidden])').waitFor();
    const apiKey = (await page.textContent('#new-key-value')) ?? '';
    expect(await page.textContent('#snippet-code')).toContain(`-H 'x-api-key: ${apiKey}'`);
    await page.locator('#new-key').screenshot({ path: path.join(SHOTS, 'new-product-key-and-snippet.png') });
    // At the free plan's one product, the form says so and is disabled.
    expect(await page.isDisabled('#product-submit')).toBe(true);
    expect(await page.textContent('#product-limit')).toBe(
      'The free plan allows 1 product; you have 1. More products need another plan.',
    );

    const product = await h.db.product.findFirstOrThrow({ where: { userId: user.userId } });
    const created = await createContext(user, product.id);
    const signals = [
      { type: 'payment_failed' },
      { type: 'checkout_completed' },
      { type: 'checkout_completed' },
    ];
    await request(h.baseUrl).post('/api/signals').set('x-api-key', apiKey).send(signals).expect(200);
    // The live table shows them without a reload.
    await page.locator('#latest tbody tr[data-signal-id]').nth(2).waitFor();
    await page.reload();
    const figure = page.locator(`figure[data-context-id="${created.id}"]`);
    await figure.locator('canvas.main-chart').waitFor();
    expect(await page.getAttribute('[data-range="24h"]', 'aria-pressed')).toBe('true');
    expect(await figure.getAttribute('data-buckets')).toBe('25');
    // The one bucket's negative rate is a dot (radius 4), not a line of no length.
    const rate = await page.evaluate<{ rate: number | null; radius: number }>(
      `(() => {
        const chart = Chart.getChart(document.querySelector('figure[data-context-id="${created.id}"] canvas.main-chart'));
        const i = chart.data.datasets[0].data.findIndex((n) => n > 0);
        return { rate: chart.data.datasets[1].data[i], radius: chart.getDatasetMeta(1).data[i].options.radius };
      })()`,
    );
    expect(rate).toEqual({ rate: 33.3, radius: 4 });
    await figure.screenshot({ path: path.join(SHOTS, 'new-product-chart.png') });
  } finally {
    await context.close();
  }
}, 60_000);
