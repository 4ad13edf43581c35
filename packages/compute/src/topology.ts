import type { Channel, Options } from 'amqplib';
import type { PipelineKind } from './messages';

/**
 * The compute-job topology (README, "Topology"), declared identically by market-intel
 * and the pipeline-runner. Every exchange and queue is durable; work queues are quorum queues so
 * that RabbitMQ counts redeliveries and dead-letters a message after {@link COMPUTE_DELIVERY_LIMIT}
 * returns.
 *
 * ```
 * market-intel --start.<kind>--> [compute (topic)] --> compute.starts (quorum) --> pipeline-runner   (step 0)
 * market-intel --step.<kind>---> [compute (topic)] --> compute.steps (quorum) --> pipeline-runner    (later steps)
 * pipeline-runner --job.step-completed|failed--> [compute.events (topic)] --> market-intel.job-events (quorum) --> market-intel
 * pipeline-runner --job.step-started--> [compute.events (topic)] --> market-intel.job-starts (quorum) --> market-intel
 * pipeline-runner --runner.heartbeat--> [compute.heartbeat (fanout)] --> one exclusive queue per market-intel replica
 * compute.starts / compute.steps / market-intel.job-events / market-intel.job-starts --dead letter--> [compute.dlx (fanout)] --> compute.dead-letter (kept for operators)
 *                                                                           \--> market-intel.dead-letters (fails the job)
 * ```
 */
export const COMPUTE_TOPOLOGY = {
  exchanges: {
    steps: 'compute',
    events: 'compute.events',
    heartbeat: 'compute.heartbeat',
    deadLetter: 'compute.dlx',
  },
  queues: {
    starts: 'compute.starts',
    steps: 'compute.steps',
    jobEvents: 'market-intel.job-events',
    jobStarts: 'market-intel.job-starts',
    deadLetter: 'compute.dead-letter',
    deadLetterEvents: 'market-intel.dead-letters',
  },
} as const;

/** Deliveries of one message before RabbitMQ dead-letters it (quorum queue `x-delivery-limit`). */
export const COMPUTE_DELIVERY_LIMIT = 5;

/**
 * Deliveries of one job event before it is dead-lettered: higher than for steps because market-intel
 * retries an event while its database is away (with backoff) and an event is never worth losing.
 */
export const EVENT_DELIVERY_LIMIT = 20;

/**
 * Routing key of a step command: `start.<kind>` for step 0, `step.<kind>` after. First steps have
 * their own queue so that a new job starts at once instead of waiting behind the steps of every job
 * already running (a paid job should leave `pending` within seconds).
 */
export function stepRoutingKey(kind: PipelineKind, stepIndex: number): string {
  return stepIndex === 0 ? `start.${kind}` : `step.${kind}`;
}

/**
 * Declares the whole compute topology on `channel` (idempotent). Both services call it on every
 * connection so that either can start first.
 */
export async function declareComputeTopology(channel: Channel): Promise<void> {
  const { exchanges, queues } = COMPUTE_TOPOLOGY;
  await channel.assertExchange(exchanges.steps, 'topic', { durable: true });
  await channel.assertExchange(exchanges.events, 'topic', { durable: true });
  await channel.assertExchange(exchanges.heartbeat, 'fanout', { durable: true });
  await channel.assertExchange(exchanges.deadLetter, 'fanout', { durable: true });
  const workQueue = (deliveryLimit: number): Options.AssertQueue => ({
    durable: true,
    deadLetterExchange: exchanges.deadLetter,
    arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': deliveryLimit },
  });
  await channel.assertQueue(queues.starts, workQueue(COMPUTE_DELIVERY_LIMIT));
  await channel.bindQueue(queues.starts, exchanges.steps, 'start.*');
  await channel.assertQueue(queues.steps, workQueue(COMPUTE_DELIVERY_LIMIT));
  await channel.bindQueue(queues.steps, exchanges.steps, 'step.*');
  await channel.assertQueue(queues.jobEvents, workQueue(EVENT_DELIVERY_LIMIT));
  // Starts have their own queue so that "running" is not delayed behind step outcomes; the catch-all
  // binding of earlier versions is removed (unbinding a missing binding is a no-op).
  await channel.unbindQueue(queues.jobEvents, exchanges.events, 'job.#');
  await channel.bindQueue(queues.jobEvents, exchanges.events, 'job.step-completed');
  await channel.bindQueue(queues.jobEvents, exchanges.events, 'job.step-failed');
  await channel.assertQueue(queues.jobStarts, workQueue(EVENT_DELIVERY_LIMIT));
  await channel.bindQueue(queues.jobStarts, exchanges.events, 'job.step-started');
  await channel.assertQueue(queues.deadLetter, {
    durable: true,
    arguments: { 'x-queue-type': 'classic', 'x-max-length': 100_000 },
  });
  await channel.bindQueue(queues.deadLetter, exchanges.deadLetter, '');
  await channel.assertQueue(queues.deadLetterEvents, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum' },
  });
  await channel.bindQueue(queues.deadLetterEvents, exchanges.deadLetter, '');
}
