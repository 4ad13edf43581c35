import { randomUUID } from 'node:crypto';
import { Broker, type Delivery } from '@repo/queue';
import { deleteVhost, queueDepth, resetVhost, waitFor } from '@repo/queue/testing';
import { runScoped } from '@repo/service-kit/testing';
import {
  COMPUTE_DELIVERY_LIMIT,
  COMPUTE_TOPOLOGY,
  declareComputeTopology,
  stepRoutingKey,
  type JobEvent,
  type StepCommand,
} from '../src';

// The compute topology on a real RabbitMQ, declared as both services declare it.
const VHOST = runScoped('compute_topology_test');
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const { exchanges, queues } = COMPUTE_TOPOLOGY;

function command(jobId: string, stepIndex: number): StepCommand {
  return { v: 1, jobId, kind: 'prove', stepIndex, input: { idea: 'x' }, state: null };
}

let url: string;
const brokers: Broker[] = [];
async function open(name: string): Promise<Broker> {
  const broker = await Broker.connect({
    url,
    connectionName: name,
    logger: silent,
    topology: declareComputeTopology,
    reconnectInitialDelayMs: 50,
    reconnectMaxDelayMs: 500,
  });
  brokers.push(broker);
  await broker.waitForConnection();
  return broker;
}

/** Collects what `queue` receives, acking everything. */
async function collect(broker: Broker, queue: string): Promise<Delivery[]> {
  const seen: Delivery[] = [];
  await broker.consume(queue, async (d) => (seen.push(d), 'ack'), { prefetch: 10 });
  return seen;
}

beforeAll(async () => {
  url = await resetVhost(VHOST);
}, 60_000);
afterEach(async () => {
  await Promise.all(brokers.splice(0).map((b) => b.close(1000)));
});
afterAll(async () => {
  await deleteVhost(VHOST);
}, 30_000);

test('When both services declare the topology on their connections, then the second declaration changes nothing', async () => {
  const first = await open('market-intel');
  const second = await open('pipeline-runner');
  expect(first.isConnected() && second.isConnected()).toBe(true);
});

test('When step commands are published, then step 0 reaches the starts queue and later steps the steps queue', async () => {
  const broker = await open('routing-steps');
  const starts = await collect(broker, queues.starts);
  const steps = await collect(broker, queues.steps);
  const jobId = randomUUID();
  expect(stepRoutingKey('prove', 0)).toBe('start.prove');
  expect(stepRoutingKey('prove', 3)).toBe('step.prove');
  await broker.publish(exchanges.steps, stepRoutingKey('prove', 0), command(jobId, 0));
  await broker.publish(exchanges.steps, stepRoutingKey('prove', 3), command(jobId, 3));
  await waitFor('both commands', () => starts.length === 1 && steps.length === 1);
  expect((starts[0]?.body as StepCommand).stepIndex).toBe(0);
  expect((steps[0]?.body as StepCommand).stepIndex).toBe(3);
});

test('When a runner publishes job events, then starts reach the job-starts queue and outcomes and failures the job-events queue', async () => {
  const broker = await open('routing-events');
  const starts = await collect(broker, queues.jobStarts);
  const events = await collect(broker, queues.jobEvents);
  const base = { jobId: randomUUID(), stepIndex: 0, runnerId: 'test-runner', at: new Date().toISOString() };
  const published: JobEvent[] = [
    { type: 'job.step-started', ...base },
    {
      type: 'job.step-completed',
      ...base,
      outcome: { kind: 'continue', state: {}, progressPct: 10, label: 'round 1' },
    },
    { type: 'job.step-failed', ...base, attempt: 1, retryable: true, error: 'timeout' },
  ];
  for (const event of published) await broker.publish(exchanges.events, event.type, event);
  await waitFor('every event', () => starts.length === 1 && events.length === 2);
  expect(starts.map((d) => d.routingKey)).toEqual(['job.step-started']);
  expect(events.map((d) => d.routingKey).sort()).toEqual(['job.step-completed', 'job.step-failed']);
});

test('When a step command keeps being requeued, then after the delivery limit it is dead-lettered to the operators queue and to market-intel', async () => {
  const broker = await open('poison');
  const attempts: number[] = [];
  await broker.consume(queues.steps, async (d) => (attempts.push(d.deliveryCount), 'requeue'), {
    prefetch: 1,
  });
  const dead = await collect(broker, queues.deadLetterEvents);
  const jobId = randomUUID();
  await broker.publish(exchanges.steps, stepRoutingKey('forge', 1), command(jobId, 1));
  await waitFor('dead-lettering', () => dead.length === 1);
  expect(attempts.length).toBe(COMPUTE_DELIVERY_LIMIT + 1);
  expect((dead[0]?.body as StepCommand).jobId).toBe(jobId);
  expect(dead[0]?.headers['x-death']).toBeDefined();
  expect(await waitFor('operator copy', async () => (await queueDepth(VHOST, queues.deadLetter)) >= 1)).toBe(
    true,
  );
});
