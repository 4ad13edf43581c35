// Contexts: the list with edit and deletion, and the form that adds or saves one.
/* global window */
import { api, state } from './api.js';
import { $, fillList, itemRow, smallButton } from './dom.js';
import { guarded, refreshAll } from './session.js';

const splitTypes = (text) => [
  ...new Set(
    text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ),
];

export function renderContexts() {
  const productName = (id) => (state.products.find((p) => p.id === id) || {}).name || '';
  fillList($('contexts'), state.contexts, 'No context yet.', (c) =>
    itemRow(
      { contextId: c.id },
      c.name,
      `${productName(c.product_id)} · + ${c.positive_signals.join(', ') || '—'} · − ${c.negative_signals.join(', ') || '—'}`,
      smallButton('Edit', 'secondary', () => editContext(c)),
      smallButton('Delete', 'danger', () => guarded(() => deleteContext(c))),
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

export function resetContextForm() {
  $('context-form').reset();
  $('context-id').value = '';
  $('context-product').disabled = false;
  $('context-submit').textContent = 'Add context';
  $('context-cancel').hidden = true;
}

/** Adds the form's context, or saves the one being edited. */
export async function saveContext() {
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
}

async function deleteContext(c) {
  if (!window.confirm(`Delete context "${c.name}" and its proposals?`)) return;
  await api('DELETE', `/api/context?id=${encodeURIComponent(c.id)}`);
  await refreshAll();
}
