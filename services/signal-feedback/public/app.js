// Signal Feedback dashboard: plain JavaScript over the service's own JSON API. Every write sends the
// session's CSRF token in x-csrf-token; all text is inserted with textContent (never as HTML).
'use strict';
/* global document, window, Node */

const state = { me: null, products: [], contexts: [], proposals: [] };
const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && state.me) headers['x-csrf-token'] = state.me.csrf_token;
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error((data && data.error) || `HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  return data;
}

function flash(message, isError) {
  const f = $('flash');
  f.textContent = message;
  f.className = isError ? 'error' : '';
  f.hidden = !message;
}

async function guarded(fn) {
  try {
    flash('');
    await fn();
  } catch (err) {
    if (err.status === 401 && state.me) return showAuth('Your session ended; sign in again.');
    flash(err.message, true);
  }
}

function showAuth(message) {
  state.me = null;
  $('auth-view').hidden = false;
  $('app-view').hidden = true;
  $('account').hidden = true;
  flash(message || '', Boolean(message));
}

async function showApp(me) {
  state.me = me;
  $('auth-view').hidden = true;
  $('app-view').hidden = false;
  $('account').hidden = false;
  $('account-email').textContent = me.user.email;
  $('account-plan').textContent = me.user.plan;
  await refreshAll();
}

async function refreshAll() {
  const [me, products, contexts] = await Promise.all([
    api('GET', '/api/auth/me'),
    api('GET', '/api/products'),
    api('GET', '/api/context'),
  ]);
  state.me = me;
  state.products = products;
  state.contexts = contexts;
  renderUsage();
  renderProducts();
  renderContexts();
  await refreshProposals();
}

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

function renderUsage() {
  const { usage, limits } = state.me;
  $('usage').replaceChildren(
    meter('Signals', usage.signals, limits.signals_per_month),
    meter('Proposals', usage.proposals, limits.proposals_per_month),
    meter('Products', usage.products, limits.products),
  );
}

function renderProducts() {
  const list = $('products');
  if (state.products.length === 0) list.replaceChildren(el('li', { class: 'empty' }, 'No product yet.'));
  else
    list.replaceChildren(
      ...state.products.map((p) =>
        el(
          'li',
          { dataset: { productId: p.id } },
          el(
            'span',
            {},
            el('strong', {}, p.name),
            ' ',
            el('span', { class: 'meta' }, `key ${p.api_key_prefix}… · ${p.context_count} context(s)`),
          ),
          el(
            'button',
            { type: 'button', class: 'secondary small', onclick: () => guarded(() => rotateKey(p)) },
            'Rotate key',
          ),
        ),
      ),
    );
  const select = $('context-product');
  const current = select.value;
  select.replaceChildren(...state.products.map((p) => el('option', { value: p.id }, p.name)));
  if (current) select.value = current;
}

function showKey(key) {
  $('new-key-value').textContent = key;
  $('new-key').hidden = false;
  $('copy-key').textContent = 'Copy';
}

async function rotateKey(p) {
  if (!window.confirm(`Replace the API key of "${p.name}"? The current key stops working at once.`)) return;
  const rotated = await api('POST', `/api/products/${encodeURIComponent(p.id)}/rotate-key`);
  showKey(rotated.api_key);
  await refreshAll();
}

const splitTypes = (text) => [
  ...new Set(
    text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ),
];

function renderContexts() {
  const list = $('contexts');
  const productName = (id) => (state.products.find((p) => p.id === id) || {}).name || '';
  if (state.contexts.length === 0) list.replaceChildren(el('li', { class: 'empty' }, 'No context yet.'));
  else
    list.replaceChildren(
      ...state.contexts.map((c) =>
        el(
          'li',
          { dataset: { contextId: c.id } },
          el(
            'span',
            {},
            el('strong', {}, c.name),
            ' ',
            el(
              'span',
              { class: 'meta' },
              `${productName(c.product_id)} · + ${c.positive_signals.join(', ') || '—'} · − ${c.negative_signals.join(', ') || '—'}`,
            ),
          ),
          el(
            'span',
            { class: 'row' },
            el('button', { type: 'button', class: 'secondary small', onclick: () => editContext(c) }, 'Edit'),
            el(
              'button',
              { type: 'button', class: 'danger small', onclick: () => guarded(() => deleteContext(c)) },
              'Delete',
            ),
          ),
        ),
      ),
    );
}

function editContext(c) {
  $('context-id').value = c.id;
  $('context-product').value = c.product_id;
  $('context-product').disabled = true;
  $('context-name').value = c.name;
  $('context-content').value = c.content;
  $('context-positive').value = c.positive_signals.join(', ');
  $('context-negative').value = c.negative_signals.join(', ');
  $('context-submit').textContent = 'Save context';
  $('context-cancel').hidden = false;
}

function resetContextForm() {
  $('context-form').reset();
  $('context-id').value = '';
  $('context-product').disabled = false;
  $('context-submit').textContent = 'Add context';
  $('context-cancel').hidden = true;
}

async function deleteContext(c) {
  if (!window.confirm(`Delete context "${c.name}" and its proposals?`)) return;
  await api('DELETE', `/api/context?id=${encodeURIComponent(c.id)}`);
  await refreshAll();
}

async function refreshProposals() {
  const status = $('proposal-filter').value;
  state.proposals = await api('GET', '/api/proposals' + (status ? `?status=${status}` : ''));
  renderProposals();
}

const NEXT = {
  pending: ['approved', 'rejected', 'deferred'],
  deferred: ['pending', 'approved', 'rejected'],
  approved: [],
  rejected: [],
};
const VERB = { approved: 'Approve', rejected: 'Reject', deferred: 'Defer', pending: 'Back to pending' };

function renderProposals() {
  const list = $('proposals');
  const contextName = (id) => (state.contexts.find((c) => c.id === id) || {}).name || 'context';
  if (state.proposals.length === 0) {
    list.replaceChildren(el('li', { class: 'empty' }, 'No proposals yet. Send signals, then analyze.'));
    return;
  }
  list.replaceChildren(
    ...state.proposals.map((p) =>
      el(
        'li',
        { class: 'proposal', dataset: { proposalId: p.id, status: p.status } },
        el(
          'header',
          {},
          el(
            'span',
            {},
            el('span', { class: 'score' }, p.priority_score.toFixed(1)),
            ' · ',
            el('strong', {}, contextName(p.context_id)),
            el(
              'span',
              { class: 'meta' },
              ` · ${p.signal_count} signals · ${new Date(p.created_at).toLocaleString()}`,
            ),
          ),
          el('span', { class: 'status ' + p.status }, p.status),
        ),
        el(
          'dl',
          {},
          el('dt', {}, 'Diagnosis'),
          el('dd', {}, p.diagnosis),
          el('dt', {}, 'Evidence'),
          el('dd', {}, p.evidence_summary),
          el('dt', {}, 'Current state'),
          el('dd', {}, p.current_state),
          el('dt', {}, 'Proposed change'),
          el('dd', {}, p.proposed_change),
          el('dt', {}, 'Predicted impact'),
          el('dd', {}, p.predicted_impact),
        ),
        el(
          'div',
          { class: 'row' },
          ...NEXT[p.status].map((to) =>
            el(
              'button',
              {
                type: 'button',
                class: to === 'rejected' ? 'danger small' : to === 'approved' ? 'small' : 'secondary small',
                dataset: { action: to },
                onclick: () => guarded(() => changeStatus(p, to)),
              },
              VERB[to],
            ),
          ),
        ),
      ),
    ),
  );
}

async function changeStatus(p, to) {
  await api('PATCH', `/api/proposals/${encodeURIComponent(p.id)}`, { status: to });
  flash(`Proposal ${to === 'pending' ? 'moved back to pending' : to}.`);
  await refreshProposals();
}

function credentials() {
  return { email: $('auth-email').value.trim(), password: $('auth-password').value };
}

document.addEventListener('DOMContentLoaded', () => {
  $('auth-form').addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(async () => showApp(await api('POST', '/api/auth/login', credentials())));
  });
  $('signup').addEventListener('click', () =>
    guarded(async () => showApp(await api('POST', '/api/auth/signup', credentials()))),
  );
  $('logout').addEventListener('click', () =>
    guarded(async () => {
      await api('POST', '/api/auth/logout');
      $('new-key').hidden = true;
      showAuth('Signed out.');
    }),
  );
  $('product-form').addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(async () => {
      const created = await api('POST', '/api/products', { name: $('product-name').value });
      $('product-name').value = '';
      showKey(created.api_key);
      await refreshAll();
    });
  });
  $('copy-key').addEventListener('click', async () => {
    const key = $('new-key-value').textContent;
    try {
      await navigator.clipboard.writeText(key);
    } catch {
      // Without clipboard permission, select the key so the user can copy it by hand.
      const range = document.createRange();
      range.selectNodeContents($('new-key-value'));
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
    }
    $('copy-key').textContent = 'Copied';
  });
  $('context-form').addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(async () => {
      const fields = {
        name: $('context-name').value,
        content: $('context-content').value,
        positive_signals: splitTypes($('context-positive').value),
        negative_signals: splitTypes($('context-negative').value),
      };
      const id = $('context-id').value;
      if (id) await api('PATCH', '/api/context', { id, ...fields });
      else await api('POST', '/api/context', { product_id: $('context-product').value, ...fields });
      resetContextForm();
      await refreshAll();
    });
  });
  $('context-cancel').addEventListener('click', resetContextForm);
  $('proposal-filter').addEventListener('change', () => guarded(refreshProposals));
  $('analyze').addEventListener('click', () =>
    guarded(async () => {
      const r = await api('POST', '/api/analysis/run');
      flash(`Analyzed ${r.contexts_analyzed} context(s); ${r.proposals_created} new proposal(s).`);
      await refreshAll();
    }),
  );

  api('GET', '/api/auth/me').then(showApp, () => showAuth());
});
