import type { PanelVote, VoteCounts } from '@repo/compute';

/** Approvals needed for APPROVED, and approvals + conditionals needed for CONDITIONAL_APPROVED: 4 of 6. */
export const SUPERMAJORITY = 4;

/**
 * Counts the votes.
 * @param votes the panel's votes
 */
export function countVotes(votes: readonly Pick<PanelVote, 'vote'>[]): VoteCounts {
  const counts = { approve: 0, conditional: 0, reject: 0 };
  for (const { vote } of votes) {
    if (vote === 'APPROVE') counts.approve += 1;
    else if (vote === 'CONDITIONAL') counts.conditional += 1;
    else counts.reject += 1;
  }
  return counts;
}

/**
 * The debate's verdict by vote (a supermajority of 4 of the 6 panelists):
 * `APPROVED` when approvals ≥ 4; else `CONDITIONAL_APPROVED` when approvals + conditionals ≥ 4; else
 * `REJECTED`. PIVOT_OUT never comes from a vote.
 * @param counts the tally
 */
export function verdictFor(counts: VoteCounts): 'APPROVED' | 'CONDITIONAL_APPROVED' | 'REJECTED' {
  if (counts.approve >= SUPERMAJORITY) return 'APPROVED';
  if (counts.approve + counts.conditional >= SUPERMAJORITY) return 'CONDITIONAL_APPROVED';
  return 'REJECTED';
}
