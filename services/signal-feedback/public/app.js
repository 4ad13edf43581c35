// Signal Feedback dashboard: plain JavaScript over the service's own JSON API. Every write sends the
// session's CSRF token in x-csrf-token; all text is inserted with textContent (never as HTML).
'use strict';
/* global document, window, Node */

const state = { me: null, products: [], contexts: [], proposals: [], deployments: new Map() };
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
  await refreshDeployments();
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

const plural = (n, word) => `${n.toLocaleString()} ${word}${n === 1 ? '' : 's'}`;
const pct = (rate) => (rate === null ? 'n/a' : `${(rate * 100).toFixed(1)} %`);

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
    meter('Deployments', usage.deployments, limits.deployments_per_month),
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
            'span',
            { class: 'row' },
            el(
              'button',
              { type: 'button', class: 'secondary small', onclick: () => guarded(() => renameProduct(p)) },
              'Rename',
            ),
            el(
              'button',
              { type: 'button', class: 'secondary small', onclick: () => guarded(() => rotateKey(p)) },
              'Rotate key',
            ),
            el(
              'button',
              { type: 'button', class: 'danger small', onclick: () => guarded(() => deleteProduct(p)) },
              'Delete',
            ),
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

async function renameProduct(p) {
  const name = window.prompt(`New name for "${p.name}"`, p.name);
  if (name === null || name.trim() === '' || name.trim() === p.name) return;
  const renamed = await api('PATCH', `/api/products/${encodeURIComponent(p.id)}`, { name });
  flash(`Renamed "${p.name}" to "${renamed.name}".`);
  await refreshAll();
}

async function deleteProduct(p) {
  // The confirmation names everything that goes, counted by the service.
  const { contents: c } = await api('GET', `/api/products/${encodeURIComponent(p.id)}`);
  const what =
    `its API key (${p.api_key_prefix}…), ${plural(c.contexts, 'context')}, ${plural(c.signals, 'signal')}, ` +
    `${plural(c.proposals, 'proposal')} and ${plural(c.deployments, 'deployment')}`;
  if (!window.confirm(`Delete "${p.name}" with ${what}? This cannot be undone.`)) return;
  await api('DELETE', `/api/products/${encodeURIComponent(p.id)}`);
  $('new-key').hidden = true;
  flash(`Deleted "${p.name}" with ${what}.`);
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

// ---- Charts: plain SVG, one per context, with a title and a description for screen readers.

const SVG_NS = 'http://www.w3.org/2000/svg';
const HOUR_MS = 3_600_000;

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

const utcHour = (ms) =>
  new Date(ms).toLocaleString('en-GB', {
    timeZone: 'UTC',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  }) + ' UTC';
const utcDay = (ms) =>
  new Date(ms).toLocaleDateString('en-GB', { timeZone: 'UTC', month: 'short', day: 'numeric' });

function verdictText(d) {
  const v = d.verification;
  const what = d.signal_type || 'negative signals';
  const reason = v.reason === 'significant' ? '' : ` (${v.reason.replace(/_/g, ' ')})`;
  const test = v.z === null ? '' : `, z = ${v.z}, p = ${v.p_value}`;
  return (
    `${v.provisional ? 'provisional: ' : ''}${v.verdict}${reason}: ${what} ${pct(v.before.negative_rate)} → ` +
    `${pct(v.after.negative_rate)} (${v.before.signals} → ${v.after.signals} signals${test})`
  );
}

/**
 * Signal volume (bars) and negative rate (line) per hour, deployments as dashed markers on the time
 * axis; every bar and marker has a <title> (tooltip and accessible name).
 */
function chart(context, points, deployments) {
  const W = 720;
  const H = 180;
  const left = 44;
  const right = 44;
  const top = 14;
  const bottom = 28;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const first = Date.parse(points[0].start);
  const span = points.length * HOUR_MS;
  const x = (ms) => left + ((ms - first) / span) * plotW;
  const barW = plotW / points.length;
  const maxSignals = Math.max(1, ...points.map((p) => p.signals));
  const yCount = (n) => top + plotH - (n / maxSignals) * plotH;
  const yRate = (r) => top + plotH - r * plotH;
  const total = points.reduce((n, p) => n + p.signals, 0);
  const negative = points.reduce((n, p) => n + p.negative, 0);
  const busiest = points.reduce((a, b) => (b.signals > a.signals ? b : a), points[0]);
  const shown = deployments.filter((d) => {
    const t = Date.parse(d.deployed_at);
    return t >= first && t < first + span;
  });
  const id = `chart-${context.id}`;

  const bars = points
    .filter((p) => p.signals > 0)
    .map((p) =>
      svg(
        'rect',
        {
          class: 'bar',
          x: x(Date.parse(p.start)).toFixed(1),
          y: yCount(p.signals).toFixed(1),
          width: Math.max(1, barW - 0.5).toFixed(1),
          height: (top + plotH - yCount(p.signals)).toFixed(1),
        },
        svg(
          'title',
          {},
          `${utcHour(Date.parse(p.start))}: ${plural(p.signals, 'signal')}, ${p.negative} negative (${pct(p.negative_rate)})`,
        ),
      ),
    );
  // The rate line breaks over empty hours instead of drawing through them.
  let path = '';
  let drawing = false;
  for (const p of points) {
    if (p.negative_rate === null) {
      drawing = false;
      continue;
    }
    const px = (x(Date.parse(p.start)) + barW / 2).toFixed(1);
    // A lone hour still shows: `h0.01` with round caps draws a dot.
    path += drawing
      ? `L${px},${yRate(p.negative_rate).toFixed(1)} `
      : `M${px},${yRate(p.negative_rate).toFixed(1)} h0.01 `;
    drawing = true;
  }
  const days = [];
  for (let t = Math.ceil(first / (24 * HOUR_MS)) * 24 * HOUR_MS; t < first + span; t += 24 * HOUR_MS) {
    days.push(
      svg('line', { class: 'tick', x1: x(t), x2: x(t), y1: top + plotH, y2: top + plotH + 4 }),
      svg('text', { class: 'axis', x: x(t), y: H - 8, 'text-anchor': 'middle' }, utcDay(t)),
    );
  }
  const markers = shown.map((d) => {
    const mx = x(Date.parse(d.deployed_at)).toFixed(1);
    const label = d.version || 'deployment';
    return svg(
      'g',
      { class: `marker ${d.verification.verdict}`, 'data-deployment-id': d.id },
      svg('title', {}, `${label} deployed ${utcHour(Date.parse(d.deployed_at))}: ${verdictText(d)}`),
      svg('line', { x1: mx, x2: mx, y1: top, y2: top + plotH }),
      svg('text', { x: mx, y: top - 3, 'text-anchor': 'middle' }, label),
    );
  });
  const description =
    `${plural(total, 'signal')} over the last 7 days, ${negative.toLocaleString()} negative (${pct(total ? negative / total : null)}). ` +
    (total
      ? `Busiest hour: ${utcHour(Date.parse(busiest.start))} with ${plural(busiest.signals, 'signal')}. `
      : '') +
    (shown.length
      ? `Deployments marked: ${shown.map((d) => `${d.version || 'deployment'} on ${utcDay(Date.parse(d.deployed_at))} (${d.verification.provisional ? 'provisional ' : ''}${d.verification.verdict})`).join('; ')}.`
      : 'No deployment in this period.');
  return svg(
    'svg',
    {
      class: 'chart',
      viewBox: `0 0 ${W} ${H}`,
      role: 'img',
      'aria-labelledby': `${id}-title ${id}-desc`,
      'data-context-id': context.id,
    },
    svg('title', { id: `${id}-title` }, `${context.name}: signals and negative rate per hour, last 7 days`),
    svg('desc', { id: `${id}-desc` }, description),
    svg('line', { class: 'baseline', x1: left, x2: W - right, y1: top + plotH, y2: top + plotH }),
    svg(
      'text',
      { class: 'axis', x: left - 6, y: top + 4, 'text-anchor': 'end' },
      maxSignals.toLocaleString(),
    ),
    svg('text', { class: 'axis', x: left - 6, y: top + plotH, 'text-anchor': 'end' }, '0'),
    svg('text', { class: 'axis rate-axis', x: W - right + 6, y: top + 4 }, '100 %'),
    svg('text', { class: 'axis rate-axis', x: W - right + 6, y: top + plotH }, '0 %'),
    ...bars,
    svg('path', { class: 'rate', d: path.trim() || 'M0,0' }),
    ...days,
    ...markers,
  );
}

async function refreshCharts() {
  const byContext = new Map();
  for (const p of state.approved || [])
    for (const d of state.deployments.get(p.id) || [])
      byContext.set(p.context_id, [...(byContext.get(p.context_id) || []), d]);
  const series = await Promise.all(
    state.contexts.map((c) => api('GET', `/api/context/${encodeURIComponent(c.id)}/series?bucket=hour`)),
  );
  const list = $('charts');
  if (state.contexts.length === 0) {
    list.replaceChildren(el('p', { class: 'empty' }, 'Add a context to see its signals over time.'));
    return;
  }
  list.replaceChildren(
    ...state.contexts.map((c, i) =>
      el(
        'figure',
        { class: 'chart-box' },
        el('figcaption', {}, el('strong', {}, c.name)),
        chart(c, series[i], byContext.get(c.id) || []),
      ),
    ),
  );
}

async function recordDeployment(p, form) {
  const version = form.elements.version.value.trim();
  const note = form.elements.note.value.trim();
  const d = await api('POST', `/api/proposals/${encodeURIComponent(p.id)}/deployments`, {
    ...(version ? { version } : {}),
    ...(note ? { note } : {}),
  });
  flash(
    `Deployment ${d.version || ''} recorded; the verification compares the next ${d.window_minutes / 60} h with the ${d.window_minutes / 60} h before.`,
  );
  await refreshAll();
}

function deploymentsBlock(p) {
  if (p.status !== 'approved') return null;
  const deployments = state.deployments.get(p.id) || [];
  const form = el(
    'form',
    { class: 'row deploy-form' },
    el('input', {
      name: 'version',
      placeholder: 'Version (optional)',
      maxlength: '100',
      'aria-label': 'Version',
    }),
    el('input', {
      name: 'note',
      placeholder: 'What shipped (optional)',
      maxlength: '2000',
      'aria-label': 'Note',
    }),
    el('button', { type: 'submit', class: 'small' }, 'Record deployment'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(() => recordDeployment(p, form));
  });
  return el(
    'div',
    { class: 'deployments' },
    el(
      'ul',
      {},
      ...deployments.map((d) =>
        el(
          'li',
          {
            dataset: {
              deploymentId: d.id,
              verdict: d.verification.verdict,
              provisional: String(d.verification.provisional),
            },
          },
          el(
            'span',
            { class: `verdict ${d.verification.verdict}` },
            d.verification.provisional ? 'measuring' : d.verification.verdict,
          ),
          ' ',
          el('strong', {}, d.version || 'deployment'),
          el('span', { class: 'meta' }, ` · ${utcHour(Date.parse(d.deployed_at))} · `),
          verdictText(d),
          d.regression_proposal_id ? el('span', { class: 'meta' }, ' · a new proposal was raised') : null,
        ),
      ),
    ),
    form,
  );
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
        deploymentsBlock(p),
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
