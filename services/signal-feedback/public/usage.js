// Usage this month against the plan's limits.
import { state } from './api.js';
import { $, el } from './dom.js';

function meter(label, used, limit) {
  const pct = limit === null ? 0 : Math.min(100, Math.round((used / Math.max(1, limit)) * 100));
  const fill = el('div', { class: 'fill' + (limit !== null && used >= limit ? ' full' : '') });
  fill.style.width = pct + '%';
  return el(
    'div',
    { class: 'meter', dataset: { meter: label.toLowerCase() } },
    el('div', { class: 'label' }, label),
    el(
      'div',
      { class: 'value' },
      `${used.toLocaleString()} / ${limit === null ? 'unlimited' : limit.toLocaleString()}`,
    ),
    el('div', { class: 'bar' }, fill),
  );
}

export function renderUsage() {
  const { usage, limits } = state.me;
  $('usage').replaceChildren(
    meter('Signals', usage.signals, limits.signals_per_month),
    meter('Proposals', usage.proposals, limits.proposals_per_month),
    meter('Deployments', usage.deployments, limits.deployments_per_month),
    meter('Products', usage.products, limits.products),
  );
}
