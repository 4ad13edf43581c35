import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  backoffDelay,
  createLogger,
  createLoop,
  releaseOnStop,
  withJitter,
  type Loop,
  type LoopOptions,
} from '../src/index';

const logger = createLogger({ name: 'test', level: 'silent' });

// One kick() for every worker (docs/architecture.md, "Runtime"): every background worker of every
// service is a createLoop, so this suite, run on the option shapes the workers use, is what each
// worker's kick does; the source check below keeps any worker from bypassing createLoop.

/** The option shapes the services' workers pass (interval only, a first delay, no jitter). */
const WORKER_SHAPES: Array<{ shape: string; options: Partial<LoopOptions> }> = [
  { shape: 'interval with jitter', options: { intervalMs: 1000 } },
  { shape: 'first round after one interval', options: { intervalMs: 1000, initialDelayMs: 1000 } },
  { shape: 'exact period', options: { intervalMs: 1000, jitter: 0, initialDelayMs: 1000 } },
];

describe.each(WORKER_SHAPES)('kick() of a worker loop ($shape)', ({ options }) => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** A loop whose rounds wait for `release` when `hold` is set. */
  function worker() {
    const releases: Array<() => void> = [];
    let hold = false;
    let rounds = 0;
    const loop: Loop = createLoop({
      name: 'worker',
      intervalMs: 60_000,
      ...options,
      logger,
      round: () => {
        rounds += 1;
        return hold ? new Promise<void>((resolve) => releases.push(resolve)) : Promise.resolve();
      },
    });
    return {
      loop,
      rounds: () => rounds,
      hold: (on: boolean) => (hold = on),
      release: () => releases.shift()?.(),
    };
  }

  it('When kicked before start, then one round runs and resolves the kick, and none is scheduled', async () => {
    const w = worker();
    await w.loop.kick();
    expect(w.rounds()).toBe(1);
    await jest.advanceTimersByTimeAsync(10 * 60_000);
    expect(w.rounds()).toBe(1);
  });

  it('When kicked while running and idle, then a round runs at once', async () => {
    const w = worker();
    w.loop.start();
    await jest.advanceTimersByTimeAsync(options.initialDelayMs ?? 0);
    const before = w.rounds();
    await w.loop.kick();
    expect(w.rounds()).toBe(before + 1);
    await w.loop.stop();
  });

  it('When kicked during a round, then every kick meanwhile shares one round after it', async () => {
    const w = worker();
    w.hold(true);
    const first = w.loop.kick();
    expect(w.rounds()).toBe(1);
    const kicks = Promise.all([w.loop.kick(), w.loop.kick()]);
    w.release();
    await first;
    await jest.advanceTimersByTimeAsync(0);
    expect(w.rounds()).toBe(2);
    w.release();
    await kicks;
    expect(w.rounds()).toBe(2);
  });

  it('When stopped, then a kick runs nothing; started again, rounds and kicks resume', async () => {
    const w = worker();
    w.loop.start();
    await jest.advanceTimersByTimeAsync(options.initialDelayMs ?? 0);
    await w.loop.stop();
    const stoppedAt = w.rounds();
    await w.loop.kick();
    await jest.advanceTimersByTimeAsync(10 * 60_000);
    expect(w.rounds()).toBe(stoppedAt);

    w.loop.start();
    await jest.advanceTimersByTimeAsync(options.initialDelayMs ?? 0);
    expect(w.rounds()).toBe(stoppedAt + 1);
    await w.loop.kick();
    expect(w.rounds()).toBe(stoppedAt + 2);
    await w.loop.stop();
  });
});

describe('createLoop restarts', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('When started again while the round a stop waited for is still running, then that round schedules the next one', async () => {
    const releases: Array<() => void> = [];
    const at: number[] = [];
    const loop = createLoop({
      name: 'restarted',
      intervalMs: 100,
      jitter: 0,
      logger,
      round: () => {
        at.push(Date.now());
        return new Promise<void>((resolve) => releases.push(resolve));
      },
    });
    const t0 = Date.now();
    loop.start();
    await jest.advanceTimersByTimeAsync(0);
    const stopping = loop.stop();
    loop.start();
    releases.shift()?.();
    await stopping;
    await jest.advanceTimersByTimeAsync(100);
    expect(at.map((t) => t - t0)).toEqual([0, 100]);
    releases.shift()?.();
    await loop.stop();
  });
});

describe('releaseOnStop', () => {
  it('When stopped during a round, then the release runs only after that round ended, and the worker keeps its members', async () => {
    const events: string[] = [];
    let endRound: () => void = () => undefined;
    const loop = createLoop({
      name: 'releasing',
      intervalMs: 60_000,
      logger,
      round: () => {
        events.push('round started');
        return new Promise<void>((resolve) => {
          endRound = () => {
            events.push('round ended');
            resolve();
          };
        });
      },
    });
    const worker = releaseOnStop({ ...loop, extra: 'kept' }, async () => {
      events.push('released');
    });
    expect(worker.extra).toBe('kept');
    const kicked = worker.kick();
    expect(events).toEqual(['round started']);
    const stopping = worker.stop();
    await Promise.resolve();
    expect(events).toEqual(['round started']);
    endRound();
    await Promise.all([kicked, stopping]);
    expect(events).toEqual(['round started', 'round ended', 'released']);
  });

  it('When the release rejects, then stop rejects with its error', async () => {
    const loop = createLoop({ name: 'failing-release', intervalMs: 60_000, logger, round: async () => {} });
    const worker = releaseOnStop(loop, () => Promise.reject(new Error('pool already closed')));
    await expect(worker.stop()).rejects.toThrow('pool already closed');
  });
});

describe('backoffDelay and withJitter', () => {
  afterEach(() => jest.restoreAllMocks());

  it('When retries follow each other, then the delay doubles from the first one up to the cap', () => {
    const policy = { initialDelayMs: 1000, maxDelayMs: 30_000 };
    expect([0, 1, 2, 3, 4, 5, 6, 40].map((retry) => backoffDelay(policy, retry))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
    expect(backoffDelay(policy, -1)).toBe(1000);
    expect(backoffDelay({ initialDelayMs: 0, maxDelayMs: 30_000 }, 5)).toBe(0);
  });

  it('When jitter is set, then the wait is spread over ± that fraction, rounded to a millisecond', () => {
    const random = jest.spyOn(Math, 'random');
    random.mockReturnValueOnce(0).mockReturnValueOnce(0.5).mockReturnValueOnce(0.9999);
    expect([withJitter(1000, 0.2), withJitter(1000, 0.2), withJitter(1000, 0.2)]).toEqual([800, 1000, 1200]);
    expect(withJitter(1000, 0)).toBe(1000);
    expect(withJitter(0, 0.5)).toBe(0);
  });
});

describe('Every background worker is a createLoop', () => {
  const root = path.resolve(__dirname, '../../..');

  /** The TypeScript sources of every service and package (tests and generated code aside). */
  function sources(): Array<{ file: string; text: string }> {
    const found: Array<{ file: string; text: string }> = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          if (!['node_modules', 'dist', 'generated'].includes(entry.name)) walk(full);
        } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
          found.push({ file: path.relative(root, full), text: readFileSync(full, 'utf8') });
        }
      }
    };
    for (const group of ['services', 'packages']) {
      for (const unit of readdirSync(path.join(root, group), { withFileTypes: true })) {
        const src = path.join(root, group, unit.name, 'src');
        if (unit.isDirectory() && readdirSync(path.join(root, group, unit.name)).includes('src')) walk(src);
      }
    }
    return found;
  }

  it('When the sources are read, then no class implements or extends a loop and every kick is a createLoop kick', () => {
    const files = sources();
    expect(files.length).toBeGreaterThan(50);
    const offences: string[] = [];
    for (const { file, text } of files) {
      if (/\bclass\s+\w+[^{]*\b(implements|extends)\s+[^{]*\b(Loop|LoopWorker)\b/.test(text))
        offences.push(`${file}: a class implements a loop`);
      // A kick defined by hand: anything but handing the call to a createLoop loop.
      for (const match of text.matchAll(/(?<![.\w`])kick\s*(?::|\()[^\n]*/g)) {
        const line = match[0];
        if (file === 'packages/service-kit/src/loop.ts') continue;
        if (/^kick\s*:\s*(\(\)\s*=>\s*)?\w+\.kick(\(\))?,?\s*$/.test(line.trim())) continue;
        // A signature in an interface or a port: no body.
        if (/^kick\(\):[^{]*;$/.test(line.trim())) continue;
        offences.push(`${file}: ${line.trim()}`);
      }
    }
    expect(offences).toEqual([]);
  });
});
