import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { chromiumPath, expectDocsRender } from '@repo/service-kit/testing';
import { startHarness, type Harness } from './support/harness';

// A screenshot for a person to look at; the README's is taken by dashboard-charts.test.ts.
const SCREENSHOT = path.join(os.tmpdir(), 'signal-feedback-dashboard-flow.png');

let h: Harness;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** Every dialog's message, in order; prompts are answered with `promptAnswer`. */
const dialogs: string[] = [];
let promptAnswer = '';

beforeAll(async () => {
  h = await startHarness('signal_feedback_dashboard_test');
  browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: ['--no-sandbox'],
  });
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.baseUrl });
  page = await context.newPage();
  // Any CSP violation (inline script, foreign origin) or script error shows up here.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.accept(d.type() === 'prompt' ? promptAnswer : undefined);
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function sendSignals(apiKey: string, contextId: string, failing: string, code: string): Promise<void> {
  const signals = [
    ...Array.from({ length: 7 }, (_, i) => ({
      type: failing,
      payload: { error_code: code, step: 'payment', attempt: i },
      context_id: contextId,
    })),
    ...Array.from({ length: 5 }, () => ({
      type: 'checkout_completed',
      payload: { step: 'confirm' },
      context_id: contextId,
    })),
  ];
  const res = await fetch(`${h.baseUrl}/api/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(signals),
  });
  expect(res.status).toBe(200);
}

async function addContext(name: string, content: string, positive: string, negative: string): Promise<void> {
  await page.fill('#context-name', name);
  await page.fill('#context-content', content);
  await page.fill('#context-positive', positive);
  await page.fill('#context-negative', negative);
  await page.click('#context-submit');
  await page.locator('#contexts li', { hasText: name }).waitFor();
}

test('When a user clicks through the dashboard, then every step reaches the API and the database', async () => {
  await page.goto(h.baseUrl + '/');
  await page.locator('#auth-view').waitFor();

  // Sign up.
  await page.fill('#auth-email', 'owner@example.com');
  await page.fill('#auth-password', 'correct horse battery');
  await page.click('#signup');
  await page.locator('#app-view').waitFor();
  expect(await page.textContent('#account-email')).toBe('owner@example.com');
  expect(await page.textContent('#account-plan')).toBe('free');
  const user = await h.db.user.findUniqueOrThrow({ where: { email: 'owner@example.com' } });

  // Create a product: the key is shown once, with a copy button.
  await page.fill('#product-name', 'Acme Checkout');
  await page.click('#product-form button[type=submit]');
  await page.locator('#new-key:not([hidden])').waitFor();
  const apiKey = (await page.textContent('#new-key-value')) ?? '';
  expect(apiKey).toMatch(/^spk_/);
  // The first-signal snippets carry the key: curl first, then fetch and MCP.
  expect(await page.textContent('#snippet-code')).toBe(
    `curl -X POST ${h.baseUrl}/api/signals \\\n  -H 'content-type: application/json' \\\n` +
      `  -H 'x-api-key: ${apiKey}' \\\n  -d '{"type":"checkout_completed","payload":{"step":"confirm"}}'`,
  );
  await page.click('[data-snippet=fetch]');
  expect(await page.textContent('#snippet-code')).toContain(`'x-api-key': '${apiKey}'`);
  await page.click('[data-snippet=mcp]');
  expect(await page.textContent('#snippet-code')).toContain(`"url": "${h.baseUrl}/mcp"`);
  expect(await page.textContent('#snippet-code')).toContain(`"x-api-key": "${apiKey}"`);
  await page.click('#copy-key');
  await page.locator('#copy-key', { hasText: 'Copied' }).waitFor();
  expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(apiKey);
  await page.locator('#products li', { hasText: 'Acme Checkout' }).waitFor();
  expect(await page.textContent('#products')).not.toContain(apiKey);
  const product = await h.db.product.findFirstOrThrow({ where: { userId: user.id } });

  // Contexts: add two, edit one.
  await addContext('Checkout', 'Cart to payment confirmation', 'checkout_completed', 'payment_failed');
  await addContext('Signup', 'Account creation', 'signup_done', 'signup_error');
  await page.locator('#contexts li', { hasText: 'Signup' }).getByRole('button', { name: 'Edit' }).click();
  await page.fill('#context-negative', 'signup_error, captcha_failed');
  await page.click('#context-submit');
  await page.locator('#contexts li', { hasText: 'captcha_failed' }).waitFor();
  const contexts = await h.db.context.findMany({
    where: { productId: product.id },
    orderBy: { createdAt: 'asc' },
  });
  expect(contexts.map((c) => c.name)).toEqual(['Checkout', 'Signup']);
  expect(contexts[1]!.negativeSignals).toEqual(['signup_error', 'captcha_failed']);

  // Signals arrive from the product; analysis makes proposals; usage shows the counts against the quota.
  await sendSignals(apiKey, contexts[0]!.id, 'payment_failed', 'card_declined');
  await sendSignals(apiKey, contexts[1]!.id, 'captcha_failed', 'captcha_timeout');
  await page.click('#analyze');
  await page.locator('#proposals .proposal').nth(1).waitFor();
  expect(await page.locator('#proposals .proposal').count()).toBe(2);
  await page.locator('[data-meter=signals] .value', { hasText: '24 / 500' }).waitFor();
  expect(await page.textContent('[data-meter=proposals] .value')).toBe('2 / 3');

  // Approve one, defer the other.
  const [first, second] = await h.db.proposal.findMany({
    where: { productId: product.id },
    orderBy: { createdAt: 'asc' },
  });
  await page.locator(`[data-proposal-id="${first!.id}"] [data-action=approved]`).click();
  await page.locator(`[data-proposal-id="${first!.id}"][data-status=approved]`).waitFor();
  await page.locator(`[data-proposal-id="${second!.id}"] [data-action=deferred]`).click();
  await page.locator(`[data-proposal-id="${second!.id}"][data-status=deferred]`).waitFor();
  expect((await h.db.proposal.findUniqueOrThrow({ where: { id: first!.id } })).status).toBe('approved');
  expect((await h.db.proposal.findUniqueOrThrow({ where: { id: second!.id } })).status).toBe('deferred');

  // Record the approved proposal's deployment; while its after-window is open it is being measured.
  const approved = page.locator(`[data-proposal-id="${first!.id}"]`);
  await approved.locator('input[name=version]').fill('v1.1.0');
  await approved.locator('input[name=note]').fill('Retry button after a declined card');
  await approved.getByRole('button', { name: 'Record deployment' }).click();
  await approved.locator('[data-deployment-id][data-provisional=true]').waitFor();
  const deployment = await h.db.deployment.findFirstOrThrow({ where: { proposalId: first!.id } });
  expect(deployment).toMatchObject({
    version: 'v1.1.0',
    note: 'Retry button after a declined card',
    verdict: 'pending',
  });
  await page.locator('[data-meter=deployments] .value', { hasText: '1 / 3' }).waitFor();

  // Two days later (the deployment moved back in the table) with the signals of the day after it, the
  // day before and the same day a week earlier: the verdict is beside the proposal and the deployment is
  // marked on the context's chart.
  const deployedAt = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 24 * 3_600_000);
  await h.db.deployment.update({ where: { id: deployment.id }, data: { deployedAt } });
  // The verdict compares the day after with the same day a week earlier (README, "Deployments and
  // verification"); the day just before shows on the chart.
  for (const [from, failing] of [
    [deployedAt.getTime() - 7 * 24 * 3_600_000, 48],
    [deployedAt.getTime() - 24 * 3_600_000, 48],
    [deployedAt.getTime(), 9],
  ] as const)
    await h.db.$executeRawUnsafe(
      `INSERT INTO signals (product_id, context_id, type, sentiment, created_at)
       SELECT $1::uuid, $2::uuid, CASE WHEN g % 3 = 0 AND g / 3 < $3 THEN 'payment_failed' ELSE 'checkout_completed' END,
              (CASE WHEN g % 3 = 0 AND g / 3 < $3 THEN 'negative' ELSE 'positive' END)::"Sentiment",
              $4::timestamptz + g * interval '10 minutes'
         FROM generate_series(0, 143) AS g`,
      product.id,
      contexts[0]!.id,
      failing,
      new Date(from),
    );
  await page.reload();
  const verdict = approved.locator(
    `[data-deployment-id="${deployment.id}"][data-verdict=improved][data-provisional=false]`,
  );
  await verdict.waitFor();
  expect(await verdict.textContent()).toContain(
    'Improved: “payment_failed” fell from 33.3 % of 144 signals before to 6.3 % of 144 signals after (p < 0.001).',
  );
  expect((await h.db.deployment.findUniqueOrThrow({ where: { id: deployment.id } })).verdict).toBe(
    'improved',
  );
  // The chart (Chart.js on a canvas) describes itself, plots 7 days of hours and marks the deployment.
  const figure = page.locator(`figure[data-context-id="${contexts[0]!.id}"]`);
  const chart = figure.locator('canvas.main-chart');
  await chart.waitFor();
  expect(await chart.getAttribute('role')).toBe('img');
  expect(await chart.getAttribute('aria-label')).toMatch(
    /^Checkout: signals and negative rate per hour\. 300 signals, 64 negative \(21\.3 %\); .*Deployments: v1\.1\.0 · .* UTC, Improved\.$/,
  );
  // 48 hourly bars of history (6 signals each) and the hour of the burst.
  // The page's global Chart.js (its UMD build), read as JavaScript source (no DOM types here).
  const bars = await page.evaluate<number>(
    `Chart.getChart(document.querySelector('figure[data-context-id="${contexts[0]!.id}"] canvas.main-chart'))` +
      '.data.datasets[0].data.filter((n) => n > 0).length',
  );
  expect(bars).toBe(49);
  expect(
    await figure.locator(`.markers button.marker.improved[data-deployment-id="${deployment.id}"]`).count(),
  ).toBe(1);

  await page.screenshot({ path: SCREENSHOT, fullPage: true });

  // Reject the deferred one; filter by status.
  await page.locator(`[data-proposal-id="${second!.id}"] [data-action=rejected]`).click();
  await page.locator(`[data-proposal-id="${second!.id}"][data-status=rejected]`).waitFor();
  await page.selectOption('#proposal-filter', 'approved');
  await page.locator('#proposals .proposal[data-status=rejected]').waitFor({ state: 'detached' });
  expect(await page.locator('#proposals .proposal').count()).toBe(1);
  expect((await h.db.proposal.findUniqueOrThrow({ where: { id: second!.id } })).status).toBe('rejected');

  // Delete a context.
  await page.locator('#contexts li', { hasText: 'Signup' }).getByRole('button', { name: 'Delete' }).click();
  await page.locator('#contexts li', { hasText: 'Signup' }).waitFor({ state: 'detached' });
  expect(await h.db.context.count({ where: { productId: product.id } })).toBe(1);

  // Rotate the key: a new one is shown, the old one stops working.
  await page
    .locator('#products li', { hasText: 'Acme Checkout' })
    .getByRole('button', { name: 'Rotate key' })
    .click();
  await page.locator('#new-key-value').filter({ hasNotText: apiKey }).waitFor();
  const rotated = (await page.textContent('#new-key-value')) ?? '';
  expect(rotated).toMatch(/^spk_/);
  const withOld = await fetch(`${h.baseUrl}/api/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: '{"type":"x"}',
  });
  expect(withOld.status).toBe(401);

  // Rename the product.
  promptAnswer = 'Acme Checkout (web)';
  await page
    .locator('#products li', { hasText: 'Acme Checkout' })
    .getByRole('button', { name: 'Rename' })
    .click();
  await page.locator('#products li', { hasText: 'Acme Checkout (web)' }).waitFor();
  expect((await h.db.product.findUniqueOrThrow({ where: { id: product.id } })).name).toBe(
    'Acme Checkout (web)',
  );

  // Sign out, then sign in again.
  await page.click('#logout');
  await page.locator('#auth-view').waitFor();
  expect(await h.db.session.count({ where: { userId: user.id } })).toBe(0);
  await page.fill('#auth-email', 'owner@example.com');
  await page.fill('#auth-password', 'correct horse battery');
  await page.click('#login');
  await page.locator('#app-view').waitFor();
  await page.locator('#products li', { hasText: 'Acme Checkout' }).waitFor();

  // Delete the product: the confirmation names everything that goes; afterwards nothing is left and
  // the key is refused.
  const held = {
    signals: await h.db.signal.count({ where: { productId: product.id } }),
    proposals: await h.db.proposal.count({ where: { productId: product.id } }),
  };
  await page
    .locator('#products li', { hasText: 'Acme Checkout (web)' })
    .getByRole('button', { name: 'Delete' })
    .click();
  await page.locator('#products li.empty').waitFor();
  expect(dialogs.at(-1)).toBe(
    `Delete "Acme Checkout (web)" with its API key (${rotated.slice(0, 12)}…), 1 context, ${held.signals} signals, ` +
      `${held.proposals} proposal${held.proposals === 1 ? '' : 's'} and 1 deployment? This cannot be undone.`,
  );
  expect(await h.db.product.count({ where: { userId: user.id } })).toBe(0);
  expect(await h.db.signal.count({ where: { productId: product.id } })).toBe(0);
  const afterDelete = await fetch(`${h.baseUrl}/api/signals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': rotated },
    body: '{"type":"x"}',
  });
  expect(afterDelete.status).toBe(401);

  expect(problems).toEqual([]);
}, 90_000);

test('When someone opens /, signed in or not, then a link in its header leads to the API reference at /docs', async () => {
  const fresh = await browser.newPage();
  try {
    await fresh.goto(h.baseUrl + '/');
    await fresh.locator('#auth-view').waitFor();
    const link = fresh.locator('header.top a[href="/docs"]');
    expect(await link.isVisible()).toBe(true);
    expect(await link.textContent()).toBe('API reference');
    await link.click();
    await fresh.waitForURL(`${h.baseUrl}/docs`);
    await fresh.locator('section[id]').first().waitFor();
  } finally {
    await fresh.close();
  }
}, 60_000);

test('When Chromium opens /docs, then the Scalar reference shows every operation of the document with no console error or CSP violation', async () => {
  const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as { paths: Record<string, object> };
  const render = await expectDocsRender(h.baseUrl, { expand: 'recordDeployment' });
  expect(render.operations).toHaveLength(Object.values(doc.paths).flatMap((p) => Object.keys(p)).length);
  expect(render.operations).toContain('POST /api/proposals/{id}/deployments');
}, 90_000);
