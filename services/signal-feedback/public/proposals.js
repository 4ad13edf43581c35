// Proposals: the list under the status filter, each with its evidence and the status changes it allows.
// Approving and rejecting are final, so both ask first.
/* global window */
import { api, state } from './api.js';
import { $, el, fillList } from './dom.js';
import { deploymentsBlock } from './deployments.js';
import { dateTime, lastChangeText } from './format.js';
import { flash, guarded } from './session.js';

/** Reads the proposals under the status filter and lists them. */
export async function refreshProposals() {
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
  const contextName = (id) => (state.contexts.find((c) => c.id === id) || {}).name || 'context';
  fillList($('proposals'), state.proposals, 'No proposals yet. Send signals, then analyze.', (p) =>
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
            ` · ${p.signal_count} signals · ${dateTime(Date.parse(p.created_at))}`,
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
      lastChangeBlock(p),
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
  );
}

/** What happened to the last change of the proposal's kind (README, "Priority feedback"). */
function lastChangeBlock(p) {
  const text = lastChangeText(p);
  if (!text) return null;
  const outcome = p.last_change_of_kind.outcome;
  return el('p', { class: `last-change ${outcome}`, dataset: { outcome } }, text);
}

/** The question asked before a final change, or null for a change that can be made again. */
export function confirmation(p, to, contextName) {
  if (to === 'approved')
    return (
      `Approve the proposal for “${contextName}”? Approving is final: the proposal can no longer be ` +
      'rejected or deferred, and its deployments can then be recorded.'
    );
  if (to === 'rejected')
    return `Reject the proposal for “${contextName}”? Rejecting is final: it cannot be approved later.`;
  return null;
}

async function changeStatus(p, to) {
  const contextName = (state.contexts.find((c) => c.id === p.context_id) || {}).name || 'this context';
  const question = confirmation(p, to, contextName);
  if (question && !window.confirm(question)) return;
  await api('PATCH', `/api/proposals/${encodeURIComponent(p.id)}`, { status: to });
  flash(`Proposal for “${contextName}” ${to === 'pending' ? 'moved back to pending' : to}.`);
  await refreshProposals();
}
