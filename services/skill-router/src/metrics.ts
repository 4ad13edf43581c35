import { createMetrics, type ServiceMetrics } from '@repo/service-kit';
import type { SandboxOutcome } from './adapters/sandbox/schema-sandbox';
import type { SandboxTaskKind } from './adapters/sandbox/tasks';

/** skill-router's metrics: the shared HTTP ones plus registrations, verifications, health checks and routes served. */
export interface SkillRouterMetrics extends ServiceMetrics {
  onRegistered(outcome: 'created' | 'updated'): void;
  onVerified(passed: boolean): void;
  onHealthChecked(ok: boolean, status: string): void;
  onRouted(matches: number): void;
  /** Counts a finished `POST /api/discover/route` (`skill_routes_served_total{outcome}`). */
  onRouteServed(outcome: RouteOutcome): void;
  /** Counts a finished schema sandbox task (`skill_sandbox_tasks_total{task, outcome}`). */
  onSandboxTask(task: SandboxTaskKind, outcome: SandboxOutcome): void;
  /** Counts a ranked route by the path that ranked it (`skill_route_rankings_total{source}`). */
  onRanked(source: 'index' | 'database'): void;
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
  const base = createMetrics('skill-router');
  const registrations = base.counter(
    'skill_registrations_total',
    'Skill registrations by outcome (created, updated)',
    ['outcome'],
  );
  const verifications = base.counter(
    'skill_verifications_total',
    'Applied skill verifications by result (passed, failed)',
    ['result'],
  );
  const healthChecks = base.counter(
    'skill_health_checks_total',
    'Periodic health checks by result (ok, failed) and the status after the check',
    ['result', 'status'],
  );
  const routeMatches = base.histogram(
    'skill_route_matches',
    'Matches returned per route request',
    [0, 1, 2, 5, 10, 20, 50, 100],
  );
  const routesServed = base.counter(
    'skill_routes_served_total',
    'Route requests answered, by outcome (matched, no_match, rejected, failed)',
    ['outcome'],
  );
  for (const outcome of ['matched', 'no_match', 'rejected', 'failed'] as const)
    routesServed.inc({ outcome }, 0);
  const sandboxTasks = base.counter(
    'skill_sandbox_tasks_total',
    'Schema sandbox tasks by kind and outcome (ok, refused, timeout, out_of_memory, crashed)',
    ['task', 'outcome'],
  );
  const rankings = base.counter(
    'skill_route_rankings_total',
    'Route requests ranked, by source (index: the in-memory routing index, database: the SQL ranking)',
    ['source'],
  );
  for (const source of ['index', 'database'] as const) rankings.inc({ source }, 0);
  const indexLoads = base.histogram(
    'skill_routing_index_load_seconds',
    'Full loads of the routing index, by duration',
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  const indexUpdates = base.counter(
    'skill_routing_index_updates_total',
    'Skills re-read into the routing index, by cause (notification, watermark)',
    ['cause'],
  );
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
    onRanked: (source) => rankings.inc({ source }),
    onIndexLoaded: (_skills, ms) => indexLoads.observe(ms / 1000),
    onIndexApplied: (skills, cause) => indexUpdates.inc({ cause }, skills),
    watchIndex: (index) => {
      watched = index;
    },
    onRegistered: (outcome) => registrations.inc({ outcome }),
    onVerified: (passed) => verifications.inc({ result: passed ? 'passed' : 'failed' }),
    onHealthChecked: (ok, status) => healthChecks.inc({ result: ok ? 'ok' : 'failed', status }),
    onRouted: (matches) => routeMatches.observe(matches),
    onRouteServed: (outcome) => routesServed.inc({ outcome }),
    onSandboxTask: (task, outcome) => sandboxTasks.inc({ task, outcome }),
  };
}
