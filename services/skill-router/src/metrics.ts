import { Counter, Histogram } from 'prom-client';
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
  return {
    ...base,
    onRegistered: (outcome) => registrations.inc({ outcome }),
    onVerified: (passed) => verifications.inc({ result: passed ? 'passed' : 'failed' }),
    onHealthChecked: (ok, status) => healthChecks.inc({ result: ok ? 'ok' : 'failed', status }),
    onRouted: (matches) => routeMatches.observe(matches),
    onRouteServed: (outcome) => routesServed.inc({ outcome }),
    onSandboxTask: (task, outcome) => sandboxTasks.inc({ task, outcome }),
  };
}
