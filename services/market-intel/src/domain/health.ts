import type { RunnerHeartbeat, UpstreamHealth } from '@repo/compute';
import type { ErrorClass, HealthResponse } from '@repo/schemas';

/** Retry-After in seconds per error class (services/market-intel/README.md, "Endpoints"). */
export const RETRY_AFTER_SECONDS = { upstream: 30, config: 600 } as const;

/** A health answer: the body and the HTTP status to send it with. */
export interface HealthReport {
  status: 200 | 503;
  body: HealthResponse;
}

/** Produces the current health of the compute upstreams. */
export type HealthProbe = () => Promise<HealthReport>;

/** Options of {@link RunnerHealthMonitor}. */
export interface RunnerHealthOptions {
  /** A runner counts as gone when its last heartbeat is older than this, in milliseconds. */
  staleAfterMs: number;
  /** Whether the message broker connection is up (no broker: jobs cannot be dispatched). */
  isBrokerConnected: () => boolean;
  now?: () => Date;
}

interface Beat {
  heartbeat: RunnerHeartbeat;
  /** Local receive time in epoch milliseconds (the runner's clock is not trusted for staleness). */
  receivedAt: number;
}

/**
 * Health of the compute upstreams as the pipeline-runners report it in their heartbeats
 * (services/market-intel/README.md, "Background loops and consumers"): healthy when at least one live
 * runner reaches its LLM (and its search provider, when it has one); `config` when the runners report
 * missing or rejected credentials; `upstream` when no runner is alive, the broker is unreachable or an
 * upstream fails.
 * Used by GET /api/v1/health and by the compute preflight.
 */
export class RunnerHealthMonitor {
  private readonly beats = new Map<string, Beat>();
  private readonly now: () => Date;

  constructor(private readonly options: RunnerHealthOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** Records a heartbeat (the latest per runner wins). */
  record(heartbeat: RunnerHeartbeat): void {
    this.beats.set(heartbeat.runnerId, { heartbeat, receivedAt: this.now().getTime() });
  }

  /** Number of runners heard from within the staleness window. */
  liveRunners(): number {
    return this.fresh().length;
  }

  /** The current health report (a {@link HealthProbe}). */
  readonly probe: HealthProbe = async () => {
    const server_time = this.now().toISOString();
    const unhealthy = (
      errorClass: ErrorClass,
      error: string,
      search: HealthResponse['search'] = null,
    ): HealthReport => ({
      status: 503,
      body: { ok: false, llm: { ok: false, latency_ms: 0, error }, search, server_time, errorClass },
    });
    if (!this.options.isBrokerConnected())
      return unhealthy('upstream', 'message broker unreachable: jobs cannot be dispatched');
    const fresh = this.fresh();
    if (fresh.length === 0) {
      return unhealthy(
        'upstream',
        `no pipeline runner heartbeat in the last ${Math.round(this.options.staleAfterMs / 1000)} s`,
      );
    }
    const healthy = fresh.find(({ heartbeat: h }) => h.llm.ok && (h.search === null || h.search.ok));
    const chosen = healthy ?? fresh[0];
    if (!chosen) return unhealthy('upstream', 'no pipeline runner');
    const { llm, search } = chosen.heartbeat;
    // The runner's own text (addresses, upstream answers) stays in its logs: only the class is shown.
    const body: HealthResponse = {
      ok: Boolean(healthy),
      llm: { ok: llm.ok, latency_ms: llm.latency_ms ?? 0, error: publicUpstreamError('LLM', llm) },
      search: search ? { ok: search.ok, error: publicUpstreamError('search provider', search) } : null,
      server_time,
    };
    if (healthy) return { status: 200, body };
    const errorClass: ErrorClass = !llm.ok
      ? (llm.errorClass ?? 'upstream')
      : (search?.errorClass ?? 'upstream');
    return { status: 503, body: { ...body, errorClass } };
  };

  private fresh(): Beat[] {
    const cutoff = this.now().getTime() - this.options.staleAfterMs;
    return [...this.beats.values()]
      .filter((b) => b.receivedAt >= cutoff)
      .sort((a, b) => b.receivedAt - a.receivedAt);
  }
}

/**
 * What health says about a failing upstream: its class in words, never its text.
 * @param what `LLM` or `search provider`
 * @param health the runner's report of it
 */
function publicUpstreamError(what: string, health: UpstreamHealth): string | null {
  if (health.ok) return null;
  return health.errorClass === 'config'
    ? `the ${what} is not configured or refuses our configuration (credentials, model or settings)`
    : `the ${what} is unreachable or failing`;
}
