// Signed in or out, the status line, and reading everything again after a change. The sections import
// guarded and refreshAll while refreshAll renders them: the cycle is safe because no module here runs
// anything when it loads, only once the page is ready.
import { refreshReadiness } from './analysis.js';
import { api, state } from './api.js';
import { refreshCharts } from './chart.js';
import { renderContexts } from './contexts.js';
import { $ } from './dom.js';
import { startLatest, stopLatest } from './latest.js';
import { refreshPlans } from './plans.js';
import { renderProducts } from './products.js';
import { refreshProposals } from './proposals.js';
import { renderUsage } from './usage.js';

/** Shows `message` in the status line (red when `isError`); an empty message hides it. */
export function flash(message, isError) {
  const f = $('flash');
  f.textContent = message;
  f.className = isError ? 'error' : '';
  f.hidden = !message;
}

/** Runs a user's action: its error goes to the status line, an ended session back to the sign-in form. */
export async function guarded(fn) {
  try {
    flash('');
    await fn();
  } catch (err) {
    if (err.status === 401 && state.me) return showAuth('Your session ended; sign in again.');
    flash(err.message, true);
  }
}

/** Shows the sign-in form (and `message`), hides the account and stops the live table. */
export function showAuth(message) {
  state.me = null;
  state.plans = null;
  stopLatest();
  $('auth-view').hidden = false;
  $('app-view').hidden = true;
  $('account').hidden = true;
  flash(message || '', Boolean(message));
}

/** Shows the dashboard of the signed-in user `me` (the /api/auth/me answer) and starts the live table. */
export async function showApp(me) {
  state.me = me;
  $('auth-view').hidden = true;
  $('app-view').hidden = false;
  $('account').hidden = false;
  $('account-email').textContent = me.user.email;
  $('account-plan').textContent = me.user.plan;
  await refreshAll();
  startLatest();
}

/** Reads the account, products, contexts, deployments, plans and analysis readiness again and redraws everything. */
export async function refreshAll() {
  const [me, products, contexts] = await Promise.all([
    api('GET', '/api/auth/me'),
    api('GET', '/api/products'),
    api('GET', '/api/context'),
  ]);
  state.me = me;
  state.products = products;
  state.contexts = contexts;
  $('account-plan').textContent = me.user.plan;
  renderUsage();
  renderProducts();
  renderContexts();
  await Promise.all([refreshDeployments(), refreshPlans(), refreshReadiness()]);
  await Promise.all([refreshProposals(), refreshCharts()]);
}

/** The deployments of every approved proposal, by proposal id (for the proposals and the charts). */
async function refreshDeployments() {
  const approved = await api('GET', '/api/proposals?status=approved&limit=200');
  // Only proposals whose summary names a deployment have any to list.
  const deployed = approved.filter((p) => p.deployment);
  const lists = await Promise.all(
    deployed.map((p) => api('GET', `/api/proposals/${encodeURIComponent(p.id)}/deployments`)),
  );
  state.approved = approved;
  state.deployments = new Map(deployed.map((p, i) => [p.id, lists[i]]));
}
