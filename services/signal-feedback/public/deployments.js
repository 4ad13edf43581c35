// The deployments of an approved proposal, with their verdicts, and the form that records one.
import { api, state } from './api.js';
import { el } from './dom.js';
import {
  checksText,
  dateTime,
  effectText,
  LABELS,
  methodText,
  monitorText,
  plural,
  verdictLabel,
  verdictText,
} from './format.js';
import { flash, guarded, refreshAll } from './session.js';

async function recordDeployment(p, form) {
  const version = form.elements.version.value.trim();
  const note = form.elements.note.value.trim();
  const d = await api('POST', `/api/proposals/${encodeURIComponent(p.id)}/deployments`, {
    ...(version ? { version } : {}),
    ...(note ? { note } : {}),
  });
  const hours = plural(d.window_minutes / 60, 'hour');
  flash(
    `Deployment ${d.version ? d.version + ' ' : ''}recorded. Its verdict compares the ${hours} after it with the ${hours} before; ` +
      `it is final on ${dateTime(Date.parse(d.deployed_at) + d.window_minutes * 60_000)}.`,
  );
  await refreshAll();
}

/**
 * The figures behind a verdict (README, "Deployments and verification"): "not final" while the window
 * is open, the label, the effect with its interval, the method and the checks, and the monitor.
 */
function verdictDetails(v) {
  return el(
    'div',
    { class: 'verdict-details' },
    el(
      'p',
      {},
      v.provisional ? el('span', { class: 'verdict-badge not-final' }, 'not final') : null,
      v.provisional ? ' ' : null,
      el('span', { class: 'verdict-badge label', dataset: { label: v.label } }, LABELS[v.label] || v.label),
    ),
    el('p', { class: 'effect' }, effectText(v)),
    el('p', { class: 'method' }, methodText(v)),
    el('p', { class: 'checks' }, checksText(v)),
    v.provisional ? el('p', { class: 'monitor' }, monitorText(v)) : null,
  );
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
            {
              class: `verdict ${
                d.verification.provisional
                  ? d.verification.monitor?.regression_detected
                    ? 'regressed'
                    : 'pending'
                  : d.verification.verdict
              }`,
            },
            verdictLabel(d),
          ),
          ' ',
          el('strong', {}, d.version || 'Deployment'),
          el('span', { class: 'meta' }, ` · ${dateTime(Date.parse(d.deployed_at))}`),
          el('div', { class: 'verdict-text' }, verdictText(d)),
          verdictDetails(d.verification),
        ),
      ),
    ),
    form,
  );
}
