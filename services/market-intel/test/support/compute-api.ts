import { COMPUTE_TOPOLOGY, type RunnerHeartbeat, type UpstreamHealth } from '@repo/compute';
import { Broker, type Delivery } from '@repo/queue';
import { waitFor } from '@repo/queue/testing';
import { buildReport, startHarness, startReplica, type Harness } from './harness';

// The Compute API's edge as an agent sees it, with the test playing the runner over the real
// RabbitMQ protocol (heartbeats in, step commands out). The full pipelines run in compute-e2e.test.ts.

/** An upstream that works, as a runner reports it. */
export const HEALTHY: UpstreamHealth = { ok: true, latency_ms: 12, error: null, errorClass: null };

/** A prove idea that passes validation. */
export const IDEA =
  'A reconciliation copilot for mid-size fintechs that matches instant payments to invoices.';

/** The body of a JSON answer. */
export async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

/** A suite's market-intel and the test runner in front of it (see {@link useComputeApi}). */
export interface ComputeApi {
  /** The service under test (available from the suite's first test on). */
  readonly h: Harness;
  /** The test's own RabbitMQ connection, playing the runner. */
  readonly runner: Broker;
  /** Every step command the test runner received, oldest first (clear it with `steps.length = 0`). */
  readonly steps: Delivery[];
  /** Publishes a runner heartbeat with these upstream healths (no search provider by default). */
  beat(llm: UpstreamHealth, search?: UpstreamHealth | null, runnerId?: string): Promise<void>;
  /** Reports the runner healthy (no search provider) and waits until health says so. */
  beatHealthy(): Promise<void>;
  /** The status GET /api/v1/health answers now. */
  healthStatus(): Promise<number>;
  /** GET /api/v1/health now. */
  healthNow(): Promise<{ status: number; body: Record<string, unknown> }>;
  /** The first health answer whose body satisfies `ready` (a heartbeat is applied asynchronously). */
  healthWhen(
    what: string,
    ready: (body: Record<string, unknown>) => boolean,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /** POSTs `body` (JSON, or a string sent as is) to `path` without payment. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Number of jobs stored, whatever their status. */
  jobRows(): Promise<number>;
  /**
   * Runs `fn` against a market-intel replica started now on the same database and vhost (so it has
   * heard no heartbeat yet), then stops it.
   */
  withFreshReplica(fn: (baseUrl: string) => Promise<void>): Promise<void>;
}

/**
 * Sets up a Compute API suite (jest `beforeAll` / `afterAll` of the calling file): market-intel on a
 * database and vhost of its own named `dbName`, with a webhook secret, runners stale after 60 s, two
 * devnet compute jobs per payer and day, a job watchdog the tests tick themselves, and the sample
 * report imported; and a test runner consuming both step queues.
 * @param dbName the database and vhost name (must contain "test"; scoped to this jest run)
 */
export function useComputeApi(dbName: string): ComputeApi {
  let harness: Harness | undefined;
  let broker: Broker | undefined;
  const steps: Delivery[] = [];
  const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

  beforeAll(async () => {
    harness = await startHarness(dbName, {
      env: {
        WEBHOOK_SECRET: 'test-webhook-secret-0123456789',
        RUNNER_STALE_AFTER_MS: '60000',
        X402_DEVNET_COMPUTE_PER_DAY: '2',
        // The tests tick the job watchdog themselves.
        JOB_WATCHDOG_TICK_MS: '3600000',
      },
    });
    await harness.reports.importReport(buildReport(), 'import');
    broker = await Broker.connect({ url: harness.amqpUrl, connectionName: 'test runner', logger: silent });
    await broker.waitForConnection();
    for (const queue of [COMPUTE_TOPOLOGY.queues.starts, COMPUTE_TOPOLOGY.queues.steps]) {
      await broker.consume(queue, async (d) => (steps.push(d), 'ack'), { prefetch: 50 });
    }
  }, 120_000);
  afterAll(async () => {
    await broker?.close(1000);
    await harness?.close();
  });

  const h = (): Harness => {
    if (!harness) throw new Error(`the compute API suite ${dbName} has not started`);
    return harness;
  };
  const runner = (): Broker => {
    if (!broker) throw new Error(`the compute API suite ${dbName} has not started`);
    return broker;
  };

  async function beat(llm: UpstreamHealth, search: UpstreamHealth | null = null, runnerId = 'test-runner') {
    const heartbeat: RunnerHeartbeat = {
      v: 1,
      runnerId,
      at: new Date().toISOString(),
      intervalMs: 5000,
      llm,
      search,
      inFlightSteps: 0,
    };
    await runner().publish(COMPUTE_TOPOLOGY.exchanges.heartbeat, '', heartbeat, { persistent: false });
  }

  async function healthNow(): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${h().baseUrl}/api/v1/health`);
    return { status: res.status, body: await json(res) };
  }

  return {
    get h() {
      return h();
    },
    get runner() {
      return runner();
    },
    steps,
    beat,
    async beatHealthy() {
      await beat(HEALTHY, null);
      await waitFor('healthy', async () => {
        const { status, body } = await healthNow();
        return status === 200 && body.search === null;
      });
    },
    async healthStatus() {
      return (await fetch(`${h().baseUrl}/api/v1/health`)).status;
    },
    healthNow,
    healthWhen(what, ready) {
      return waitFor(what, async () => {
        const answer = await healthNow();
        return ready(answer.body) ? answer : undefined;
      });
    },
    post(path, body, headers = {}) {
      return fetch(h().baseUrl + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    async jobRows() {
      const counts = await h().service.jobs.countByStatus();
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },
    async withFreshReplica(fn) {
      const replica = await startReplica({ ...h().config, INSTANCE_ID: `test-replica-${process.pid}` });
      try {
        await fn(replica.baseUrl);
      } finally {
        await replica.close();
      }
    },
  };
}
