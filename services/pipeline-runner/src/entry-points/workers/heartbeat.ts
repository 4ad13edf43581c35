import type { LlmClient, SearchProvider } from '@repo/llm';
import type { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY, type RunnerHeartbeat, type UpstreamHealth } from '@repo/compute';
import { createLoop, type Logger, type Loop, type LoopMetrics } from '@repo/service-kit';

/** Options of {@link createHeartbeatPublisher}. */
export interface HeartbeatOptions {
  broker: Broker;
  runnerId: string;
  /** `null` when no LLM is configured: reported as a `config` error. */
  llm: LlmClient | null;
  search: SearchProvider | null;
  /** Heartbeat period in milliseconds. */
  intervalMs: number;
  /** Probe period in milliseconds (probes cost a request to each upstream). */
  probeIntervalMs: number;
  inFlightSteps: () => number;
  logger: Logger;
  /** Called after every probe (metrics). */
  onProbe?: (llm: UpstreamHealth, search: UpstreamHealth | null) => void;
  /** The `background_loop_*` series of the heartbeat loop. */
  loopMetrics?: LoopMetrics;
}

const NOT_CONFIGURED: UpstreamHealth = {
  ok: false,
  latency_ms: null,
  error: 'LLM not configured: set LLM_BASE_URL and LLM_MODEL on the pipeline-runner',
  errorClass: 'config',
};

/** The runner's heartbeat: the `heartbeat` loop and the calls the composition root makes around it. */
export interface HeartbeatPublisher {
  /** The `heartbeat` loop: one {@link HeartbeatPublisher.beat} per round, never two at once. */
  readonly loop: Loop;
  /** The latest LLM health (the runner's readiness does not depend on it: jobs wait in the queue). */
  current(): { llm: UpstreamHealth; search: UpstreamHealth | null };
  /**
   * Probes at once and publishes the first heartbeat (resolves once it is published or failed);
   * the loop, started by the runtime, publishes the next ones.
   */
  start(): Promise<void>;
  /**
   * Stops beating: no beat starts after this call. Resolves when the beat in progress, if any, is
   * done (a probe is bounded by the LLM client's probe timeout).
   */
  stop(): Promise<void>;
  /** Probes when due (or while unhealthy) and publishes one heartbeat; never throws (a failure is logged). */
  beat(): Promise<void>;
}

/**
 * Publishes the runner's heartbeat (README, "Messaging (RabbitMQ)": market-intel's health and
 * compute preflight use it) to the `compute.heartbeat` fanout every `intervalMs`, as a transient
 * message that expires after three periods. It carries the LLM and search health from the latest
 * probe; probes run every `probeIntervalMs`, and every period while an upstream is failing, so
 * recovery shows within one heartbeat. The beats are the rounds of the `heartbeat` background loop
 * ({@link HeartbeatPublisher.loop}, registered with the service's loops): the first round runs in
 * {@link HeartbeatPublisher.start} before any step is consumed, the next ones `intervalMs` after
 * the end of the previous one.
 * @param options the broker, the upstreams to probe, the periods and the callbacks
 */
export function createHeartbeatPublisher(options: HeartbeatOptions): HeartbeatPublisher {
  let llmHealth: UpstreamHealth = options.llm
    ? { ok: false, latency_ms: null, error: 'not probed yet', errorClass: 'upstream' }
    : NOT_CONFIGURED;
  let searchHealth: UpstreamHealth | null = null;
  let lastProbe = 0;

  const probe = async (): Promise<void> => {
    lastProbe = Date.now();
    if (options.llm) {
      const result = await options.llm.probe();
      llmHealth = {
        ok: result.ok,
        latency_ms: result.latency_ms,
        error: result.error,
        errorClass: result.errorClass,
      };
    }
    if (options.search) {
      const result = await options.search.probe();
      searchHealth = {
        ok: result.ok,
        latency_ms: null,
        error: result.error,
        errorClass: result.errorClass,
      };
    }
    options.onProbe?.(llmHealth, searchHealth);
  };

  const beat = async (): Promise<void> => {
    try {
      const unhealthy = !llmHealth.ok || (searchHealth !== null && !searchHealth.ok);
      if (unhealthy || Date.now() - lastProbe >= options.probeIntervalMs) await probe();
      const heartbeat: RunnerHeartbeat = {
        v: 1,
        runnerId: options.runnerId,
        at: new Date().toISOString(),
        intervalMs: options.intervalMs,
        llm: llmHealth,
        search: searchHealth,
        inFlightSteps: options.inFlightSteps(),
      };
      await options.broker.publish(COMPUTE_TOPOLOGY.exchanges.heartbeat, '', heartbeat, {
        type: 'runner.heartbeat',
        persistent: false,
        expirationMs: options.intervalMs * 3,
        // No market-intel listening yet is normal: the beat is simply not heard.
        mandatory: false,
      });
    } catch (err) {
      options.logger.warn({ err: String(err) }, 'heartbeat not published');
    }
  };

  const loop = createLoop({
    name: 'heartbeat',
    intervalMs: options.intervalMs,
    // Heartbeats keep their exact period: market-intel judges a runner alive by it.
    jitter: 0,
    // The first beat is the one `start` publishes; the loop takes over one period later.
    initialDelayMs: options.intervalMs,
    round: beat,
    logger: options.logger,
    ...(options.loopMetrics ? { metrics: options.loopMetrics } : {}),
  });

  return {
    loop,
    current: () => ({ llm: llmHealth, search: searchHealth }),
    start: () => loop.kick(),
    stop: () => loop.stop(),
    beat,
  };
}
