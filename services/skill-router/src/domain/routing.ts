import type { CandidateRecord } from '../data/route-candidates';
import { rankSkills, type ScoredSkill } from './scoring';

/** Where routing gets its candidates (data/route-candidates.ts). */
export interface CandidateSource {
  find(
    task: string,
    chains: string[] | undefined,
    limit: number,
  ): Promise<{ taskTerms: string[]; candidates: CandidateRecord[]; total: number }>;
}

/** A route request as the domain sees it. */
export interface RouteInput {
  task: string;
  chains?: string[];
  maxPriceUsd?: number;
  maxLatencyMs?: number;
  /** How many matches to return. */
  limit: number;
}

/** The ranked matches and how many skills qualified. */
export interface RouteOutcome {
  matches: ScoredSkill<CandidateRecord>[];
  /** Active skills matching the task's terms and the chain filter (before `limit`). */
  totalMatches: number;
}

/**
 * Routes a task (README, "Routing and the score"; POST /api/discover/route): full-text candidates from PostgreSQL
 * (at most `candidateLimit`, best text rank first), each scored with the six weighted factors,
 * ordered by score then `skill_id`.
 */
export async function routeTask(
  source: CandidateSource,
  input: RouteInput,
  candidateLimit: number,
): Promise<RouteOutcome> {
  const { taskTerms, candidates, total } = await source.find(input.task, input.chains, candidateLimit);
  const matches = rankSkills(
    candidates,
    { taskTerms, chains: input.chains, maxPriceUsd: input.maxPriceUsd, maxLatencyMs: input.maxLatencyMs },
    input.limit,
  );
  return { matches, totalMatches: total };
}
