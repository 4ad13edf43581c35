import { z } from 'zod';
import { FeasibilityAssessment, ForgeResult, ForgeRound, RiceScore } from '@repo/compute';
import { advanceOver, PROGRESS_FIELDS } from '../phased';
import type { StepOutcome } from '../types';
import { IdeaSketch } from './schemas';

/**
 * The brainstorming agents of rounds 1 (divergent generation) and 2 (critique), in speaking order
 * (README, "forge/ideate"); the state's `cursor` indexes this list in those rounds.
 */
export const BRAINSTORMERS = ['Trend Scout', 'Pain Miner', 'Contrarian', 'Business Modeler'] as const;
/** Candidate ideas kept from round 1 at most (README, "forge/ideate"). */
export const MAX_CANDIDATES = 10;
/** Ideas carried from the critique into refinement, scoring and the result at most (README, "forge/ideate"). */
export const SHORTLIST_SIZE = 5;
/** Round titles, by round number - 1 (the transcript titles of `ForgeResult.rounds`). */
export const ROUND_TITLES = [
  'Divergent generation',
  'Critique',
  'Refinement',
  'Scoring',
  'Final ranking',
] as const;

const Candidate = IdeaSketch.extend({ id: z.string(), proposed_by: z.string() });
/** A round 1 idea kept in the state: the sketch plus its id (`I1`, `I2`, …) and the agent who proposed it. */
export type Candidate = z.infer<typeof Candidate>;

const Critique = z.object({
  agent: z.string(),
  idea_id: z.string(),
  critique: z.string(),
  severity: z.enum(['minor', 'major', 'fatal']),
});
/** A round 2 critique kept in the state: the critic, the candidate id, the text and its severity. */
export type Critique = z.infer<typeof Critique>;

// Refinement rewrites the candidate's sketch, so those fields hold what a sketch holds. The id stays
// first: the state is stored as JSON, and this is the order of its keys.
const Refined = z.object({
  id: z.string(),
  ...IdeaSketch.shape,
  moat: z.string(),
  key_metrics: z.array(z.string()),
  validation_plan: z.array(z.string()),
  kill_switches: z.array(z.string()),
  tags: z.array(z.string()),
  feasibility: FeasibilityAssessment,
});
/** A round 3 refined idea with its computed feasibility assessment. */
export type Refined = z.infer<typeof Refined>;

const Scored = z.object({
  id: z.string(),
  rice: RiceScore,
  kill_score: z.number().int().min(0).max(100),
  kill_reasons: z.array(z.string()),
});
/** A round 4 score: the computed RICE score and the kill score (0–100) with its reasons. */
export type Scored = z.infer<typeof Scored>;

/**
 * The brainstorm's state between steps (README, "Pipelines": JSON, validated by the runner on every
 * step command). `phase` is the round in progress, `r1` to `r5`.
 */
export const ForgeState = z.strictObject({
  phase: z.enum(['r1', 'r2', 'r3', 'r4', 'r5']),
  /** Next agent (r1, r2) or next shortlisted idea (r3, r4). */
  cursor: z.number().int().nonnegative(),
  candidates: z.array(Candidate),
  critiques: z.array(Critique),
  /** Candidate ids chosen after the critique, in order. */
  shortlist: z.array(z.string()),
  refined: z.array(Refined),
  scored: z.array(Scored),
  rounds: z.array(ForgeRound),
  ...PROGRESS_FIELDS,
});
export type ForgeState = z.infer<typeof ForgeState>;
/** What a forge step returns: the next {@link ForgeState}, or the `ForgeResult` after round 5. */
export type ForgeOutcome = StepOutcome<ForgeState, ForgeResult>;

function plannedSteps(state: ForgeState): number {
  const shortlist = state.shortlist.length || SHORTLIST_SIZE;
  return BRAINSTORMERS.length * 2 + shortlist * 2 + 1;
}

/**
 * A `continue` outcome of a forge step (see `advanceOver`): `state` with `patch` applied, one more
 * step done, the progress over the steps planned so far (the shortlist's size once known).
 */
export const advance = advanceOver<ForgeState, ForgeResult>(plannedSteps);

/**
 * The transcripts with one more entry in round `round` (the round is created, titled from
 * {@link ROUND_TITLES}, on its first entry).
 * @param rounds the transcripts so far (not mutated) @param round the round number, 1–5
 * @param agent who spoke @param content what was said
 */
export function addTranscript(
  rounds: ForgeState['rounds'],
  round: number,
  agent: string,
  content: string,
): ForgeState['rounds'] {
  const existing = rounds.find((r) => r.round === round);
  if (!existing)
    return [
      ...rounds,
      { round, title: ROUND_TITLES[round - 1] ?? `Round ${round}`, transcript: [{ agent, content }] },
    ];
  return rounds.map((r) =>
    r.round === round ? { ...r, transcript: [...r.transcript, { agent, content }] } : r,
  );
}

/** Lowercase letters and digits only: two ideas with the same key are the same idea. */
export function ideaKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '');
}

/**
 * `list` with `entry` last in place of any earlier entry of the same idea: a redelivered step
 * replaces what its earlier run added (README, "Pipelines").
 * @param list the refined or scored ideas so far (not mutated) @param entry the step's entry
 */
export function withIdea<T extends { id: string }>(list: readonly T[], entry: T): T[] {
  return [...list.filter((e) => e.id !== entry.id), entry];
}

/**
 * Candidates chosen for refinement (README, "forge/ideate", critique): the ones the critique hurt
 * least (fatal 5, major 2, minor 0.5 points per critique), ties in proposal order, at most
 * {@link SHORTLIST_SIZE}.
 */
export function shortlistOf(candidates: readonly Candidate[], critiques: readonly Critique[]): string[] {
  const weight = { fatal: 5, major: 2, minor: 0.5 } as const;
  const penalty = new Map(candidates.map((c) => [c.id, 0]));
  for (const c of critiques)
    if (penalty.has(c.idea_id)) penalty.set(c.idea_id, (penalty.get(c.idea_id) ?? 0) + weight[c.severity]);
  return candidates
    .map((c, index) => ({ id: c.id, index, penalty: penalty.get(c.id) ?? 0 }))
    .sort((a, b) => a.penalty - b.penalty || a.index - b.index)
    .slice(0, SHORTLIST_SIZE)
    .map((c) => c.id);
}

/**
 * The final order (README, "forge/ideate", final ranking): the chair's ranking (known, distinct ids),
 * then any shortlisted idea it left out by RICE score (high first), kill score (low first) and
 * shortlist order.
 */
export function finalOrder(
  shortlist: readonly string[],
  ranking: readonly { idea_id: string }[],
  scored: readonly Scored[],
): string[] {
  const out: string[] = [];
  for (const { idea_id } of ranking) {
    const id = idea_id.trim();
    if (shortlist.includes(id) && !out.includes(id)) out.push(id);
  }
  const score = (id: string) => scored.find((s) => s.id === id);
  const rest = shortlist
    .filter((id) => !out.includes(id))
    .map((id, index) => ({ id, index, rice: score(id)?.rice.score ?? 0, kill: score(id)?.kill_score ?? 100 }))
    .sort((a, b) => b.rice - a.rice || a.kill - b.kill || a.index - b.index);
  return [...out, ...rest.map((r) => r.id)];
}
