import { createMetrics, type ServiceMetrics } from '@repo/service-kit';
import type { SandboxOutcome } from './adapters/sandbox/schema-sandbox';
import type { SandboxTaskKind } from './adapters/sandbox/tasks';

/** skill-router's metrics: the shared HTTP ones plus registrations, verifications, health checks and routes served. */
export interface SkillRouterMetrics extends ServiceMetrics {
  onRegistered(outcome: 'created' | 'updated'): void;
  onVerified(passed: boolean): void;
  onHealthChecked(ok: boolean, status: string): void;
  /** Counts a recorded conformance call (`skill_conformance_calls_total{verdict, status}`). */
  onConformanceChecked(verdict: 'conforms' | 'nonconforming' | 'inconclusive', status: string): void;
  onRouted(matches: number): void;
  /** Counts a finished `POST /api/discover/route` (`skill_routes_served_total{outcome}`). */
  onRouteServed(outcome: RouteOutcome): void;
  /** Counts a finished schema sandbox task (`skill_sandbox_tasks_total{task, outcome}`). */
  onSandboxTask(task: SandboxTaskKind, outcome: SandboxOutcome): void;
  /** Counts a ranked route by the path that ranked it (`skill_route_rankings_total{source}`). */
  onRanked(source: 'index' | 'database'): void;
  /**
   * Counts a route ranked by words alone although search by meaning is on, because the embeddings
   * endpoint failed or failed recently (`skill_route_embedding_fallbacks_total`).
   */
  onEmbeddingFallback(): void;
  /** Counts a round of the embeddings worker (`skill_embeddings_stored_total{result}`: stored skills, or a failed round). */
  onEmbedded(result: 'stored' | 'failed', count: number): void;
  /** A full load of the routing index: skills loaded, duration in milliseconds. */
  onIndexLoaded(skills: number, ms: number): void;
  /** Skills re-read into the routing index (`skill_routing_index_updates_total{cause}`). */
  onIndexApplied(skills: number, cause: 'notification' | 'watermark'): void;
  /** Reports the routing index's size and whether it is current on every scrape. */
  watchIndex(index: { readonly size: number; readonly current: boolean }): void;
}

/**
 * How a route request ended: `matched` (200 with at least one match), `no_match` (200, empty),
 * `rejected` (4xx: bad key, invalid body, rate limit) or `failed` (5xx).
 */
export type RouteOutcome = 'matched' | 'no_match' | 'rejected' | 'failed';

/** Creates skill-router's registry (`service="skill-router"`). */
export function createSkillRouterMetrics(): SkillRouterMetrics {
  const { series, ...base } = createMetrics('skill-router', {
    skill_registrations_total: {
      type: 'counter',
      help: 'Skill registrations by outcome (created, updated)',
      labels: ['outcome'],
    },
    skill_verifications_total: {
      type: 'counter',
      help: 'Applied skill verifications by result (passed, failed)',
      labels: ['result'],
    },
    skill_health_checks_total: {
      type: 'counter',
      help: 'Periodic health checks by result (ok, failed) and the status after the check',
      labels: ['result', 'status'],
    },
    skill_conformance_calls_total: {
      type: 'counter',
      help: 'Conformance calls by verdict (conforms, nonconforming, inconclusive) and the status after the call',
      labels: ['verdict', 'status'],
    },
    skill_route_matches: {
      type: 'histogram',
      help: 'Matches returned per route request',
      buckets: [0, 1, 2, 5, 10, 20, 50, 100],
    },
    skill_routes_served_total: {
      type: 'counter',
      help: 'Route requests answered, by outcome (matched, no_match, rejected, failed)',
      labels: ['outcome'],
    },
    skill_sandbox_tasks_total: {
      type: 'counter',
      help: 'Schema sandbox tasks by kind and outcome (ok, refused, timeout, out_of_memory, crashed)',
      labels: ['task', 'outcome'],
    },
    skill_route_rankings_total: {
      type: 'counter',
      help: 'Route requests ranked, by source (index: the in-memory routing index, database: the SQL ranking)',
      labels: ['source'],
    },
    skill_route_embedding_fallbacks_total: {
      type: 'counter',
      help: 'Routes ranked by words alone although search by meaning is on (the embeddings endpoint failed)',
    },
    skill_embeddings_stored_total: {
      type: 'counter',
      help: 'Skill embeddings computed by the embeddings worker (stored: skills; failed: rounds whose request failed)',
      labels: ['result'],
    },
    skill_routing_index_load_seconds: {
      type: 'histogram',
      help: 'Full loads of the routing index, by duration',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    },
    skill_routing_index_updates_total: {
      type: 'counter',
      help: 'Skills re-read into the routing index, by cause (notification, watermark)',
      labels: ['cause'],
    },
  });
  // Every outcome and source is shown from the first scrape, at 0 until it happens.
  for (const outcome of ['matched', 'no_match', 'rejected', 'failed'] as const)
    series.skill_routes_served_total.inc({ outcome }, 0);
  for (const source of ['index', 'database'] as const) series.skill_route_rankings_total.inc({ source }, 0);
  let watched: { readonly size: number; readonly current: boolean } | undefined;
  base.scrapedGauge(
    'skill_routing_index_skills',
    'Active skills in the routing index',
    undefined,
    () => watched?.size ?? 0,
  );
  base.scrapedGauge(
    'skill_routing_index_current',
    '1 while routes are ranked from the routing index (loaded, changes heard), else 0',
    undefined,
    () => (watched?.current ? 1 : 0),
  );
  return {
    ...base,
    onRanked: (source) => series.skill_route_rankings_total.inc({ source }),
    onEmbeddingFallback: () => series.skill_route_embedding_fallbacks_total.inc(),
    onEmbedded: (result, count) => series.skill_embeddings_stored_total.inc({ result }, count),
    onIndexLoaded: (_skills, ms) => series.skill_routing_index_load_seconds.observe(ms / 1000),
    onIndexApplied: (skills, cause) => series.skill_routing_index_updates_total.inc({ cause }, skills),
    watchIndex: (index) => {
      watched = index;
    },
    onRegistered: (outcome) => series.skill_registrations_total.inc({ outcome }),
    onVerified: (passed) => series.skill_verifications_total.inc({ result: passed ? 'passed' : 'failed' }),
    onHealthChecked: (ok, status) =>
      series.skill_health_checks_total.inc({ result: ok ? 'ok' : 'failed', status }),
    onConformanceChecked: (verdict, status) => series.skill_conformance_calls_total.inc({ verdict, status }),
    onRouted: (matches) => series.skill_route_matches.observe(matches),
    onRouteServed: (outcome) => series.skill_routes_served_total.inc({ outcome }),
    onSandboxTask: (task, outcome) => series.skill_sandbox_tasks_total.inc({ task, outcome }),
  };
}
