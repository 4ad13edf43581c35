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

/** A background loop: rounds one after the other, never two at once. */
export interface Loop {
  readonly name: string;
  /** Schedules the first round (no-op when started or stopped). */
  start(): void;
  /** Stops scheduling rounds and waits for the round in progress. */
  stop(): Promise<void>;
  /**
   * Runs a round that starts after this call and resolves when it is done: now, or right after the
   * round in progress (which may have read its work before the call; every kick during one round
   * shares the round after it). A stopped loop runs no new round. For "work just arrived" signals,
   * tests and demos.
   */
  kick(): Promise<void>;
}

/**
 * The one loop abstraction of every background worker (docs/architecture.md, "Runtime"): an interval
 * with jitter, an immediate next round while work is waiting, exponential backoff after failures, a
 * metric per round and a graceful stop. Nothing runs until {@link Loop.start}.
 */
export function createLoop(options: LoopOptions): Loop {
  const { name, intervalMs, round, logger, metrics } = options;
  const jitter = Math.min(Math.max(options.jitter ?? 0.1, 0), 1);
  const maxBackoffMs = Math.max(options.maxBackoffMs ?? 30_000, intervalMs);
  let started = false;
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  let following: Promise<void> | undefined;

  const spread = (ms: number): number =>
    ms <= 0 || jitter === 0 ? ms : Math.round(ms * (1 - jitter + Math.random() * 2 * jitter));

  const schedule = (delayMs: number): void => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void runOnce(), delayMs);
  };

  const runOnce = (): Promise<void> => {
    if (current) return current;
    if (stopped) return Promise.resolve();
    current = (async () => {
      const endTimer = metrics?.duration.startTimer({ loop: name });
      let next: number;
      try {
        const more = (await round()) === true;
        failures = 0;
        metrics?.rounds.inc({ loop: name, outcome: more ? 'more' : 'idle' });
        next = more ? 0 : spread(intervalMs);
      } catch (err) {
        failures += 1;
        metrics?.rounds.inc({ loop: name, outcome: 'error' });
        logger.error({ err, loop: name, failures }, 'background loop round failed');
        next = spread(Math.min(intervalMs * 2 ** Math.min(failures, 20), maxBackoffMs));
      } finally {
        endTimer?.();
        current = undefined;
      }
      if (started) schedule(next);
    })();
    return current;
  };

  return {
    name,
    start() {
      if (started || stopped) return;
      started = true;
      schedule(options.initialDelayMs ?? 0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
    },
    kick() {
      if (!current) return runOnce();
      if (stopped) return current;
      following ??= current.then(() => {
        following = undefined;
        return runOnce();
      });
      return following;
    },
  };
}
