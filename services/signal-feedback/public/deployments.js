// The deployments of an approved proposal, with their verdicts, and the form that records one.
import { api, state } from './api.js';
import { el } from './dom.js';
import { utcHour, verdictText } from './format.js';
import { flash, guarded, refreshAll } from './session.js';

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

export function deploymentsBlock(p) {
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
