// Products: the list with rename, key rotation and deletion, creation, and the key shown once.
/* global document, window */
import { api, state } from './api.js';
import { $, el, fillList, itemRow, smallButton } from './dom.js';
import { plural } from './format.js';
import { flash, guarded, refreshAll } from './session.js';

export function renderProducts() {
  fillList($('products'), state.products, 'No product yet.', (p) =>
    itemRow(
      { productId: p.id },
      p.name,
      `key ${p.api_key_prefix}… · ${p.context_count} context(s)`,
      smallButton('Rename', 'secondary', () => guarded(() => renameProduct(p))),
      smallButton('Rotate key', 'secondary', () => guarded(() => rotateKey(p))),
      smallButton('Delete', 'danger', () => guarded(() => deleteProduct(p))),
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

export async function createProduct() {
  const created = await api('POST', '/api/products', { name: $('product-name').value });
  $('product-name').value = '';
  showKey(created.api_key);
  await refreshAll();
}

export async function copyKey() {
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
