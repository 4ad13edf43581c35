import { randomUUID } from 'node:crypto';
import {
  Broker,
  COMPUTE_DELIVERY_LIMIT,
  COMPUTE_TOPOLOGY,
  declareComputeTopology,
  PublishError,
  StepCommand,
  type Delivery,
} from '../src';
import { runScoped } from '@repo/service-kit/testing';
import { closeVhostConnections, deleteVhost, queueDepth, resetVhost, waitFor } from '../src/testing';

const VHOST = runScoped('queue_broker_test');
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const { exchanges, queues } = COMPUTE_TOPOLOGY;

function step(jobId: string, stepIndex = 0): StepCommand {
  return { v: 1, jobId, kind: 'prove', stepIndex, input: { idea: 'x' }, state: null };
}

describe('Broker', () => {
  let url: string;
  const brokers: Broker[] = [];
  const open = async (name: string): Promise<Broker> => {
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
  };

  beforeAll(async () => {
    url = await resetVhost(VHOST);
  }, 60_000);
  afterEach(async () => {
    await Promise.all(brokers.splice(0).map((b) => b.close(1000)));
  });
  afterAll(async () => {
    await deleteVhost(VHOST);
  }, 30_000);

  test('When a message is published to a routing key no queue is bound to, then publish throws unroutable; unless mandatory is off', async () => {
    const broker = await open('unroutable');
    const error = await broker
      .publish(exchanges.steps, 'nowhere.at-all', step(randomUUID()))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ unroutable: true });
    await expect(
      broker.publish(exchanges.steps, 'nowhere.at-all', step(randomUUID()), { mandatory: false }),
    ).resolves.toBeUndefined();
    // A routed message right after is confirmed as usual: the return was matched to its own publish.
    const jobId = randomUUID();
    const seen: string[] = [];
    await broker.consume(queues.steps, async (d) => (seen.push((d.body as StepCommand).jobId), 'ack'), {
      prefetch: 4,
    });
    await expect(broker.publish(exchanges.steps, 'step.prove', step(jobId))).resolves.toBeUndefined();
    await waitFor('the routed step consumed', () => seen.includes(jobId));
  });

  test('When a step is published with a confirm, then a consumer receives it once as persistent JSON with its message id', async () => {
    const broker = await open('publish-consume');
    const seen: Delivery[] = [];
    await broker.consume(queues.steps, async (d) => (seen.push(d), 'ack'), { prefetch: 4 });
    const jobId = randomUUID();
    await broker.publish(exchanges.steps, 'step.prove', step(jobId), {
      messageId: `${jobId}:0`,
      type: 'step',
    });
    await waitFor('delivery', () => seen.length === 1);
    expect(StepCommand.parse(seen[0]?.body)).toEqual(step(jobId));
    expect(seen[0]).toMatchObject({
      messageId: `${jobId}:0`,
      type: 'step',
      routingKey: 'step.prove',
      deliveryCount: 0,
      redelivered: false,
    });
  });

  test('When a handler keeps requeueing, then after the delivery limit the message is dead-lettered to both dead-letter queues', async () => {
    const broker = await open('poison');
    const attempts: number[] = [];
    const dead: Delivery[] = [];
    await broker.consume(queues.steps, async (d) => (attempts.push(d.deliveryCount), 'requeue'), {
      prefetch: 1,
    });
    await broker.consume(queues.deadLetterEvents, async (d) => (dead.push(d), 'ack'), { prefetch: 10 });
    const jobId = randomUUID();
    await broker.publish(exchanges.steps, 'step.forge', step(jobId));
    await waitFor('dead-lettering', () => dead.length === 1);
    expect(attempts.length).toBe(COMPUTE_DELIVERY_LIMIT + 1);
    expect(attempts[0]).toBe(0);
    expect((dead[0]?.body as StepCommand).jobId).toBe(jobId);
    expect(dead[0]?.headers['x-death']).toBeDefined();
    expect(
      await waitFor('operator copy', async () => (await queueDepth(VHOST, queues.deadLetter)) >= 1),
    ).toBe(true);
  });

  test('When a handler rejects a message, then it goes to the dead-letter queues at once', async () => {
    const broker = await open('reject');
    const dead: Delivery[] = [];
    let calls = 0;
    await broker.consume(queues.steps, async () => (calls++, 'reject'), { prefetch: 1 });
    await broker.consume(queues.deadLetterEvents, async (d) => (dead.push(d), 'ack'), { prefetch: 10 });
    await broker.publish(exchanges.steps, 'step.forge', { not: 'a step' });
    await waitFor('dead-lettering', () => dead.length === 1);
    expect(calls).toBe(1);
  });

  test('When the connection is closed by the broker, then the client reconnects, consumes again and publishes again', async () => {
    const broker = await open('reconnect');
    const seen: string[] = [];
    await broker.consume(queues.steps, async (d) => (seen.push((d.body as StepCommand).jobId), 'ack'), {
      prefetch: 4,
    });
    let disconnects = 0;
    broker.on('disconnect', () => disconnects++);
    await closeVhostConnections(VHOST);
    await waitFor('disconnect', () => disconnects >= 1);
    const jobId = randomUUID();
    await broker.publish(exchanges.steps, 'step.prove', step(jobId)); // waits for the reconnection
    await waitFor('delivery after reconnect', () => seen.includes(jobId));
    expect(broker.isConnected()).toBe(true);
  });

  test('When the broker is closed, then handlers in progress finish and settle before the connection closes', async () => {
    const broker = await open('drain');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = false;
    let finished = false;
    await broker.consume(
      queues.steps,
      async () => {
        started = true;
        await gate;
        finished = true;
        return 'ack';
      },
      { prefetch: 1 },
    );
    await broker.publish(exchanges.steps, 'step.prove', step(randomUUID()));
    await waitFor('handler start', () => started);
    const closing = broker.close(5000);
    release();
    await closing;
    expect(finished).toBe(true);
    expect(await queueDepth(VHOST, queues.steps)).toBe(0);
  });
});
