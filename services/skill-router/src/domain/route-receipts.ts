/**
 * Route receipts (README, "Routing receipts"): the candidates a route removed (not routable, or by
 * the chain filter), nearest first, each with the requirements it fails. Pure functions shared by the routing index
 * (domain/routing-index.ts) and the SQL ranking (data/route-candidates.ts), so both give the same list.
 */

import type { RejectableSkill, RouteState } from '../data/route-candidates';
import type { RouteQuery } from './scoring';

export type { RejectableSkill, RouteState };

/** Most rejected candidates a route answer lists. */
export const REJECTED_MAX = 10;

/**
 * Why a candidate is listed: first why routing cannot return it at all (`unhealthy`, `degraded`,
 * `unverified_version`: its {@link RouteState}), then `chain` (it supports none of the requested
 * chains: the hard filter), then, when it also fails them, `over_max_price` (its price per call is
 * above `max_price_usd`) and `over_max_latency` (its measured average latency is above
 * `max_latency_ms`).
 */
export type RejectionReason = Exclude<RouteState, 'active'> | 'chain' | 'over_max_price' | 'over_max_latency';

/** The reasons a route answer may give, in the order they are listed. */
export const REJECTION_REASONS = [
  'unhealthy',
  'degraded',
  'unverified_version',
  'chain',
  'over_max_price',
  'over_max_latency',
] as const satisfies readonly RejectionReason[];

/** One element of a route's `rejected` list. */
export interface RejectedCandidate {
  skillId: string;
  name: string;
  /** The skill's `capability_match` for the task, 0..1 (rounded to 6 decimals). */
  capabilityMatch: number;
  /** Its state when not routable, then `chain` when it fails the chain filter, then the budgets it exceeds (at least one reason). */
  reasons: RejectionReason[];
}

/**
 * A skill the route removed (not routable, or by the chain filter), as the route answer lists it.
 * @param taskTermCount the task's distinct lexemes (at least one)
 */
export function rejectionOf(
  skill: RejectableSkill,
  query: RouteQuery,
  taskTermCount: number,
): RejectedCandidate {
  const reasons: RejectionReason[] = [];
  if (skill.state !== 'active') reasons.push(skill.state);
  const wanted = query.chains ?? [];
  if (wanted.length > 0 && !skill.chains.some((c) => wanted.includes(c))) reasons.push('chain');
  if (query.maxPriceUsd !== undefined && skill.priceUsd > query.maxPriceUsd) reasons.push('over_max_price');
  if (
    query.maxLatencyMs !== undefined &&
    skill.avgLatencyMs !== null &&
    skill.avgLatencyMs > query.maxLatencyMs
  )
    reasons.push('over_max_latency');
  return {
    skillId: skill.skillId,
    name: skill.name,
    capabilityMatch: Math.round((skill.sharedTerms / taskTermCount) * 1e6) / 1e6,
    reasons,
  };
}

/**
 * Orders rejected candidates nearest first: more shared task lexemes, then `skill_id` ascending
 * (code-unit order, as the ranking breaks ties).
 * @returns negative when `a` comes first
 */
export function compareRejected(
  sharedA: number,
  skillIdA: string,
  sharedB: number,
  skillIdB: string,
): number {
  return sharedB - sharedA || (skillIdA < skillIdB ? -1 : skillIdA > skillIdB ? 1 : 0);
}

/**
 * The nearest `max` of the given skills, explained (the SQL ranking's path; the index keeps the same
 * window while it ranks).
 * @param skills skills the route removed (any order)
 * @param taskTermCount the task's distinct lexemes (at least one)
 */
export function nearestRejected(
  skills: RejectableSkill[],
  query: RouteQuery,
  taskTermCount: number,
  max = REJECTED_MAX,
): RejectedCandidate[] {
  return [...skills]
    .sort((a, b) => compareRejected(a.sharedTerms, a.skillId, b.sharedTerms, b.skillId))
    .slice(0, max)
    .map((s) => rejectionOf(s, query, taskTermCount));
}
