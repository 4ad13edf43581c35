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
  const steps = base.counter(
    'runner_steps_total',
    'Pipeline steps executed, by pipeline and outcome (completed, retry, poison)',
    ['kind', 'outcome'],
  );
  const stepSeconds = base.histogram(
    'runner_step_duration_seconds',
    'Duration of one pipeline step (LLM and search calls included), in seconds',
    [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300],
    ['kind'],
  );
  const upstream = base.gauge('runner_upstream_up', '1 when the upstream answered the last probe', [
    'upstream',
  ]);
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
      base.scrapedGauge('runner_steps_in_flight', 'Steps this runner is executing now', undefined, () =>
        sources.inFlightSteps(),
      );
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
      base.scrapedGauge(
        'rabbitmq_queue_messages',
        'Ready messages in each step queue and the dead-letter queue (queue depth)',
        'queue',
        () => (sources.broker.isConnected() ? depths() : undefined),
      );
    },
  };
}
