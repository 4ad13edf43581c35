import { z } from 'zod';
import {
  DebateRound,
  ExecutionRoadmap,
  FeasibilityAssessment,
  KillBrief,
  PanelVote,
  ProvePersona,
  type DebateTurn,
  type ProveResult,
} from '@repo/compute';
import { advanceOver, PROGRESS_FIELDS } from '../phased';

/** The panel in speaking (and voting) order (README, "prove/debate"). */
export const PERSONAS = ProvePersona.options;
/** Debate rounds at most (README, "prove/debate"). */
export const MAX_ROUNDS = 3;

/** One of the {@link PERSONAS}. */
export type Persona = z.infer<typeof ProvePersona>;

/**
 * The debate's state between steps (README, "Pipelines": JSON, validated by the runner on every step
 * command). `phase` is `debate`, then `vote`, then `report`.
 */
export const ProveState = z.strictObject({
  phase: z.enum(['debate', 'vote', 'report']),
  /** Current debate round (1–3); after the debate, the last round held. */
  round: z.number().int().min(1).max(MAX_ROUNDS),
  /** Index into {@link PERSONAS} of the next speaker (debate) or voter (vote). */
  speaker: z
    .number()
    .int()
    .min(0)
    .max(PERSONAS.length - 1),
  rounds: z.array(DebateRound),
  feasibility: FeasibilityAssessment.nullable(),
  votes: z.array(PanelVote),
  verdict: z.enum(['APPROVED', 'CONDITIONAL_APPROVED', 'REJECTED']).nullable(),
  /** The first report section, once written. */
  output: z.union([ExecutionRoadmap, KillBrief]).nullable(),
  ...PROGRESS_FIELDS,
});
export type ProveState = z.infer<typeof ProveState>;

/** Steps the job will take as far as known now: all debate turns still possible, six votes, two report sections. */
function plannedSteps(state: ProveState): number {
  const turns = state.rounds.reduce((n, r) => n + r.turns.length, 0);
  const debate = state.phase === 'debate' ? MAX_ROUNDS * PERSONAS.length : turns;
  return debate + PERSONAS.length + 2;
}

/**
 * A `continue` outcome of a prove step (see `advanceOver`): `state` with `patch` applied, one more
 * step done, the progress over the steps planned so far.
 */
export const advance = advanceOver<ProveState, ProveResult>(plannedSteps);

/**
 * The debate rounds with `turn` appended to round `round` (created on its first turn).
 * @param rounds the rounds so far (not mutated) @param round the round number, 1–3 @param turn the turn
 */
export function appendTurn(
  rounds: ProveState['rounds'],
  round: number,
  turn: DebateTurn,
): ProveState['rounds'] {
  const existing = rounds.find((r) => r.round === round);
  if (!existing) return [...rounds, { round, turns: [turn] }];
  return rounds.map((r) => (r.round === round ? { round, turns: [...r.turns, turn] } : r));
}

/**
 * The distinct conditions of the CONDITIONAL votes, in voting order (README, "prove/debate", report:
 * the roadmap carries every condition); compared case-insensitively, trimmed.
 */
export function mergedConditions(votes: readonly PanelVote[]): string[] {
  const out: string[] = [];
  for (const v of votes)
    for (const c of v.conditions ?? [])
      if (!out.some((o) => o.toLowerCase() === c.trim().toLowerCase())) out.push(c.trim());
  return out;
}
