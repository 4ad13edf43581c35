import type { Counter, Gauge, Histogram } from 'prom-client';
import { createMetrics, SCRAPE_CACHE_MS, type QueueDepthSource } from '../src/index';

/** `true` when `A` and `B` are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only when its type argument is `true`. */
function assertType<T extends true>(): T | undefined {
  return undefined;
}

/** A broker whose queues hold `depths` ready messages, counting the channels asked for; `connected` switches it. */
function brokerWith(depths: Record<string, number>) {
  const calls = { channels: 0, connected: true };
  const broker: QueueDepthSource = {
    isConnected: () => calls.connected,
    async withChannel(fn) {
      calls.channels += 1;
      return fn({
        checkQueue: async (queue) => {
          const messageCount = depths[queue];
          if (messageCount === undefined) throw new Error(`no queue ${queue}`);
          return { messageCount };
        },
      });
    },
  };
  return { broker, calls };
}

describe("createMetrics: the service's own series and queue depths", () => {
  it('When a table is declared, then each series is registered with its type, help, labels and buckets, typed by its labels', async () => {
    const metrics = createMetrics('tabled', {
      jobs_total: { type: 'counter', help: 'Jobs, by kind and outcome', labels: ['kind', 'outcome'] },
      queue_lag_seconds: { type: 'histogram', help: 'Lag, in seconds', buckets: [0.5, 2] },
      workers: { type: 'gauge', help: 'Workers up', labels: ['pool'] },
    });
    const { series } = metrics;
    assertType<Equal<typeof series.jobs_total, Counter<'kind' | 'outcome'>>>();
    assertType<Equal<typeof series.queue_lag_seconds, Histogram<never>>>();
    assertType<Equal<typeof series.workers, Gauge<'pool'>>>();
    series.jobs_total.inc({ kind: 'scan', outcome: 'ok' });
    series.queue_lag_seconds.observe(1);
    series.workers.set({ pool: 'a' }, 3);
    const text = await metrics.registry.metrics();
    expect(text).toContain('# HELP jobs_total Jobs, by kind and outcome\n# TYPE jobs_total counter\n');
    expect(text).toContain('jobs_total{kind="scan",outcome="ok",service="tabled"} 1');
    expect(text).toContain('# TYPE queue_lag_seconds histogram');
    expect(text).toContain('queue_lag_seconds_bucket{le="0.5",service="tabled"} 0');
    expect(text).toContain('queue_lag_seconds_bucket{le="2",service="tabled"} 1');
    expect(text).toContain('workers{pool="a",service="tabled"} 3');
    expect(() =>
      createMetrics('clash', { mcp_tool_calls_total: { type: 'counter', help: 'a shared name' } }),
    ).toThrow(/already been registered/);
  });

  it('When queue depths are observed, then rabbitmq_queue_messages shows each queue, one read serves the scrapes of a second, and a disconnected broker keeps the last values', async () => {
    const metrics = createMetrics('queues');
    const depths = { 'work.steps': 4, 'work.dead-letter': 1 };
    const { broker, calls } = brokerWith(depths);
    metrics.observeQueueDepths(broker, ['work.steps', 'work.dead-letter'], 'Ready messages (queue depth)');
    const first = await metrics.registry.metrics();
    expect(first).toContain('# HELP rabbitmq_queue_messages Ready messages (queue depth)\n');
    expect(first).toContain('rabbitmq_queue_messages{queue="work.steps",service="queues"} 4');
    expect(first).toContain('rabbitmq_queue_messages{queue="work.dead-letter",service="queues"} 1');
    depths['work.steps'] = 9;
    expect(await metrics.registry.metrics()).toContain(
      'rabbitmq_queue_messages{queue="work.steps",service="queues"} 4',
    );
    expect(calls.channels).toBe(1);

    calls.connected = false;
    // The clock moves past the reuse window (SCRAPE_CACHE_MS) instead of the test waiting for it.
    jest.useFakeTimers({
      now: Date.now() + SCRAPE_CACHE_MS + 100,
      doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'],
    });
    try {
      expect(await metrics.registry.metrics()).toContain(
        'rabbitmq_queue_messages{queue="work.steps",service="queues"} 4',
      );
      expect(calls.channels).toBe(1);
      calls.connected = true;
      expect(await metrics.registry.metrics()).toContain(
        'rabbitmq_queue_messages{queue="work.steps",service="queues"} 9',
      );
      expect(calls.channels).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
