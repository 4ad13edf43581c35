import { Counter, Histogram } from 'prom-client';
import { createMetrics, type ServiceMetrics } from '@repo/service-kit';

/** skill-router's metrics: the shared HTTP ones plus registrations, verifications, health checks and routing. */
export interface SkillRouterMetrics extends ServiceMetrics {
  onRegistered(outcome: 'created' | 'updated'): void;
  onVerified(passed: boolean): void;
  onHealthChecked(ok: boolean, status: string): void;
  onRouted(matches: number): void;
}

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
  return {
    ...base,
    onRegistered: (outcome) => registrations.inc({ outcome }),
    onVerified: (passed) => verifications.inc({ result: passed ? 'passed' : 'failed' }),
    onHealthChecked: (ok, status) => healthChecks.inc({ result: ok ? 'ok' : 'failed', status }),
    onRouted: (matches) => routeMatches.observe(matches),
  };
}
