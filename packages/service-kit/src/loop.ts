import { noJitterGenerator } from 'cockatiel';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Logger } from './logger';

/** What one round reports: `true` when more work is likely waiting (the next round starts at once). */
export type RoundResult = boolean | void;

/** The Prometheus series every {@link Loop} reports into (created once per registry). */
export interface LoopMetrics {
  /** `background_loop_rounds_total{loop,outcome}`, outcome `idle`, `more` or `error`. */
  rounds: Counter<'loop' | 'outcome'>;
  /** `background_loop_round_duration_seconds{loop}`. */
  duration: Histogram<'loop'>;
}

/**
 * Creates the loop series in `registry` (docs/architecture.md, "Runtime").
 * @param registry the service's registry
 */
export function createLoopMetrics(registry: Registry): LoopMetrics {
  return {
    rounds: new Counter({
      name: 'background_loop_rounds_total',
      help: 'Rounds of each background loop, by outcome (idle, more: work left, error)',
      labelNames: ['loop', 'outcome'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'background_loop_round_duration_seconds',
      help: 'Duration of one round of a background loop, in seconds',
      labelNames: ['loop'] as const,
      buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120],
      registers: [registry],
    }),
  };
}

/**
 * An exponential backoff, the one retry delay policy of the workspace (docs/architecture.md, "Runtime"):
 * the loops' waits after failed rounds, webhook and refund retries, step requeues and broker reconnects.
 */
export interface BackoffPolicy {
  /** The delay before the first retry, in milliseconds. */
  initialDelayMs: number;
  /** The longest delay, in milliseconds. */
  maxDelayMs: number;
}

/**
 * The delay before retry number `retry` of `policy` (docs/architecture.md, "Runtime"): `initialDelayMs`
 * doubled `retry` times (0: the first retry waits `initialDelayMs`), at most `maxDelayMs`. No jitter:
 * {@link withJitter} spreads it where replicas would otherwise retry in lockstep.
 * @param policy the first and the longest delay, in milliseconds
 * @param retry how many retries came before this one (a negative count counts as 0)
 * @returns the delay in milliseconds
 */
export function backoffDelay(policy: BackoffPolicy, retry: number): number {
  // cockatiel's exponential backoff without jitter: min(maxDelay, initialDelay * 2 ** retry).
  const [delay] = noJitterGenerator(Math.max(0, retry), {
    generator: noJitterGenerator,
    initialDelay: policy.initialDelayMs,
    maxDelay: policy.maxDelayMs,
    exponent: 2,
  });
  return delay;
}

/**
 * Spreads a wait uniformly over `ms ± jitter × ms` (docs/architecture.md, "Runtime"), rounded to a
 * millisecond, so that replicas started together do not act in lockstep.
 * @param ms the wait in milliseconds (0 or less is returned as is)
 * @param jitter the spread as a fraction of `ms`, clamped to [0, 1]
 */
export function withJitter(ms: number, jitter: number): number {
  const spread = Math.min(Math.max(jitter, 0), 1);
  return ms <= 0 || spread === 0 ? ms : Math.round(ms * (1 - spread + Math.random() * 2 * spread));
}

/** Options of {@link createLoop}. */
export interface LoopOptions {
  /** The loop's name in logs and in the `loop` label of its metrics. */
  name: string;
  /** Milliseconds between the end of a round and the start of the next. */
  intervalMs: number;
  /** One unit of work; resolves `true` when more work is likely waiting. Errors are logged, never thrown. */
  round: () => Promise<RoundResult>;
  logger: Logger;
  /**
   * Spread of each wait, as a fraction of it (default 0.1: a 1000 ms interval waits 900–1100 ms), so
   * replicas started together do not poll in lockstep.
   */
  jitter?: number;
  /**
   * Longest wait after consecutive failed rounds, in milliseconds (default 30 000). Each failure doubles
   * the wait from `intervalMs`, never beyond the larger of this and `intervalMs`.
   */
  maxBackoffMs?: number;
  /** Milliseconds before the first round once started (default 0). */
  initialDelayMs?: number;
  /** Series to report rounds into (see {@link createLoopMetrics}). */
  metrics?: LoopMetrics;
}

/**
 * A background loop: rounds one after the other, never two at once (docs/architecture.md, "Runtime").
 * It is idle until {@link Loop.start}, running until {@link Loop.stop}, and can be started again.
 */
export interface Loop {
  readonly name: string;
  /** Schedules rounds, the first after `initialDelayMs` (no-op while running); also after a stop. */
  start(): void;
  /** Stops scheduling rounds and waits for the round in progress; {@link Loop.start} resumes. */
  stop(): Promise<void>;
  /**
   * Runs a round that starts after this call and resolves when it is done: now, or right after the
   * round in progress (which may have read its work before the call; every kick during one round
   * shares the round after it). Running or idle (never started: that one round and nothing
   * scheduled) alike; a stopped loop runs no new round. For "work just arrived" signals, tests and
   * demos.
   */
  kick(): Promise<void>;
}

/**
 * The one loop abstraction of every background worker (docs/architecture.md, "Runtime"): an interval
 * with jitter, an immediate next round while work is waiting, exponential backoff after failures
 * ({@link backoffDelay}), a metric per round and a graceful stop. Nothing runs until
 * {@link Loop.start} or {@link Loop.kick}; a stopped loop can be started again.
 */
export function createLoop(options: LoopOptions): Loop {
  const { name, intervalMs, round, logger, metrics } = options;
  const jitter = options.jitter ?? 0.1;
  const backoff: BackoffPolicy = {
    initialDelayMs: intervalMs,
    maxDelayMs: Math.max(options.maxBackoffMs ?? 30_000, intervalMs),
  };
  let state: 'idle' | 'running' | 'stopped' = 'idle';
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  let following: Promise<void> | undefined;

  const schedule = (delayMs: number): void => {
    if (state !== 'running') return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void runOnce(), delayMs);
  };

  const runOnce = (): Promise<void> => {
    if (current) return current;
    if (state === 'stopped') return Promise.resolve();
    current = (async () => {
      const endTimer = metrics?.duration.startTimer({ loop: name });
      let next: number;
      try {
        const more = (await round()) === true;
        failures = 0;
        metrics?.rounds.inc({ loop: name, outcome: more ? 'more' : 'idle' });
        next = more ? 0 : withJitter(intervalMs, jitter);
      } catch (err) {
        failures += 1;
        metrics?.rounds.inc({ loop: name, outcome: 'error' });
        logger.error({ err, loop: name, failures }, 'background loop round failed');
        next = withJitter(backoffDelay(backoff, Math.min(failures, 20)), jitter);
      } finally {
        endTimer?.();
        current = undefined;
      }
      schedule(next);
    })();
    return current;
  };

  return {
    name,
    start() {
      if (state === 'running') return;
      state = 'running';
      failures = 0;
      // Started again while the round a stop waited for is still running: that round schedules the next.
      if (!current) schedule(options.initialDelayMs ?? 0);
    },
    async stop() {
      state = 'stopped';
      if (timer) clearTimeout(timer);
      timer = undefined;
      await current;
    },
    kick() {
      if (!current) return runOnce();
      if (state === 'stopped') return current;
      following ??= current.then(() => {
        following = undefined;
        return runOnce();
      });
      return following;
    },
  };
}

/**
 * `loop` (or a worker extending one, its other members kept) whose {@link Loop.stop} also releases
 * what the rounds use (docs/architecture.md, "Runtime"): it stops the loop, waiting for the round in
 * progress, then awaits `release` — a webhook sender's connection pool, for example — so no round is
 * still using it when it goes. A stop whose `release` rejects rejects with that error.
 * @param loop the loop, e.g. a `createLoop` one spread into a worker
 * @param release run after every stop, once the loop has stopped
 */
export function releaseOnStop<L extends Loop>(loop: L, release: () => Promise<void>): L {
  return {
    ...loop,
    async stop() {
      await loop.stop();
      await release();
    },
  };
}
