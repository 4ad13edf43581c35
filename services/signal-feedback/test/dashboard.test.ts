import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startHarness, type Harness } from './support/harness';

// The committed screenshot in docs/ is refreshed with UPDATE_SCREENSHOT=1; other runs keep the tree clean.
const SCREENSHOT =
  process.env.UPDATE_SCREENSHOT === '1'
    ? path.resolve(__dirname, '../../../docs/signal-feedback-dashboard.png')
    : path.join(os.tmpdir(), 'signal-feedback-dashboard.png');

let h: Harness;
let browser: Browser;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  h = await startHarness('signal_feedback_dashboard_test');
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
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
  page.on('dialog', (d) => void d.accept());
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

  // Sign out, then sign in again.
  await page.click('#logout');
  await page.locator('#auth-view').waitFor();
  expect(await h.db.session.count({ where: { userId: user.id } })).toBe(0);
  await page.fill('#auth-email', 'owner@example.com');
  await page.fill('#auth-password', 'correct horse battery');
  await page.click('#login');
  await page.locator('#app-view').waitFor();
  await page.locator('#products li', { hasText: 'Acme Checkout' }).waitFor();

  expect(problems).toEqual([]);
}, 90_000);
