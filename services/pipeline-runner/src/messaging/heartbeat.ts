import type { LlmClient, SearchProvider } from '@repo/llm';
import type { Broker, QueueLogger } from '@repo/queue';
import { COMPUTE_TOPOLOGY, type RunnerHeartbeat, type UpstreamHealth } from '@repo/compute';

/** Options of {@link HeartbeatPublisher}. */
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
  logger: QueueLogger;
  /** Called after every probe (metrics). */
  onProbe?: (llm: UpstreamHealth, search: UpstreamHealth | null) => void;
}

const NOT_CONFIGURED: UpstreamHealth = {
  ok: false,
  latency_ms: null,
  error: 'LLM not configured: set LLM_BASE_URL and LLM_MODEL on the pipeline-runner',
  errorClass: 'config',
};

/**
 * Publishes the runner's heartbeat (ARCHITECTURE.md, "Compute jobs": market-intel's health and
 * compute preflight use it) to the `compute.heartbeat` fanout every `intervalMs`, as a transient
 * message that expires after three periods. It carries the LLM and search health from the latest
 * probe; probes run every `probeIntervalMs`, and every period while an upstream is failing, so
 * recovery shows within one heartbeat.
 */
export class HeartbeatPublisher {
  private llmHealth: UpstreamHealth;
  private searchHealth: UpstreamHealth | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastProbe = 0;
  private stopped = false;

  constructor(private readonly options: HeartbeatOptions) {
    this.llmHealth = options.llm
      ? { ok: false, latency_ms: null, error: 'not probed yet', errorClass: 'upstream' }
      : NOT_CONFIGURED;
  }

  /** The latest LLM health (the runner's readiness does not depend on it: jobs wait in the queue). */
  current(): { llm: UpstreamHealth; search: UpstreamHealth | null } {
    return { llm: this.llmHealth, search: this.searchHealth };
  }

  /** Probes at once, publishes the first heartbeat, then keeps beating. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.beat();
  }

  /** Stops beating. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Probes when due (or while unhealthy) and publishes one heartbeat. */
  async beat(): Promise<void> {
    try {
      const unhealthy = !this.llmHealth.ok || (this.searchHealth !== null && !this.searchHealth.ok);
      if (unhealthy || Date.now() - this.lastProbe >= this.options.probeIntervalMs) await this.probe();
      const heartbeat: RunnerHeartbeat = {
        v: 1,
        runnerId: this.options.runnerId,
        at: new Date().toISOString(),
        intervalMs: this.options.intervalMs,
        llm: this.llmHealth,
        search: this.searchHealth,
        inFlightSteps: this.options.inFlightSteps(),
      };
      await this.options.broker.publish(COMPUTE_TOPOLOGY.exchanges.heartbeat, '', heartbeat, {
        type: 'runner.heartbeat',
        persistent: false,
        expirationMs: this.options.intervalMs * 3,
        // No market-intel listening yet is normal: the beat is simply not heard.
        mandatory: false,
      });
    } catch (err) {
      this.options.logger.warn({ err: String(err) }, 'heartbeat not published');
    } finally {
      if (!this.stopped) this.timer = setTimeout(() => void this.beat(), this.options.intervalMs);
    }
  }

  private async probe(): Promise<void> {
    this.lastProbe = Date.now();
    if (this.options.llm) {
      const result = await this.options.llm.probe();
      this.llmHealth = {
        ok: result.ok,
        latency_ms: result.latency_ms,
        error: result.error,
        errorClass: result.errorClass,
      };
    }
    if (this.options.search) {
      const result = await this.options.search.probe();
      this.searchHealth = {
        ok: result.ok,
        latency_ms: null,
        error: result.error,
        errorClass: result.errorClass,
      };
    }
    this.options.onProbe?.(this.llmHealth, this.searchHealth);
  }
}
