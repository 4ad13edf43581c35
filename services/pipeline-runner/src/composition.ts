import { hostname } from 'node:os';
import { createLlmClient, createSearxngProvider, createTavilyProvider, type SearchProvider } from '@repo/llm';
import { Broker } from '@repo/queue';
import { declareComputeTopology } from '@repo/compute';
import { createBaseApp, createReadiness, type ComposedService, type Logger } from '@repo/service-kit';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { scoutFetchSettings, type RunnerConfig } from './config';
import { pipelines } from './domain/pipelines';
import { StepWorker } from './entry-points/consumers/step-worker';
import { createHeartbeatPublisher, type HeartbeatPublisher } from './entry-points/workers/heartbeat';
import { createRunnerMetrics, type RunnerMetrics } from './metrics';

/** How long boot waits for the first RabbitMQ connection, in milliseconds. */
const BROKER_CONNECT_TIMEOUT_MS = 60_000;
/** Part of `SHUTDOWN_TIMEOUT_MS` kept for closing HTTP and flushing once the steps drained, in milliseconds. */
const SHUTDOWN_RESERVE_MS = 2000;

/** The composed runner: what the runtime runs, plus the handles an in-process test may use. */
export interface ComposedRunner extends ComposedService {
  /** This runner's id in heartbeats and job events. */
  runnerId: string;
  broker: Broker;
  /** `null` without an LLM: the runner then consumes nothing. */
  worker: StepWorker | null;
  heartbeat: HeartbeatPublisher;
  metrics: RunnerMetrics;
}

/** The search provider the configuration names, or `null` (`SEARCH_PROVIDER=none`). */
function searchProvider(config: RunnerConfig): SearchProvider | null {
  if (config.SEARCH_PROVIDER === 'searxng' && config.SEARXNG_URL)
    return createSearxngProvider({ baseUrl: config.SEARXNG_URL, timeoutMs: 15_000 });
  if (config.SEARCH_PROVIDER === 'tavily' && config.TAVILY_API_KEY)
    return createTavilyProvider({ apiKey: config.TAVILY_API_KEY, timeoutMs: 15_000 });
  return null;
}

/**
 * The pipeline-runner's composition root: configuration -> LLM, search and RabbitMQ clients -> the
 * pipelines -> the step consumer, the heartbeat loop and the probe app (`/livez`, `/readyz` and
 * `/metrics` on the one port: the runner serves no API and its port is never behind the Ingress).
 *
 * `start` waits up to 60 s for RabbitMQ, publishes the first heartbeat, then consumes the step queues
 * (README, "Messaging (RabbitMQ)"); without an LLM it warns and consumes nothing, so step commands
 * wait in their queues for a configured runner (README, "LLM and search"). `drain` stops the
 * heartbeat, then lets in-flight steps finish within `SHUTDOWN_TIMEOUT_MS` - 2 s and closes RabbitMQ
 * (unfinished steps return to their queue).
 * @param context the parsed configuration and the service's logger
 * @throws what `Broker.connect` throws for an invalid `AMQP_URL`
 */
export async function compose({
  config,
  logger,
}: {
  config: RunnerConfig;
  logger: Logger;
}): Promise<ComposedRunner> {
  const runnerId = config.RUNNER_ID ?? `${hostname()}-${process.pid}`;
  const llm =
    config.LLM_BASE_URL && config.LLM_MODEL
      ? createLlmClient({
          baseUrl: config.LLM_BASE_URL,
          model: config.LLM_MODEL,
          timeoutMs: config.LLM_TIMEOUT_MS,
          ...(config.LLM_API_KEY ? { apiKey: config.LLM_API_KEY } : {}),
        })
      : null;
  const search = searchProvider(config);
  const metrics = createRunnerMetrics();

  const broker = await Broker.connect({
    url: config.AMQP_URL,
    connectionName: `pipeline-runner ${runnerId}`,
    logger,
    topology: declareComputeTopology,
  });
  // Without an LLM the runner consumes nothing: step messages wait in the queue for a configured runner.
  const worker = llm
    ? new StepWorker({
        broker,
        pipelines,
        pipelineDeps: { llm, search, logger, now: () => new Date(), scout: scoutFetchSettings(config) },
        runnerId,
        logger,
        retryBaseMs: config.STEP_RETRY_BASE_MS,
        onStep: (kind, outcome, seconds) => metrics.onStep(kind, outcome, seconds),
      })
    : null;
  const heartbeat = createHeartbeatPublisher({
    broker,
    runnerId,
    llm,
    search,
    intervalMs: config.HEARTBEAT_INTERVAL_MS,
    probeIntervalMs: config.PROBE_INTERVAL_MS,
    inFlightSteps: () => worker?.inFlightSteps() ?? 0,
    logger,
    onProbe: (l, s) => {
      metrics.onProbe('llm', l.ok);
      if (s) metrics.onProbe('search', s.ok);
    },
    loopMetrics: metrics.loops,
  });
  metrics.observe({ inFlightSteps: () => worker?.inFlightSteps() ?? 0, broker });

  const readiness = createReadiness({ broker: () => broker.isConnected() });
  const app = createBaseApp({ logger, metrics, isReady: readiness.isReady });
  // The runner has no public HTTP: its probe port (never behind the Ingress) serves /metrics too.
  app.get('/metrics', metrics.metricsHandler);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));

  return {
    runnerId,
    broker,
    worker,
    heartbeat,
    metrics,
    http: app,
    readiness,
    loops: [heartbeat.loop],
    async start() {
      await broker.waitForConnection(BROKER_CONNECT_TIMEOUT_MS);
      await heartbeat.start();
      if (worker) await worker.start(config.RUNNER_PREFETCH);
      else
        logger.warn(
          'no LLM configured (LLM_BASE_URL, LLM_MODEL): not consuming steps; market-intel reports errorClass "config"',
        );
    },
    async drain() {
      // Not awaited: a beat in progress ends by itself (the runtime waits for it when it stops the loops).
      void heartbeat.stop();
      // In-flight steps get the shutdown budget to finish; unfinished ones return to the queue.
      await broker.close(Math.max(1000, config.SHUTDOWN_TIMEOUT_MS - SHUTDOWN_RESERVE_MS));
    },
    // RabbitMQ closed in `drain`; the runner holds nothing else.
    close: async () => undefined,
    describe: {
      runnerId,
      llm: llm ? { model: llm.model } : null,
      search: search?.name ?? null,
      prefetch: config.RUNNER_PREFETCH,
      ssrfAllowlist: config.SSRF_ALLOWLIST.length > 0 ? config.SSRF_ALLOWLIST : null,
    },
  };
}
