import path from 'node:path';
import request from 'supertest';
import { Registry } from 'prom-client';
import {
  createBaseApp,
  createDatabase,
  createLoop,
  createLoopMetrics,
  createLogger,
  createMetrics,
  createReadiness,
  startService,
  type ComposedService,
} from '../src/index';
import { freePort, metricValue, scrape, spawnService, TEST_DATABASE_BASE_URL, waitFor } from '../src/testing';

const logger = createLogger({ name: 'test', level: 'silent' });

describe('createLoop', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  /** A loop whose rounds record the fake clock and answer from `script` (then `false`). */
  function scripted(
    script: Array<boolean | Error>,
    options: { intervalMs?: number; maxBackoffMs?: number } = {},
  ) {
    const registry = new Registry();
    const metrics = createLoopMetrics(registry);
    const at: number[] = [];
    const loop = createLoop({
      name: 'scripted',
      intervalMs: options.intervalMs ?? 100,
      ...(options.maxBackoffMs !== undefined ? { maxBackoffMs: options.maxBackoffMs } : {}),
      jitter: 0,
      logger,
      metrics,
      round: async () => {
        at.push(Date.now());
        const next = script.shift() ?? false;
        if (next instanceof Error) throw next;
        return next;
      },
    });
    return { loop, at, registry };
  }

  it('When started, then the first round runs at once and the next ones every interval', async () => {
    const { loop, at } = scripted([]);
    const t0 = Date.now();
    loop.start();
    await jest.advanceTimersByTimeAsync(350);
    await loop.stop();
    expect(at.map((t) => t - t0)).toEqual([0, 100, 200, 300]);
  });

  it('When a round reports more work, then the next round starts without waiting', async () => {
    const { loop, at, registry } = scripted([true, true, false]);
    const t0 = Date.now();
    loop.start();
    await jest.advanceTimersByTimeAsync(150);
    await loop.stop();
    // A 0 ms timer fires after 1 ms under fake timers.
    expect(at.map((t) => t - t0)).toEqual([0, 1, 2, 102]);
    const text = await registry.metrics();
    expect(metricValue(text, 'background_loop_rounds_total', { loop: 'scripted', outcome: 'more' })).toBe(2);
    expect(metricValue(text, 'background_loop_rounds_total', { loop: 'scripted', outcome: 'idle' })).toBe(2);
  });

  it('When rounds fail, then the wait doubles up to the backoff ceiling, and a success resets it', async () => {
    const boom = new Error('database down');
    const { loop, at, registry } = scripted([boom, boom, boom, boom, false, false], { maxBackoffMs: 500 });
    const t0 = Date.now();
    loop.start();
    await jest.advanceTimersByTimeAsync(1_700);
    await loop.stop();
    // Failures at 0, 200, 600, 1100 (waits 200, 400, 500 capped, 500); success at 1600, then the interval.
    expect(at.map((t) => t - t0)).toEqual([0, 200, 600, 1100, 1600, 1700]);
    const text = await registry.metrics();
    expect(metricValue(text, 'background_loop_rounds_total', { loop: 'scripted', outcome: 'error' })).toBe(4);
  });

  it('When jitter is set, then each wait stays within the spread around the interval', async () => {
    const at: number[] = [];
    const random = jest.spyOn(Math, 'random');
    random.mockReturnValueOnce(0).mockReturnValueOnce(0.9999);
    const loop = createLoop({
      name: 'jittered',
      intervalMs: 1000,
      jitter: 0.2,
      logger,
      round: async () => void at.push(Date.now()),
    });
    const t0 = Date.now();
    loop.start();
    await jest.advanceTimersByTimeAsync(800 + 1200);
    await loop.stop();
    expect(at.map((t) => t - t0)).toEqual([0, 800, 2000]);
  });

  it('When stopped during a round, then stop waits for that round and no round follows', async () => {
    let release = (): void => undefined;
    let rounds = 0;
    const loop = createLoop({
      name: 'slow',
      intervalMs: 10,
      logger,
      round: () => {
        rounds += 1;
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(rounds).toBe(1);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    release();
    await stopping;
    await jest.advanceTimersByTimeAsync(1000);
    expect(rounds).toBe(1);
    await loop.kick();
    expect(rounds).toBe(1);
  });

  it('When kicked during a round, then one more round starts after it, shared by every kick meanwhile', async () => {
    const releases: Array<() => void> = [];
    let rounds = 0;
    const loop = createLoop({
      name: 'slow',
      intervalMs: 60_000,
      logger,
      round: () => {
        rounds += 1;
        return new Promise<void>((resolve) => releases.push(resolve));
      },
    });
    const first = loop.kick();
    await jest.advanceTimersByTimeAsync(0);
    expect(rounds).toBe(1);
    // The round in progress may have read its work before these kicks: they wait for the next one.
    let kicked = 0;
    const kicks = [loop.kick(), loop.kick()].map((k) => k.then(() => (kicked += 1)));
    releases[0]?.();
    await first;
    await jest.advanceTimersByTimeAsync(0);
    expect(rounds).toBe(2);
    expect(kicked).toBe(0);
    releases[1]?.();
    await Promise.all(kicks);
    expect(kicked).toBe(2);
    expect(rounds).toBe(2);
  });

  it('When kicked without being started, then exactly one round runs and none is scheduled', async () => {
    const { loop, at } = scripted([true]);
    await loop.kick();
    await jest.advanceTimersByTimeAsync(1000);
    expect(at).toHaveLength(1);
  });
});

describe('createReadiness', () => {
  it('When every check passes, then ready; a false or throwing check, or shutting down, is not ready', async () => {
    let brokerUp = true;
    const readiness = createReadiness({
      database: async () => true,
      broker: () => {
        if (!brokerUp) throw new Error('closed');
        return true;
      },
    });
    expect(await readiness.isReady()).toBe(true);
    brokerUp = false;
    expect(await readiness.isReady()).toBe(false);
    brokerUp = true;
    readiness.markShuttingDown();
    expect(readiness.shuttingDown).toBe(true);
    expect(await readiness.isReady()).toBe(false);
  });
});

describe('createDatabase', () => {
  const noClient = () => ({ $disconnect: async () => undefined });

  it('When PostgreSQL answers, then ping is true; after close it is false, and closing twice is fine', async () => {
    const db = createDatabase(noClient, { url: `${TEST_DATABASE_BASE_URL}/postgres`, poolSize: 2 });
    expect(await db.ping()).toBe(true);
    await db.close();
    await db.close();
    expect(await db.ping()).toBe(false);
  });

  it('When nothing listens on the port, then ping is false within the connect timeout', async () => {
    const port = await freePort();
    const db = createDatabase(noClient, {
      url: `postgresql://postgres@127.0.0.1:${port}/x`,
      connectTimeoutMs: 500,
    });
    expect(await db.ping()).toBe(false);
    await db.close();
  });
});

describe('startService', () => {
  it('When shut down, then readiness turns false first, queued work drains before HTTP closes, and loops stop before the connections close', async () => {
    const events: string[] = [];
    const metrics = createMetrics('ordered');
    const readiness = createReadiness();
    const loop = createLoop({
      name: 'work',
      intervalMs: 60_000,
      logger,
      metrics: metrics.loops,
      round: async () => void events.push('round'),
    });
    const port = await freePort();
    const running = await startService({
      name: 'ordered',
      bufferedLogs: false,
      loadConfig: () => ({
        PORT: port,
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        SHUTDOWN_TIMEOUT_MS: 5000,
        SHUTDOWN_DRAIN_DELAY_MS: 0,
        METRICS_PORT: 0,
      }),
      compose: (): ComposedService => ({
        http: createBaseApp({ logger, isReady: readiness.isReady }),
        readiness,
        metrics,
        loops: [loop],
        start: async () => void events.push('start'),
        drain: async () => {
          events.push(`drain (ready: ${await readiness.isReady()}, listening: ${running.server.listening})`);
        },
        close: async () => {
          events.push(`close (listening: ${running.server.listening})`);
        },
      }),
    });
    expect(running.port).toBe(port);
    await waitFor('the first round', () => events.includes('round'));
    expect((await request(`http://127.0.0.1:${port}`).get('/readyz')).status).toBe(200);
    const text = await scrape(`http://127.0.0.1:${running.metricsPort}`);
    expect(metricValue(text, 'background_loop_rounds_total', { loop: 'work', outcome: 'idle' })).toBe(1);

    for (const step of running.shutdownSteps) await step.run();
    expect(running.shutdownSteps.map((s) => s.name)).toEqual([
      'mark not ready',
      'wait for load balancers',
      'drain queued work',
      'drain http',
      'close the metrics port',
      'stop background loops',
      'close connections and database',
      'flush logs',
    ]);
    expect(events).toEqual([
      'start',
      'round',
      'drain (ready: false, listening: true)',
      'close (listening: false)',
    ]);
  });

  it('When a service run by runService gets SIGTERM, then every shutdown step runs and it exits 0', async () => {
    const service = await spawnService({
      cwd: path.join(__dirname, 'fixtures'),
      entry: 'tiny-service.ts',
      env: {},
    });
    try {
      expect((await request(service.baseUrl).get('/readyz')).status).toBe(200);
      const text = await waitFor('a loop round in the metrics', async () => {
        const scraped = await scrape(service.metricsUrl);
        return (metricValue(scraped, 'background_loop_rounds_total', { loop: 'tick', outcome: 'idle' }) ??
          0) > 0
          ? scraped
          : undefined;
      });
      expect(text).toContain('background_loop_round_duration_seconds');
      service.kill('SIGTERM');
      expect(await service.exited).toEqual({ code: 0, signal: null });
      const output = service.output();
      for (const step of [
        'mark not ready',
        'drain http',
        'stop background loops',
        'close connections and database',
      ])
        expect(output).toContain(`"step":"${step}"`);
      expect(output).toContain('closed the tiny service');
      expect(output).toContain('shutdown complete');
    } finally {
      await service.stop();
    }
  });
});
