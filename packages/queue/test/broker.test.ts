import { randomUUID } from 'node:crypto';
import type { Channel } from 'amqplib';
import { Broker, PublishError, type Delivery } from '../src';
import { runScoped } from '@repo/service-kit/testing';
import { closeVhostConnections, deleteVhost, queueDepth, resetVhost, waitFor } from '../src/testing';

const VHOST = runScoped('queue_broker_test');
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Deliveries of one message before RabbitMQ dead-letters it. */
const DELIVERY_LIMIT = 5;
const exchanges = { work: 'test.work', deadLetter: 'test.dlx' };
const queues = { work: 'test.work', deadLetter: 'test.dead-letter', deadLetterEvents: 'test.dead-letters' };

/**
 * The shape of topology the broker is used with: a topic exchange, a quorum work queue with a
 * delivery limit, and a dead-letter exchange feeding a classic and a quorum queue.
 */
async function declareTestTopology(channel: Channel): Promise<void> {
  await channel.assertExchange(exchanges.work, 'topic', { durable: true });
  await channel.assertExchange(exchanges.deadLetter, 'fanout', { durable: true });
  await channel.assertQueue(queues.work, {
    durable: true,
    deadLetterExchange: exchanges.deadLetter,
    arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': DELIVERY_LIMIT },
  });
  await channel.bindQueue(queues.work, exchanges.work, 'step.*');
  await channel.assertQueue(queues.deadLetter, { durable: true, arguments: { 'x-queue-type': 'classic' } });
  await channel.bindQueue(queues.deadLetter, exchanges.deadLetter, '');
  await channel.assertQueue(queues.deadLetterEvents, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum' },
  });
  await channel.bindQueue(queues.deadLetterEvents, exchanges.deadLetter, '');
}

interface Step {
  v: 1;
  jobId: string;
  stepIndex: number;
  input: unknown;
  state: unknown;
}

function step(jobId: string, stepIndex = 0): Step {
  return { v: 1, jobId, stepIndex, input: { idea: 'x' }, state: null };
}

describe('Broker', () => {
  let url: string;
  const brokers: Broker[] = [];
  const open = async (name: string): Promise<Broker> => {
    const broker = await Broker.connect({
      url,
      connectionName: name,
      logger: silent,
      topology: declareTestTopology,
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
      .publish(exchanges.work, 'nowhere.at-all', step(randomUUID()))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ unroutable: true });
    await expect(
      broker.publish(exchanges.work, 'nowhere.at-all', step(randomUUID()), { mandatory: false }),
    ).resolves.toBeUndefined();
    // A routed message right after is confirmed as usual: the return was matched to its own publish.
    const jobId = randomUUID();
    const seen: string[] = [];
    await broker.consume(queues.work, async (d) => (seen.push((d.body as Step).jobId), 'ack'), {
      prefetch: 4,
    });
    await expect(broker.publish(exchanges.work, 'step.test', step(jobId))).resolves.toBeUndefined();
    await waitFor('the routed step consumed', () => seen.includes(jobId));
  });

  test('When a step is published with a confirm, then a consumer receives it once as persistent JSON with its message id', async () => {
    const broker = await open('publish-consume');
    const seen: Delivery[] = [];
    await broker.consume(queues.work, async (d) => (seen.push(d), 'ack'), { prefetch: 4 });
    const jobId = randomUUID();
    await broker.publish(exchanges.work, 'step.test', step(jobId), {
      messageId: `${jobId}:0`,
      type: 'step',
    });
    await waitFor('delivery', () => seen.length === 1);
    expect(seen[0]?.body).toEqual(step(jobId));
    expect(seen[0]).toMatchObject({
      messageId: `${jobId}:0`,
      type: 'step',
      routingKey: 'step.test',
      deliveryCount: 0,
      redelivered: false,
    });
  });

  test('When a handler keeps requeueing, then after the delivery limit the message is dead-lettered to both dead-letter queues', async () => {
    const broker = await open('poison');
    const attempts: number[] = [];
    const dead: Delivery[] = [];
    await broker.consume(queues.work, async (d) => (attempts.push(d.deliveryCount), 'requeue'), {
      prefetch: 1,
    });
    await broker.consume(queues.deadLetterEvents, async (d) => (dead.push(d), 'ack'), { prefetch: 10 });
    const jobId = randomUUID();
    await broker.publish(exchanges.work, 'step.test', step(jobId));
    await waitFor('dead-lettering', () => dead.length === 1);
    expect(attempts.length).toBe(DELIVERY_LIMIT + 1);
    expect(attempts[0]).toBe(0);
    expect((dead[0]?.body as Step).jobId).toBe(jobId);
    expect(dead[0]?.headers['x-death']).toBeDefined();
    expect(
      await waitFor('operator copy', async () => (await queueDepth(VHOST, queues.deadLetter)) >= 1),
    ).toBe(true);
  });

  test('When a handler rejects a message, then it goes to the dead-letter queues at once', async () => {
    const broker = await open('reject');
    const dead: Delivery[] = [];
    let calls = 0;
    await broker.consume(queues.work, async () => (calls++, 'reject'), { prefetch: 1 });
    await broker.consume(queues.deadLetterEvents, async (d) => (dead.push(d), 'ack'), { prefetch: 10 });
    await broker.publish(exchanges.work, 'step.test', { not: 'a step' });
    await waitFor('dead-lettering', () => dead.length === 1);
    expect(calls).toBe(1);
  });

  test('When the connection is closed by the broker, then the client reconnects, consumes again and publishes again', async () => {
    const broker = await open('reconnect');
    const seen: string[] = [];
    await broker.consume(queues.work, async (d) => (seen.push((d.body as Step).jobId), 'ack'), {
      prefetch: 4,
    });
    let disconnects = 0;
    broker.on('disconnect', () => disconnects++);
    await closeVhostConnections(VHOST);
    await waitFor('disconnect', () => disconnects >= 1);
    const jobId = randomUUID();
    await broker.publish(exchanges.work, 'step.test', step(jobId)); // waits for the reconnection
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
      queues.work,
      async () => {
        started = true;
        await gate;
        finished = true;
        return 'ack';
      },
      { prefetch: 1 },
    );
    await broker.publish(exchanges.work, 'step.test', step(randomUUID()));
    await waitFor('handler start', () => started);
    const closing = broker.close(5000);
    release();
    await closing;
    expect(finished).toBe(true);
    expect(await queueDepth(VHOST, queues.work)).toBe(0);
  });
});
