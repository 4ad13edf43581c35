import { Counter, Gauge, Histogram } from 'prom-client';
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
  const registrations = new Counter({
    name: 'skill_registrations_total',
    help: 'Skill registrations by outcome (created, updated)',
    labelNames: ['outcome'] as const,
    registers: [base.registry],
  });
  const verifications = new Counter({
    name: 'skill_verifications_total',
    help: 'Applied skill verifications by result (passed, failed)',
    labelNames: ['result'] as const,
    registers: [base.registry],
  });
  const healthChecks = new Counter({
    name: 'skill_health_checks_total',
    help: 'Periodic health checks by result (ok, failed) and the status after the check',
    labelNames: ['result', 'status'] as const,
    registers: [base.registry],
  });
  const routeMatches = new Histogram({
    name: 'skill_route_matches',
    help: 'Matches returned per route request',
    buckets: [0, 1, 2, 5, 10, 20, 50, 100],
    registers: [base.registry],
  });
  const routesServed = new Counter({
    name: 'skill_routes_served_total',
    help: 'Route requests answered, by outcome (matched, no_match, rejected, failed)',
    labelNames: ['outcome'] as const,
    registers: [base.registry],
  });
  for (const outcome of ['matched', 'no_match', 'rejected', 'failed'] as const)
    routesServed.inc({ outcome }, 0);
  const sandboxTasks = new Counter({
    name: 'skill_sandbox_tasks_total',
    help: 'Schema sandbox tasks by kind and outcome (ok, refused, timeout, out_of_memory, crashed)',
    labelNames: ['task', 'outcome'] as const,
    registers: [base.registry],
  });
  const rankings = new Counter({
    name: 'skill_route_rankings_total',
    help: 'Route requests ranked, by source (index: the in-memory routing index, database: the SQL ranking)',
    labelNames: ['source'] as const,
    registers: [base.registry],
  });
  for (const source of ['index', 'database'] as const) rankings.inc({ source }, 0);
  const indexLoads = new Histogram({
    name: 'skill_routing_index_load_seconds',
    help: 'Full loads of the routing index, by duration',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [base.registry],
  });
  const indexUpdates = new Counter({
    name: 'skill_routing_index_updates_total',
    help: 'Skills re-read into the routing index, by cause (notification, watermark)',
    labelNames: ['cause'] as const,
    registers: [base.registry],
  });
  let watched: { readonly size: number; readonly current: boolean } | undefined;
  new Gauge({
    name: 'skill_routing_index_skills',
    help: 'Active skills in the routing index',
    registers: [base.registry],
    collect() {
      this.set(watched?.size ?? 0);
    },
  });
  new Gauge({
    name: 'skill_routing_index_current',
    help: '1 while routes are ranked from the routing index (loaded, changes heard), else 0',
    registers: [base.registry],
    collect() {
      this.set(watched?.current ? 1 : 0);
    },
  });
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
