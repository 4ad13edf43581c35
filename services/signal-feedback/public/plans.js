// The plans with their limits, the user's own marked, and the product limit beside the product form.
import { api, state } from './api.js';
import { $, el } from './dom.js';

const limit = (n) => (n === null ? 'unlimited' : n.toLocaleString('en-GB'));

/** Reads the plans once per sign-in and fills the plans table. */
export async function refreshPlans() {
  state.plans = state.plans || (await api('GET', '/api/dashboard/plans'));
  renderPlans();
}

/** Fills the plans table from `state.plans`, marking the user's plan. */
export function renderPlans() {
  const mine = state.me.user.plan;
  $('plans-email').textContent = state.me.user.email;
  $('plans-body').replaceChildren(
    ...(state.plans || []).map((p) =>
      el(
        'tr',
        { class: p.plan === mine ? 'current' : '', dataset: { plan: p.plan } },
        el(
          'th',
          { scope: 'row' },
          p.plan,
          p.plan === mine ? el('span', { class: 'badge' }, 'your plan') : null,
        ),
        el('td', {}, p.price_usd === 0 ? 'free' : `$${p.price_usd}`),
        el('td', {}, limit(p.signals_per_month)),
        el('td', {}, limit(p.proposals_per_month)),
        el('td', {}, limit(p.deployments_per_month)),
        el('td', {}, limit(p.products)),
      ),
    ),
  );
}

/** The product limit in words under the product form; the form is disabled at the limit. */
export function renderProductLimit() {
  const { limits, user } = state.me;
  const max = limits.products;
  const owned = state.products.length;
  const full = max !== null && owned >= max;
  $('product-submit').disabled = full;
  $('product-name').disabled = full;
  $('product-limit').replaceChildren(
    `The ${user.plan} plan allows ${max === null ? 'any number of products' : `${max} product${max === 1 ? '' : 's'}`}; you have ${owned}. `,
    full ? el('a', { href: '#plans' }, 'More products need another plan.') : '',
  );
}
