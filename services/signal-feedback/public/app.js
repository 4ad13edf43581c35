// Signal Feedback dashboard: plain JavaScript modules over the service's own JSON API (api.js) and
// Chart.js for the charts; all text is inserted with textContent (never as HTML). This module wires
// the page's controls.
/* global document, window */
import { analyzeNow } from './analysis.js';
import { api } from './api.js';
import { choosePreset, range, readCustomRange, refreshCharts, showRangeControls } from './chart.js';
import { resetContextForm, saveContext } from './contexts.js';
import { $ } from './dom.js';
import { copyKey, copyText, createProduct, showSnippet } from './products.js';
import { refreshProposals } from './proposals.js';
import { guarded, refreshAll, showApp, showAuth } from './session.js';

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
    guarded(createProduct);
  });
  $('copy-key').addEventListener('click', copyKey);
  for (const tab of document.querySelectorAll('[data-snippet]'))
    tab.addEventListener('click', () => showSnippet(tab.dataset.snippet));
  $('copy-snippet').addEventListener('click', () => copyText('snippet-code', 'copy-snippet'));
  $('copy-webhook-secret').addEventListener('click', () =>
    copyText('new-webhook-secret-value', 'copy-webhook-secret'),
  );
  $('context-form').addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(saveContext);
  });
  $('context-cancel').addEventListener('click', resetContextForm);

  for (const button of document.querySelectorAll('[data-range]'))
    button.addEventListener('click', () => {
      choosePreset(button.dataset.range);
      // A custom range is drawn once its fields are submitted.
      if (button.dataset.range !== 'custom') guarded(refreshCharts);
    });
  $('bucket').addEventListener('change', () => {
    range.chosen = true;
    range.bucket = $('bucket').value;
    guarded(refreshCharts);
  });
  $('custom-range').addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(async () => {
      readCustomRange();
      await refreshCharts();
    });
  });
  showRangeControls();
  // The charts take their colours from the page's, which follow the system's light or dark mode.
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => guarded(refreshCharts));

  $('proposal-filter').addEventListener('change', () => guarded(refreshProposals));
  $('analyze').addEventListener('click', () => guarded(() => analyzeNow(refreshAll)));

  api('GET', '/api/auth/me').then(showApp, () => showAuth());
});
