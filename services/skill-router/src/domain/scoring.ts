/**
 * The routing score (README, "Routing and the score"): a weighted sum of six factors, each in
 * [0, 1]. Pure functions; the candidates come from the routing index (domain/routing-index.ts) or,
 * while it is not current, from PostgreSQL full text (data/route-candidates.ts).
 */

import type { CandidateRecord } from '../data/route-candidates';
import { SEMANTIC_SHARE, type SemanticQuery } from './semantic';

/** The factor weights (README, "Routing and the score"); they sum to 1. */
export const WEIGHTS = {
  capability_match: 0.35,
  chain_match: 0.2,
  price_fit: 0.15,
  reliability: 0.15,
  latency_fit: 0.1,
  popularity: 0.05,
} as const;

/** One of the six factors. */
export type Factor = keyof typeof WEIGHTS;

/** The factors in the README's order (also the order of `match_reasons`). */
export const FACTORS = Object.keys(WEIGHTS) as Factor[];

/** Without a budget, a price of this many USD per call scores 0.5 on `price_fit`. */
export const PRICE_REFERENCE_USD = 0.01;
/** Without a latency requirement, this average latency (ms) scores 0.5 on `latency_fit`. */
export const LATENCY_REFERENCE_MS = 1000;
/** Calls in 30 days at which the volume half of `popularity` reaches 1 (log scale). */
export const POPULARITY_CALLS_SATURATION = 10_000;
/** Bayesian average of satisfaction: this many virtual ratings of {@link RATING_PRIOR} are added. */
export const RATING_PRIOR_WEIGHT = 5;
/** The neutral satisfaction (1–5 scale) unrated skills start from. */
export const RATING_PRIOR = 3;

/** What scoring needs from a caller's route request. */
export interface RouteQuery {
  /** The task's stemmed lexemes, stop words removed (PostgreSQL `english` configuration), distinct. */
  taskTerms: string[];
  /** Required chains (lowercase); empty or absent: no chain requirement. */
  chains?: string[];
  /** Budget per call in USD. */
  maxPriceUsd?: number;
  /** Largest acceptable average latency in ms. */
  maxLatencyMs?: number;
  /**
   * The task's embedding when search by meaning is on and the endpoint answered (README, "Search by
   * meaning"); absent: words alone.
   */
  semantic?: SemanticQuery;
}

/** What scoring needs from a skill: a routing candidate's fields without its name, endpoint and MCP tool. */
export type ScoringSkill = Omit<CandidateRecord, 'name' | 'endpoint' | 'mcpTool'>;

/** A factor's value and, when it counted (value > 0), the human-readable reason. */
export interface FactorResult {
  value: number;
  reason?: string;
}

/** A skill's score: the weighted sum (rounded to 6 decimals), each factor and the reasons. */
export interface ScoredSkill<S extends ScoringSkill = ScoringSkill> {
  skill: S;
  /** 0..1, rounded to 6 decimals (ties compare on this rounded value). */
  score: number;
  factors: Record<Factor, number>;
  /** One line per factor whose value is above 0, in {@link FACTORS} order. */
  reasons: string[];
}

const clamp01 = (x: number) => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const usd = (x: number) => `$${x.toFixed(x < 0.01 ? 4 : 3)}`;

/**
 * `capability_match` from its parts (README, "Search by meaning"): the lexical share alone, or, when
 * the skill has a similarity to the task's embedding, {@link SEMANTIC_SHARE} of the similarity (0 when
 * negative) plus the rest of the lexical share. Both rankers call this one function.
 * @param lexical |task ∩ skill| / |task|, 0..1
 * @param similarity cosine similarity of the embeddings, or `undefined`/`NaN` when there is none
 */
export function capabilityValue(lexical: number, similarity: number | undefined): number {
  if (similarity === undefined || Number.isNaN(similarity)) return lexical;
  return SEMANTIC_SHARE * Math.max(0, similarity) + (1 - SEMANTIC_SHARE) * lexical;
}

/**
 * `capability_match`: the share of the task's terms found among the skill's capability and
 * description terms, |task ∩ skill| / |task| (no task terms: 0), blended with the similarity of
 * meaning when the route has one for the skill ({@link capabilityValue}).
 * @param similarity cosine similarity of the skill's and the task's embeddings, if any
 */
export function capabilityMatch(
  taskTerms: string[],
  skillTerms: string[],
  explain = true,
  similarity?: number,
): FactorResult & { matched: string[] } {
  const task = new Set(taskTerms);
  if (task.size === 0) return { value: 0, matched: [] };
  const matched = [...new Set(skillTerms)].filter((t) => task.has(t));
  const value = capabilityValue(matched.length / task.size, similarity);
  if (!explain) return { value, matched };
  matched.sort();
  const words =
    matched.length > 0
      ? `task terms ${matched.map((m) => `"${m}"`).join(', ')} found in capabilities or description (${matched.length} of ${task.size})`
      : undefined;
  const meaning =
    similarity !== undefined && !Number.isNaN(similarity)
      ? `similar in meaning to the task (${similarity.toFixed(2)})`
      : undefined;
  return {
    value,
    matched,
    reason:
      value > 0
        ? `capability_match ${value.toFixed(2)}: ${[meaning, words].filter(Boolean).join('; ')}`
        : undefined,
  };
}

/**
 * `chain_match`: with no requested chains, 1 for every skill; otherwise the share of requested chains
 * the skill supports, and `null` (excluded: a hard filter) when it supports none of them.
 */
export function chainMatch(
  requested: string[] | undefined,
  supported: string[],
  explain = true,
): FactorResult | null {
  const wanted = [...new Set(requested ?? [])];
  if (wanted.length === 0)
    return { value: 1, reason: explain ? 'chain_match 1.00: no chain requirement' : undefined };
  const hits = wanted.filter((c) => supported.includes(c));
  if (hits.length === 0) return null;
  const value = hits.length / wanted.length;
  if (!explain) return { value };
  return {
    value,
    reason: `chain_match ${value.toFixed(2)}: supports ${hits.join(', ')} (${hits.length} of ${wanted.length} requested)`,
  };
}

/**
 * `price_fit`: free is 1. With a budget B: a price p ≤ B scores 1 − p / (2B) (0.5..1), above B 0.
 * Without a budget: 1 / (1 + p / {@link PRICE_REFERENCE_USD}).
 * @param priceUsd price per call in USD
 * @param budgetUsd `max_price_usd`, if given
 */
export function priceFit(priceUsd: number, budgetUsd?: number, explain = true): FactorResult {
  const value = priceFitValue(priceUsd, budgetUsd);
  if (!explain || value === 0) return { value };
  if (priceUsd <= 0) return { value, reason: 'price_fit 1.00: free' };
  return {
    value,
    reason:
      budgetUsd !== undefined
        ? `price_fit ${value.toFixed(2)}: ${usd(priceUsd)} per call within the ${usd(budgetUsd)} budget`
        : `price_fit ${value.toFixed(2)}: ${usd(priceUsd)} per call`,
  };
}

/** The value of {@link priceFit} alone (no reason, no allocation): what ranking many skills needs. */
export function priceFitValue(priceUsd: number, budgetUsd?: number): number {
  if (priceUsd <= 0) return 1;
  if (budgetUsd !== undefined) return priceUsd > budgetUsd ? 0 : clamp01(1 - priceUsd / (2 * budgetUsd));
  return clamp01(1 / (1 + priceUsd / PRICE_REFERENCE_USD));
}

/**
 * `reliability`: the stored reliability estimate (README, "Reputation"; domain/skill-metrics.ts
 * `reliabilityEstimate`): the success of the last 24 hours' health checks and weighted call reports,
 * decayed by age and shrunk toward the prior. Computed when a check or report is written, so the
 * routing index and the PostgreSQL ranking read the same number.
 * @param successRate24h the stored estimate (`skill_stats.success_rate_24h`), 0..1
 */
export function reliability(successRate24h: number, explain = true): FactorResult {
  const value = reliabilityValue(successRate24h);
  return value > 0 && explain
    ? {
        value,
        reason: `reliability ${value.toFixed(2)}: estimated success rate ${pct(value)} from recent checks and weighted call reports`,
      }
    : { value };
}

/** The value of {@link reliability} alone. */
export function reliabilityValue(successRate24h: number): number {
  return clamp01(successRate24h);
}

/**
 * `latency_fit`: unknown latency 0.5. With a limit M: a latency L ≤ M scores 1 − L / (2M) (0.5..1),
 * above M 0. Without a limit: 1 / (1 + L / {@link LATENCY_REFERENCE_MS}).
 * @param avgLatencyMs average latency in ms, or `null`
 * @param maxLatencyMs `max_latency_ms`, if given
 */
export function latencyFit(avgLatencyMs: number | null, maxLatencyMs?: number, explain = true): FactorResult {
  const value = latencyFitValue(avgLatencyMs, maxLatencyMs);
  if (!explain || value === 0) return { value };
  if (avgLatencyMs === null) return { value, reason: 'latency_fit 0.50: no latency measured yet' };
  const ms = Math.round(avgLatencyMs);
  return {
    value,
    reason:
      maxLatencyMs !== undefined
        ? `latency_fit ${value.toFixed(2)}: average ${ms} ms within the ${maxLatencyMs} ms limit`
        : `latency_fit ${value.toFixed(2)}: average ${ms} ms`,
  };
}

/** The value of {@link latencyFit} alone. */
export function latencyFitValue(avgLatencyMs: number | null, maxLatencyMs?: number): number {
  if (avgLatencyMs === null) return 0.5;
  if (maxLatencyMs !== undefined)
    return avgLatencyMs > maxLatencyMs ? 0 : clamp01(1 - avgLatencyMs / (2 * maxLatencyMs));
  return clamp01(1 / (1 + avgLatencyMs / LATENCY_REFERENCE_MS));
}

/**
 * `popularity`: half call volume, half rating. Volume = log10(1 + calls30d) / log10(1 +
 * {@link POPULARITY_CALLS_SATURATION}), capped at 1. Rating = the Bayesian average of satisfaction
 * ((sum + 3·5) / (count + 5), 1–5) mapped to 0..1, so a few ratings move it little.
 */
export function popularity(
  calls30d: number,
  ratingSum: number,
  ratingCount: number,
  explain = true,
): FactorResult {
  const value = popularityValue(calls30d, ratingSum, ratingCount);
  if (!explain) return { value };
  const rated =
    ratingCount > 0 ? `rated ${(ratingSum / ratingCount).toFixed(1)}/5 by ${ratingCount}` : 'not rated yet';
  return { value, reason: `popularity ${value.toFixed(2)}: ${calls30d} calls in 30 days, ${rated}` };
}

/** The value of {@link popularity} alone. */
export function popularityValue(calls30d: number, ratingSum: number, ratingCount: number): number {
  const volume = clamp01(Math.log10(1 + Math.max(0, calls30d)) / Math.log10(1 + POPULARITY_CALLS_SATURATION));
  const bayes = (ratingSum + RATING_PRIOR * RATING_PRIOR_WEIGHT) / (ratingCount + RATING_PRIOR_WEIGHT);
  const rating = clamp01((bayes - 1) / 4);
  return clamp01(0.5 * volume + 0.5 * rating);
}

/**
 * The score from the six factor values: their weighted sum in {@link FACTORS} order, clamped to
 * [0, 1] and rounded to 6 decimals. Every ranking path goes through this one function, so two paths
 * given the same factor values agree to the last bit.
 */
export function weightedScore(
  capabilityMatch: number,
  chainMatch: number,
  priceFit: number,
  reliability: number,
  latencyFit: number,
  popularity: number,
): number {
  let sum = 0;
  sum += WEIGHTS.capability_match * capabilityMatch;
  sum += WEIGHTS.chain_match * chainMatch;
  sum += WEIGHTS.price_fit * priceFit;
  sum += WEIGHTS.reliability * reliability;
  sum += WEIGHTS.latency_fit * latencyFit;
  sum += WEIGHTS.popularity * popularity;
  return Math.round(clamp01(sum) * 1e6) / 1e6;
}

/**
 * Orders two scored skills: higher score first, ties by `skill_id` ascending (code-unit order).
 * @returns negative when skill `a` comes first
 */
export function compareRanked(scoreA: number, skillIdA: string, scoreB: number, skillIdB: string): number {
  return scoreB - scoreA || (skillIdA < skillIdB ? -1 : skillIdA > skillIdB ? 1 : 0);
}

/**
 * Scores one skill for a route query.
 * @param explain build `reasons` (false: values only, for ranking many candidates quickly)
 * @returns the score, or `null` when the chain hard filter excludes the skill
 */
export function scoreSkill<S extends ScoringSkill>(
  skill: S,
  query: RouteQuery,
  explain = true,
): ScoredSkill<S> | null {
  const chain = chainMatch(query.chains, skill.chains, explain);
  if (!chain) return null;
  const results: Record<Factor, FactorResult> = {
    capability_match: capabilityMatch(
      query.taskTerms,
      skill.matchTerms,
      explain,
      query.semantic ? skill.similarity : undefined,
    ),
    chain_match: chain,
    price_fit: priceFit(skill.priceUsd, query.maxPriceUsd, explain),
    reliability: reliability(skill.successRate24h, explain),
    latency_fit: latencyFit(skill.avgLatencyMs, query.maxLatencyMs, explain),
    popularity: popularity(skill.calls30d, skill.ratingSum, skill.ratingCount, explain),
  };
  const factors = {} as Record<Factor, number>;
  const reasons: string[] = [];
  for (const f of FACTORS) {
    const r = results[f];
    factors[f] = r.value;
    if (r.value > 0 && r.reason) reasons.push(r.reason);
  }
  const score = weightedScore(
    factors.capability_match,
    factors.chain_match,
    factors.price_fit,
    factors.reliability,
    factors.latency_fit,
    factors.popularity,
  );
  return { skill, score, factors, reasons };
}

/**
 * Scores and orders skills: highest score first, ties by `skill_id` ascending (code-unit order).
 * Skills the chain filter excludes are dropped.
 * @param limit how many of the best to return (reasons are built for these only); default all
 */
export function rankSkills<S extends ScoringSkill>(
  skills: S[],
  query: RouteQuery,
  limit = Infinity,
): ScoredSkill<S>[] {
  const scored: ScoredSkill<S>[] = [];
  for (const s of skills) {
    const r = scoreSkill(s, query, false);
    if (r) scored.push(r);
  }
  scored.sort((a, b) => compareRanked(a.score, a.skill.skillId, b.score, b.skill.skillId));
  return scored.slice(0, limit).map((r) => scoreSkill(r.skill, query, true) ?? r);
}
