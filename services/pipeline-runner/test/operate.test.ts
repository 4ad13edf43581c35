import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startScriptedLlm, type ScriptedLlm } from '@repo/llm/testing';
import { Broker } from '@repo/queue';
import {
  COMPUTE_TOPOLOGY,
  declareComputeTopology,
  JobEvent,
  stepRoutingKey,
  type StepCommand,
} from '@repo/compute';
import { resetVhost } from '@repo/queue/testing';
import {
  metricValue,
  runScoped,
  readyStatus,
  scrape,
  spawnService,
  TcpProxy,
  waitFor,
  type ServiceProcess,
} from '@repo/service-kit/testing';
import { forgeJobInput, scriptedPipelineResponder } from '@repo/compute/testing';

// Real runner processes (src/main.ts) against a suite vhost, RabbitMQ through a cuttable proxy, a scripted LLM.
jest.setTimeout(120_000);

const VHOST = runScoped('pipeline_runner_operate_test');
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
let amqpUrl: string;
let amqp: { proxy: TcpProxy; url: string };
let llm: ScriptedLlm;
/** LLM requests received so far; while `hold` is set, answers wait for it (a step kept in flight at will). */
let arrived = 0;
let hold: { promise: Promise<void>; release: () => void } | null = null;
function holdAnswers(): void {
  let release = (): void => undefined;
  const promise = new Promise<void>((resolve) => (release = resolve));
  hold = { promise, release };
}
function releaseAnswers(): void {
  hold?.release();
  hold = null;
}
let broker: Broker;
const runners: ServiceProcess[] = [];

function spawnRunner(env: Record<string, string> = {}): Promise<ServiceProcess> {
  return spawnService({
    cwd: path.join(__dirname, '..'),
    env: {
      AMQP_URL: amqp.url,
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: 'scripted-model',
      LLM_TIMEOUT_MS: '30000',
      SEARCH_PROVIDER: 'none',
      HEARTBEAT_INTERVAL_MS: '500',
      STEP_RETRY_BASE_MS: '100',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      ...env,
    },
  }).then((r) => {
    runners.push(r);
    return r;
  });
}

/** Publishes step 0 of a new forge job; returns the job id. */
async function startJob(): Promise<string> {
  const jobId = `job_${randomBytes(12).toString('hex')}`;
  const command: StepCommand = {
    v: 1,
    jobId,
    kind: 'forge',
    stepIndex: 0,
    input: forgeJobInput(),
    state: null,
  };
  await broker.publish(COMPUTE_TOPOLOGY.exchanges.steps, stepRoutingKey('forge', 0), command, {
    messageId: `${jobId}:0`,
    type: 'step',
  });
  return jobId;
}

/** Every job event queued for market-intel so far (taken off the queue into `seen`). */
const seen: JobEvent[] = [];
async function drainEvents(): Promise<JobEvent[]> {
  await broker.withChannel(async (channel) => {
    for (;;) {
      const message = await channel.get(COMPUTE_TOPOLOGY.queues.jobEvents, { noAck: true });
      if (!message) break;
      const parsed = JobEvent.safeParse(JSON.parse(message.content.toString('utf8')));
      if (parsed.success) seen.push(parsed.data);
    }
  });
  return seen;
}
const completed = async (jobId: string) =>
  (await drainEvents()).filter(
    (e) => e.jobId === jobId && e.type === 'job.step-completed' && e.stepIndex === 0,
  );

/** Ready and unacknowledged messages of a queue. */
async function depth(queue: string): Promise<number> {
  return broker.withChannel(async (channel) => (await channel.checkQueue(queue)).messageCount);
}

/** Holds the LLM's answers, starts a job, waits until its step asks the LLM, then sends SIGTERM. */
async function sigtermWithStepHeld(runner: ServiceProcess): Promise<{ jobId: string; signalAt: number }> {
  const before = arrived;
  holdAnswers();
  const jobId = await startJob();
  await waitFor('the step waiting for the LLM', () => arrived > before || undefined, 10_000);
  const signalAt = Date.now();
  runner.kill('SIGTERM');
  return { jobId, signalAt };
}

/** Expects `runner` to exit 0 (printing its last output otherwise); returns milliseconds since `signalAt`. */
async function expectCleanExit(runner: ServiceProcess, signalAt: number): Promise<number> {
  const exit = await runner.exited;
  const exitedAfterMs = Date.now() - signalAt;
  if (exit.code !== 0) console.error(runner.output().split('\n').slice(-30).join('\n'));
  expect(exit).toEqual({ code: 0, signal: null });
  return exitedAfterMs;
}

beforeAll(async () => {
  amqpUrl = await resetVhost(VHOST);
  amqp = await TcpProxy.forUrl(amqpUrl, 5672);
  const script = scriptedPipelineResponder('forge');
  llm = await startScriptedLlm({
    respond: async (request) => {
      arrived++;
      if (hold) await hold.promise;
      return script(request);
    },
  });
  broker = await Broker.connect({
    url: amqpUrl,
    connectionName: 'operate-test',
    logger: quiet,
    topology: declareComputeTopology,
  });
  await broker.waitForConnection(30_000);
});
afterAll(async () => {
  for (const r of runners) await r.stop();
  await broker?.close(1000);
  await amqp?.proxy.close();
  releaseAnswers();
  await llm?.close();
});

describe('a runner with RabbitMQ through a proxy', () => {
  let runner: ServiceProcess;
  beforeAll(async () => {
    runner = await spawnRunner({ SHUTDOWN_TIMEOUT_MS: '20000' });
    await waitFor('ready', async () => (await readyStatus(runner.baseUrl)) === 200, 30_000);
  });
  // Gone before other describes run: it would consume their commands.
  afterAll(() => runner.stop());

  it('When a step runs, then /metrics counts it by outcome and shows queue depths and steps in flight', async () => {
    const before = await scrape(runner.baseUrl);
    const count = (t: string, name: string, labels: Record<string, string>) =>
      metricValue(t, name, labels) ?? 0;
    const stepsBefore = count(before, 'runner_steps_total', { kind: 'forge', outcome: 'completed' });
    const jobId = await startJob();
    await waitFor('step 0 completed', async () => (await completed(jobId)).length === 1 || undefined, 30_000);
    const text = await waitFor('the step counted', async () => {
      const t = await scrape(runner.baseUrl);
      return count(t, 'runner_steps_total', { kind: 'forge', outcome: 'completed' }) === stepsBefore + 1
        ? t
        : undefined;
    });
    expect(count(text, 'runner_step_duration_seconds_count', { kind: 'forge' })).toBe(
      count(before, 'runner_step_duration_seconds_count', { kind: 'forge' }) + 1,
    );
    expect(metricValue(text, 'runner_steps_in_flight')).toBe(0);
    expect(metricValue(text, 'rabbitmq_queue_messages', { queue: COMPUTE_TOPOLOGY.queues.starts })).toBe(0);
    expect(metricValue(text, 'rabbitmq_queue_messages', { queue: COMPUTE_TOPOLOGY.queues.deadLetter })).toBe(
      0,
    );
    expect(
      metricValue(text, 'http_request_duration_seconds_count', { route: '/livez', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('When RabbitMQ becomes unreachable, then /readyz answers 503; when it returns, 200 and steps are consumed again', async () => {
    await amqp.proxy.cut();
    await waitFor('503 without RabbitMQ', async () => (await readyStatus(runner.baseUrl)) === 503, 10_000);
    expect((await fetch(`${runner.baseUrl}/livez`)).status).toBe(200);
    const jobId = await startJob(); // waits in the queue meanwhile
    await amqp.proxy.restore();
    await waitFor('200 with RabbitMQ back', async () => (await readyStatus(runner.baseUrl)) === 200, 20_000);
    await waitFor(
      'the queued step consumed after reconnecting',
      async () => (await completed(jobId)).length === 1 || undefined,
      30_000,
    );
  });
});

describe('a runner stopped while a step runs', () => {
  it('When SIGTERM arrives while a step is running, then the step finishes during the drain, its outcome is published and acked, and the process exits 0', async () => {
    // A runner of its own, so the other tests keep theirs whatever the order.
    const runner = await spawnRunner({ SHUTDOWN_TIMEOUT_MS: '20000' });
    await waitFor('ready', async () => (await readyStatus(runner.baseUrl)) === 200, 30_000);
    const { jobId, signalAt } = await sigtermWithStepHeld(runner);
    // The step finishes only once shutdown is under way (readiness already false).
    await waitFor('not ready', async () => (await readyStatus(runner.baseUrl)) !== 200, 5000);
    releaseAnswers();
    const exitedAfterMs = await expectCleanExit(runner, signalAt);
    expect(exitedAfterMs).toBeLessThan(20_000);
    expect(await completed(jobId)).toHaveLength(1);
    expect(await depth(COMPUTE_TOPOLOGY.queues.starts)).toBe(0); // acked, not back in the queue
    console.info(
      `runner shutdown with a step in flight: finished and published, exit after ${exitedAfterMs} ms`,
    );
  });
});

describe('a runner whose drain budget is shorter than the step', () => {
  it('When SIGTERM arrives and the step cannot finish in time, then the command returns to the queue and a second runner completes it', async () => {
    const runner = await spawnRunner({ SHUTDOWN_TIMEOUT_MS: '3000' }); // drains for 1 s
    await waitFor('ready', async () => (await readyStatus(runner.baseUrl)) === 200, 30_000);
    const { jobId, signalAt } = await sigtermWithStepHeld(runner);
    // The held step never finishes: exiting at all proves the budget was kept; the bound only
    // catches a runner that waited far past it (margin for a loaded 2-core machine).
    const exitedAfterMs = await expectCleanExit(runner, signalAt);
    expect(exitedAfterMs).toBeLessThan(10_000);
    expect(await completed(jobId)).toHaveLength(0);
    expect(await depth(COMPUTE_TOPOLOGY.queues.starts)).toBe(1); // redelivered, not lost
    releaseAnswers();
    const second = await spawnRunner({ SHUTDOWN_TIMEOUT_MS: '5000' });
    await waitFor(
      'the second runner completed the step',
      async () => (await completed(jobId)).length === 1 || undefined,
      30_000,
    );
    expect(await depth(COMPUTE_TOPOLOGY.queues.starts)).toBe(0);
    second.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    console.info(
      `runner shutdown with a step longer than the drain: requeued, exit after ${exitedAfterMs} ms`,
    );
  });
});
