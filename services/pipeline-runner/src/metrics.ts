import { Counter, Gauge, Histogram } from 'prom-client';
import type { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import { cachedFor, createMetrics, type ServiceMetrics } from '@repo/service-kit';

/** How long queue depths are reused between scrapes, in milliseconds. */
const QUEUE_DEPTH_CACHE_MS = 1000;

/** The runner's metrics: the shared HTTP ones plus steps, upstream health and queue depths. */
export interface RunnerMetrics extends ServiceMetrics {
  /** Counts a step by pipeline and outcome; completed steps also feed the duration histogram (seconds). */
  onStep(kind: string, outcome: 'completed' | 'retry' | 'poison', seconds: number): void;
  /** Records the last LLM / search probe (`runner_upstream_up`). */
  onProbe(upstream: 'llm' | 'search', ok: boolean): void;
  /**
   * Adds the scrape-time gauges `runner_steps_in_flight` and `rabbitmq_queue_messages{queue}`
   * (ready messages in the step queues and the dead-letter queue, by `checkQueue`, reused for 1 s).
   */
  observe(sources: { inFlightSteps: () => number; broker: Broker }): void;
}

/** Creates the runner's registry (`service="pipeline-runner"`). */
export function createRunnerMetrics(): RunnerMetrics {
  const base = createMetrics('pipeline-runner');
  const steps = new Counter({
    name: 'runner_steps_total',
    help: 'Pipeline steps executed, by pipeline and outcome (completed, retry, poison)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [base.registry],
  });
  const stepSeconds = new Histogram({
    name: 'runner_step_duration_seconds',
    help: 'Duration of one pipeline step (LLM and search calls included), in seconds',
    labelNames: ['kind'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300],
    registers: [base.registry],
  });
  const upstream = new Gauge({
    name: 'runner_upstream_up',
    help: '1 when the upstream answered the last probe',
    labelNames: ['upstream'] as const,
    registers: [base.registry],
  });
  return {
    ...base,
    onStep(kind, outcome, seconds) {
      steps.inc({ kind, outcome });
      if (outcome === 'completed') stepSeconds.observe({ kind }, seconds);
    },
    onProbe(name, ok) {
      upstream.set({ upstream: name }, ok ? 1 : 0);
    },
    observe(sources) {
      new Gauge({
        name: 'runner_steps_in_flight',
        help: 'Steps this runner is executing now',
        registers: [base.registry],
        collect() {
          this.set(sources.inFlightSteps());
        },
      });
      const queues = [
        COMPUTE_TOPOLOGY.queues.starts,
        COMPUTE_TOPOLOGY.queues.steps,
        COMPUTE_TOPOLOGY.queues.deadLetter,
      ];
      const depths = cachedFor(QUEUE_DEPTH_CACHE_MS, () =>
        sources.broker.withChannel(async (channel) => {
          const out: Record<string, number> = {};
          for (const queue of queues) out[queue] = (await channel.checkQueue(queue)).messageCount;
          return out;
        }),
      );
      new Gauge({
        name: 'rabbitmq_queue_messages',
        help: 'Ready messages in each step queue and the dead-letter queue (queue depth)',
        labelNames: ['queue'] as const,
        registers: [base.registry],
        async collect() {
          if (!sources.broker.isConnected()) return;
          const current = await depths().catch(() => undefined);
          if (!current) return;
          for (const [queue, count] of Object.entries(current)) this.set({ queue }, count);
        },
      });
    },
  };
}
