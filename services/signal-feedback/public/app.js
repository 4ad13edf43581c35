// Signal Feedback dashboard: plain JavaScript modules over the service's own JSON API (api.js); all
// text is inserted with textContent (never as HTML). This module wires the page's controls.
/* global document */
import { api } from './api.js';
import { resetContextForm, saveContext } from './contexts.js';
import { $ } from './dom.js';
import { copyKey, createProduct } from './products.js';
import { refreshProposals } from './proposals.js';
import { flash, guarded, refreshAll, showApp, showAuth } from './session.js';

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
  $('context-form').addEventListener('submit', (e) => {
    e.preventDefault();
    guarded(saveContext);
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
