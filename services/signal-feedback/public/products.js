// Products: the list with rename, key rotation and deletion, creation, and the key shown once with
// a first-signal snippet (curl, fetch, MCP) that has the key filled in.
/* global document, window */
import { api, state } from './api.js';
import { $, el, fillList, itemRow, smallButton } from './dom.js';
import { dateTime, plural } from './format.js';
import { renderProductLimit } from './plans.js';
import { flash, guarded, refreshAll } from './session.js';

/** Fills the products list and the context form's product choice, and the product limit under the form. */
export function renderProducts() {
  fillList($('products'), state.products, 'No product yet.', (p) =>
    itemRow(
      { productId: p.id },
      p.name,
      `key ${p.api_key_prefix}… · ${plural(p.context_count, 'context')} · created ${dateTime(Date.parse(p.created_at))}`,
      smallButton('Rename', 'secondary', () => guarded(() => renameProduct(p))),
      smallButton('Rotate key', 'secondary', () => guarded(() => rotateKey(p))),
      smallButton('Webhook', 'secondary', () => guarded(() => editWebhook(p))),
      smallButton('Delete', 'danger', () => guarded(() => deleteProduct(p))),
    ),
  );
  const select = $('context-product');
  const current = select.value;
  select.replaceChildren(...state.products.map((p) => el('option', { value: p.id }, p.name)));
  if (current) select.value = current;
  renderProductLimit();
}

/** The three first-signal snippets for `key`, sending to this page's origin. */
export function snippets(key, origin) {
  const signal = { type: 'checkout_completed', payload: { step: 'confirm' } };
  return {
    curl:
      `curl -X POST ${origin}/api/signals \\\n` +
      `  -H 'content-type: application/json' \\\n` +
      `  -H 'x-api-key: ${key}' \\\n` +
      `  -d '${JSON.stringify(signal)}'`,
    fetch:
      `await fetch('${origin}/api/signals', {\n` +
      `  method: 'POST',\n` +
      `  headers: { 'content-type': 'application/json', 'x-api-key': '${key}' },\n` +
      `  body: JSON.stringify({ type: 'checkout_completed', payload: { step: 'confirm' } }),\n` +
      `});`,
    mcp:
      `// mcp.json of an MCP client (Claude Code, Cursor, …); then call the tool send_signals\n` +
      `// with { "signals": [${JSON.stringify(signal)}] }\n` +
      JSON.stringify(
        {
          mcpServers: {
            'signal-feedback': { type: 'http', url: `${origin}/mcp`, headers: { 'x-api-key': key } },
          },
        },
        null,
        2,
      ),
  };
}

/** Shows the snippet `which` (curl, fetch or mcp) of the key on display. */
export function showSnippet(which) {
  const key = $('new-key-value').textContent;
  $('snippet-code').textContent = snippets(key, window.location.origin)[which];
  for (const tab of document.querySelectorAll('[data-snippet]'))
    tab.setAttribute('aria-selected', String(tab.dataset.snippet === which));
  $('copy-snippet').textContent = 'Copy snippet';
}

function showKey(key) {
  $('new-key-value').textContent = key;
  $('new-key').hidden = false;
  $('copy-key').textContent = 'Copy';
  showSnippet('curl');
}

/** Creates the product named in the form, then shows its key and the first-signal snippet once. */
export async function createProduct() {
  const created = await api('POST', '/api/products', { name: $('product-name').value });
  $('product-name').value = '';
  showKey(created.api_key);
  await refreshAll();
}

/** Copies the text of element `sourceId` and says so on `buttonId`. */
export async function copyText(sourceId, buttonId) {
  try {
    await navigator.clipboard.writeText($(sourceId).textContent);
  } catch {
    // Without clipboard permission, select the text so the user can copy it by hand.
    const range = document.createRange();
    range.selectNodeContents($(sourceId));
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
  }
  $(buttonId).textContent = 'Copied';
}

/** Copies the key on display. */
export const copyKey = () => copyText('new-key-value', 'copy-key');

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

/**
 * Asks for the product's webhook URL (README, "Webhooks (signal-feedback)"): a URL sets it (a new
 * signing secret is shown once when the service generated one), an empty answer removes it.
 */
async function editWebhook(p) {
  const path = `/api/products/${encodeURIComponent(p.id)}/webhook`;
  const current = await api('GET', path);
  const url = window.prompt(
    `Webhook URL of "${p.name}" for regression_detected events (https). Leave empty to remove it.`,
    current.url || '',
  );
  if (url === null) return;
  if (url.trim() === '') {
    if (!current.url) return;
    if (!window.confirm(`Remove the webhook of "${p.name}"? Deliveries not yet sent are dropped.`)) return;
    await api('DELETE', path);
    $('new-webhook-secret').hidden = true;
    flash(`Removed the webhook of "${p.name}".`);
    return;
  }
  const set = await api('PUT', path, { url: url.trim() });
  if (set.secret) {
    $('new-webhook-secret-value').textContent = set.secret;
    $('new-webhook-secret').hidden = false;
    $('copy-webhook-secret').textContent = 'Copy';
  }
  flash(`Webhook of "${p.name}" set to ${set.url}.` + (set.secret ? ' Store its signing secret now.' : ''));
}
