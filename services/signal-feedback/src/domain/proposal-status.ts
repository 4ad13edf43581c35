import type { ProposalStatus } from '../schemas';

/**
 * Allowed proposal status changes (issue 4, "Analysis into proposals"): pending -> approved | rejected |
 * deferred; deferred -> pending | approved | rejected. approved and rejected are final.
 */
export const ALLOWED_TRANSITIONS: Readonly<Record<ProposalStatus, readonly ProposalStatus[]>> = {
  pending: ['approved', 'rejected', 'deferred'],
  deferred: ['pending', 'approved', 'rejected'],
  approved: [],
  rejected: [],
};

/** The states from which `to` may be reached. */
export function statesLeadingTo(to: ProposalStatus): ProposalStatus[] {
  return (Object.keys(ALLOWED_TRANSITIONS) as ProposalStatus[]).filter((from) =>
    ALLOWED_TRANSITIONS[from].includes(to),
  );
}

/** Whether `from -> to` is allowed. */
export function canTransition(from: ProposalStatus, to: ProposalStatus): boolean {
  return ALLOWED_TRANSITIONS[from].includes(to);
}
