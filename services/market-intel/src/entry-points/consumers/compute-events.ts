import { setTimeout as delay } from 'node:timers/promises';
import type { Broker, Delivery, QueueLogger, Settlement, TopologySetup } from '@repo/queue';
import { backoffDelay } from '@repo/service-kit';
import { COMPUTE_TOPOLOGY, JobEvent, RunnerHeartbeat, StepCommand } from '@repo/compute';
import type { RunnerHealthMonitor } from '../../domain/health';
import type { JobLifecycle } from '../../domain/job-lifecycle';

/** The wait before a job event that could not be applied is requeued: 250 ms, doubling, at most 30 s. */
const EVENT_RETRY_BACKOFF = { initialDelayMs: 250, maxDelayMs: 30_000 };

/** What the compute consumers act on. */
export interface ComputeConsumerDeps {
  broker: Broker;
  /** Applies job events and dead letters, then settles them (publishes, kicks, counts). */
  lifecycle: Pick<JobLifecycle, 'applyEvent' | 'fail' | 'settle'>;
  health: RunnerHealthMonitor;
  logger: QueueLogger;
  /** Unacknowledged job events held at once. */
  prefetch?: number;
}

/** The per-replica heartbeat queue name (exclusive, deleted with its connection). */
export function heartbeatQueueName(instanceId: string): string {
  return `market-intel.heartbeat.${instanceId}`;
}

/**
 * market-intel's own topology on top of the shared compute topology: an exclusive, auto-deleted
 * queue per replica bound to the heartbeat fanout, whose messages expire after 30 s.
 */
export function heartbeatTopology(instanceId: string): TopologySetup {
  return async (channel) => {
    const queue = heartbeatQueueName(instanceId);
    await channel.assertQueue(queue, {
      exclusive: true,
      autoDelete: true,
      durable: false,
      arguments: { 'x-message-ttl': 30_000 },
    });
    await channel.bindQueue(queue, COMPUTE_TOPOLOGY.exchanges.heartbeat, '');
  };
}

/**
 * Starts market-intel's consumers (README, "Failed jobs and health (market-intel)"):
 * - job events from the runners (starts and step outcomes on separate queues), applied to the job rows once each (duplicates dropped by step
 *   index); the next step command is published from the outbox right after the commit. A database
 *   error requeues the event after a backoff; an unparseable event is dead-lettered.
 * - dead letters: a step command dead-lettered after its delivery limit (or rejected as poison)
 *   fails its job with the reason;
 * - runner heartbeats, fed to the health monitor.
 */
export async function startComputeConsumers(deps: ComputeConsumerDeps, instanceId: string): Promise<void> {
  const { broker, lifecycle, logger } = deps;

  const applyJobEvent = async (delivery: Delivery): Promise<Settlement> => {
    const parsed = JobEvent.safeParse(delivery.body);
    if (!parsed.success) {
      logger.error(
        { messageId: delivery.messageId, issues: parsed.error.issues.slice(0, 5) },
        'unparseable job event dead-lettered',
      );
      return 'reject';
    }
    try {
      await lifecycle.settle(parsed.data.type, await lifecycle.applyEvent(parsed.data));
      return 'ack';
    } catch (err) {
      // Usually the database is away: back off before the requeue so the delivery limit spans minutes.
      logger.warn(
        { err: String(err), jobId: parsed.data.jobId, attempt: delivery.deliveryCount + 1 },
        'job event not applied; requeued',
      );
      await delay(backoffDelay(EVENT_RETRY_BACKOFF, delivery.deliveryCount));
      return 'requeue';
    }
  };
  await broker.consume(COMPUTE_TOPOLOGY.queues.jobEvents, applyJobEvent, { prefetch: deps.prefetch ?? 32 });
  // Starts on their own queue: a job turns "running" without waiting behind other jobs' step outcomes.
  await broker.consume(COMPUTE_TOPOLOGY.queues.jobStarts, applyJobEvent, { prefetch: deps.prefetch ?? 32 });

  await broker.consume(
    COMPUTE_TOPOLOGY.queues.deadLetterEvents,
    async (delivery): Promise<Settlement> => {
      const reason = deadLetterReason(delivery);
      const step = StepCommand.safeParse(delivery.body);
      const event = step.success ? undefined : JobEvent.safeParse(delivery.body);
      const jobId = step.success ? step.data.jobId : event?.success ? event.data.jobId : undefined;
      if (!jobId) {
        logger.error(
          { messageId: delivery.messageId, reason },
          'dead letter without a job; kept in the operators queue',
        );
        return 'ack';
      }
      const what = step.success
        ? `step ${step.data.stepIndex} (${step.data.kind})`
        : `job event ${event?.success ? event.data.type : ''}`;
      logger.error({ jobId, reason }, `${what} dead-lettered; failing the job`);
      try {
        await lifecycle.settle(
          'dead-letter',
          await lifecycle.fail(
            jobId,
            { code: 'delivery_limit', detail: `${what} could not be processed: ${reason}` },
            step.success ? step.data.stepIndex : undefined,
          ),
        );
        return 'ack';
      } catch (err) {
        logger.warn({ err: String(err), jobId }, 'dead letter not applied; requeued');
        await delay(1000);
        return 'requeue';
      }
    },
    { prefetch: 8 },
  );

  await broker.consume(
    heartbeatQueueName(instanceId),
    async (delivery): Promise<Settlement> => {
      const parsed = RunnerHeartbeat.safeParse(delivery.body);
      if (parsed.success) deps.health.record(parsed.data);
      return 'ack';
    },
    { prefetch: 16 },
  );
}

/** A readable reason from RabbitMQ's `x-death` header: delivery limit reached, or rejected as poison. */
function deadLetterReason(delivery: Delivery): string {
  const deaths = delivery.headers['x-death'];
  const first = Array.isArray(deaths) ? (deaths[0] as Record<string, unknown> | undefined) : undefined;
  const why = typeof first?.reason === 'string' ? first.reason : 'dead-lettered';
  const queue = typeof first?.queue === 'string' ? first.queue : 'queue';
  const firstReason = delivery.headers['x-first-death-reason'];
  const text =
    why === 'delivery_limit' || firstReason === 'delivery_limit'
      ? 'delivery limit reached (it failed on every attempt)'
      : why === 'rejected'
        ? 'rejected as malformed'
        : why;
  return `${text} in ${queue}`;
}
