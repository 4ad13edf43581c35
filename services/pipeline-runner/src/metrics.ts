import type { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import { createMetrics, type ServiceMetrics } from '@repo/service-kit';

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
  const { series, ...base } = createMetrics('pipeline-runner', {
    runner_steps_total: {
      type: 'counter',
      help: 'Pipeline steps executed, by pipeline and outcome (completed, retry, poison)',
      labels: ['kind', 'outcome'],
    },
    runner_step_duration_seconds: {
      type: 'histogram',
      help: 'Duration of one pipeline step (LLM and search calls included), in seconds',
      labels: ['kind'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300],
    },
    runner_upstream_up: {
      type: 'gauge',
      help: '1 when the upstream answered the last probe',
      labels: ['upstream'],
    },
  });
  return {
    ...base,
    onStep(kind, outcome, seconds) {
      series.runner_steps_total.inc({ kind, outcome });
      if (outcome === 'completed') series.runner_step_duration_seconds.observe({ kind }, seconds);
    },
    onProbe(name, ok) {
      series.runner_upstream_up.set({ upstream: name }, ok ? 1 : 0);
    },
    observe(sources) {
      base.scrapedGauge('runner_steps_in_flight', 'Steps this runner is executing now', undefined, () =>
        sources.inFlightSteps(),
      );
      base.observeQueueDepths(
        sources.broker,
        [COMPUTE_TOPOLOGY.queues.starts, COMPUTE_TOPOLOGY.queues.steps, COMPUTE_TOPOLOGY.queues.deadLetter],
        'Ready messages in each step queue and the dead-letter queue (queue depth)',
      );
    },
  };
}
