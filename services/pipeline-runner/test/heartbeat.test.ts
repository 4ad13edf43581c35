import { createLlmClient, createSearxngProvider } from '@repo/llm';
import { startFakeSearxng, startScriptedLlm, type FakeSearxng, type ScriptedLlm } from '@repo/llm/testing';
import { Broker } from '@repo/queue';
import { resetVhost } from '@repo/queue/testing';
import {
  COMPUTE_TOPOLOGY,
  declareComputeTopology,
  RunnerHeartbeat,
  type UpstreamHealth,
} from '@repo/compute';
import { createLogger } from '@repo/service-kit';
import { runScoped, waitFor } from '@repo/service-kit/testing';
import {
  createHeartbeatPublisher,
  type HeartbeatOptions,
  type HeartbeatPublisher,
} from '../src/entry-points/workers/heartbeat';

// The heartbeat loop against a suite vhost, a scripted LLM and a fake SearXNG.
jest.setTimeout(60_000);

const VHOST = runScoped('pipeline_runner_heartbeat_test');
/** A queue bound to the heartbeat fanout: every beat published lands in it. */
const BEATS_QUEUE = 'heartbeat-test-beats';
const logger = createLogger({ name: 'heartbeat-test', level: 'silent' });
let broker: Broker;
let llm: ScriptedLlm;
let searx: FakeSearxng;
const publishers: HeartbeatPublisher[] = [];

/** Every beat published since the last call, oldest first. */
async function takeBeats(): Promise<RunnerHeartbeat[]> {
  return broker.withChannel(async (channel) => {
    const beats: RunnerHeartbeat[] = [];
    for (;;) {
      const message = await channel.get(BEATS_QUEUE, { noAck: true });
      if (!message) return beats;
      beats.push(RunnerHeartbeat.parse(JSON.parse(message.content.toString('utf8'))));
    }
  });
}

/** Waits for `count` beats and returns them (and any beat published meanwhile), oldest first. */
async function collectBeats(count: number): Promise<RunnerHeartbeat[]> {
  const beats: RunnerHeartbeat[] = [];
  await waitFor(`${count} beats`, async () => {
    beats.push(...(await takeBeats()));
    return beats.length >= count || undefined;
  });
  return beats;
}

/** A publisher over the scripted LLM and the fake SearXNG; `probes` collects what every probe found. */
function buildPublisher(overrides: Partial<HeartbeatOptions> = {}): {
  publisher: HeartbeatPublisher;
  probes: { llm: UpstreamHealth; search: UpstreamHealth | null }[];
} {
  const probes: { llm: UpstreamHealth; search: UpstreamHealth | null }[] = [];
  const publisher = createHeartbeatPublisher({
    broker,
    runnerId: 'runner-test',
    llm: createLlmClient({ baseUrl: llm.baseUrl, model: 'scripted-model', maxRetries: 0 }),
    search: createSearxngProvider({ baseUrl: searx.baseUrl, timeoutMs: 2000 }),
    intervalMs: 60_000,
    probeIntervalMs: 60_000,
    inFlightSteps: () => 2,
    logger,
    onProbe: (l, s) => probes.push({ llm: l, search: s }),
    ...overrides,
  });
  publishers.push(publisher);
  return { publisher, probes };
}

beforeAll(async () => {
  const amqpUrl = await resetVhost(VHOST);
  broker = await Broker.connect({
    url: amqpUrl,
    connectionName: 'heartbeat-test',
    logger,
    topology: declareComputeTopology,
  });
  await broker.waitForConnection(30_000);
  await broker.withChannel(async (channel) => {
    await channel.assertQueue(BEATS_QUEUE, { durable: false });
    await channel.bindQueue(BEATS_QUEUE, COMPUTE_TOPOLOGY.exchanges.heartbeat, '');
  });
  llm = await startScriptedLlm();
  searx = await startFakeSearxng();
});
beforeEach(async () => {
  await takeBeats();
});
afterEach(async () => {
  for (const publisher of publishers.splice(0)) await publisher.stop();
});
afterAll(async () => {
  await broker?.close(1000);
  await llm?.close();
  await searx?.close();
});

describe('the heartbeat publisher', () => {
  it('When started, then the first beat, with both upstreams probed, is published before start resolves', async () => {
    const { publisher, probes } = buildPublisher();

    await publisher.start();

    const beats = await takeBeats();
    expect(beats).toHaveLength(1);
    expect(beats[0]).toMatchObject({
      v: 1,
      runnerId: 'runner-test',
      intervalMs: 60_000,
      llm: { ok: true, error: null, errorClass: null },
      search: { ok: true, latency_ms: null, error: null, errorClass: null },
      inFlightSteps: 2,
    });
    expect(probes).toHaveLength(1);
    expect(publisher.current()).toEqual({ llm: beats[0]?.llm, search: beats[0]?.search });
  });

  it('When the loop runs, then each beat follows the end of the previous one by exactly the period, and a healthy upstream is not probed again before its probe period', async () => {
    const intervalMs = 300;
    const { publisher, probes } = buildPublisher({ intervalMs });
    await publisher.start();
    publisher.loop.start();

    const beats = await collectBeats(4);

    const times = beats.map((b) => Date.parse(b.at));
    for (let i = 1; i < times.length; i += 1) {
      const gap = (times[i] as number) - (times[i - 1] as number);
      // No jitter: never earlier than the period; later only by the time a publish takes.
      expect(gap).toBeGreaterThanOrEqual(intervalMs);
      expect(gap).toBeLessThan(intervalMs + 200);
    }
    expect(probes).toHaveLength(1);
  });

  it('When the LLM fails its probe, then every beat probes again until it recovers, and the beats carry the failure', async () => {
    const { publisher, probes } = buildPublisher({ intervalMs: 100, search: null });
    llm.fail({ status: 503, times: 2 });
    await publisher.start();
    publisher.loop.start();

    const beats = await collectBeats(4);

    expect(beats.slice(0, 4).map((b) => b.llm.ok)).toEqual([false, false, true, true]);
    expect(beats[0]?.llm).toMatchObject({ ok: false, errorClass: 'upstream' });
    expect(beats[0]?.search).toBeNull();
    // Two failed probes, the one that found the recovery, then none until the probe period.
    expect(probes).toHaveLength(3);
  });

  it('When no LLM is configured, then the beats report a config error and no search', async () => {
    const { publisher } = buildPublisher({ llm: null, search: null });

    await publisher.start();

    const [beat] = await takeBeats();
    expect(beat?.llm).toEqual({
      ok: false,
      latency_ms: null,
      error: 'LLM not configured: set LLM_BASE_URL and LLM_MODEL on the pipeline-runner',
      errorClass: 'config',
    });
    expect(beat?.search).toBeNull();
  });

  it('When stopped, then no beat follows', async () => {
    const intervalMs = 100;
    const { publisher } = buildPublisher({ intervalMs });
    await publisher.start();
    publisher.loop.start();
    await waitFor('a beat of the loop', async () => (await takeBeats()).length > 0 || undefined);

    await publisher.stop();
    await takeBeats();
    // An absence is only seen over a window: three periods in which a running loop would beat three times.
    await new Promise((resolve) => setTimeout(resolve, intervalMs * 3));

    expect(await takeBeats()).toEqual([]);
  });
});
