import { AppError, notFound } from '@repo/errors';
import type { ProposalRepository } from '../data/proposals';
import type { Proposal, ProposalStatus } from '../schemas/proposals';
import { SIGNAL_FEEDBACK_ERRORS } from './errors';

/**
 * Allowed proposal status changes (README, "Routing, classification and analysis"): pending -> approved
 * | rejected | deferred; deferred -> pending | approved | rejected. approved and rejected are final.
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

/**
 * Moves a proposal to `to` when the state machine allows it from its current status (README,
 * "Endpoints", `PATCH /api/proposals/{id}`); the check and the change are one conditional UPDATE.
 * @param scope the product (API key) or user (session) the proposal must belong to
 * @returns the updated proposal
 * @throws AppError `not_found` (404) when the scope has no such proposal; `invalid_transition` (409)
 *   with `details { from, to, allowed }` when its current status cannot become `to`
 */
export async function changeProposalStatus(
  proposals: ProposalRepository,
  id: string,
  scope: { productId: string } | { userId: string },
  to: ProposalStatus,
): Promise<Proposal> {
  const outcome = await proposals.changeStatus(id, scope, { to, from: statesLeadingTo(to) });
  if ('notFound' in outcome) throw notFound('proposal');
  if ('conflict' in outcome) {
    throw new AppError(
      SIGNAL_FEEDBACK_ERRORS.invalid_transition,
      `A ${outcome.conflict} proposal cannot become ${to}`,
      {
        details: { from: outcome.conflict, to, allowed: ALLOWED_TRANSITIONS[outcome.conflict] },
      },
    );
  }
  return outcome.updated;
}
