import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { createLlmClient, createSearxngProvider, createTavilyProvider, type SearchProvider } from '@repo/llm';
import { Broker } from '@repo/queue';
import { declareComputeTopology } from '@repo/compute';
import { closeServer, createBaseApp, createLogger, onShutdown } from '@repo/service-kit';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { loadConfig, scoutFetchSettings, type RunnerConfig } from './config';
import { HeartbeatPublisher } from './messaging/heartbeat';
import { createRunnerMetrics } from './metrics';
import { StepWorker } from './messaging/step-worker';
import { pipelines } from './pipelines';

function searchProvider(config: RunnerConfig): SearchProvider | null {
  if (config.SEARCH_PROVIDER === 'searxng' && config.SEARXNG_URL)
    return createSearxngProvider({ baseUrl: config.SEARXNG_URL, timeoutMs: 15_000 });
  if (config.SEARCH_PROVIDER === 'tavily' && config.TAVILY_API_KEY)
    return createTavilyProvider({ apiKey: config.TAVILY_API_KEY, timeoutMs: 15_000 });
  return null;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ name: 'pipeline-runner', level: config.LOG_LEVEL });
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
  const heartbeat = new HeartbeatPublisher({
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
  });
  metrics.observe({ inFlightSteps: () => worker?.inFlightSteps() ?? 0, broker });
  await broker.waitForConnection(60_000);
  await heartbeat.start();
  if (worker) await worker.start(config.RUNNER_PREFETCH);
  else
    logger.warn(
      'no LLM configured (LLM_BASE_URL, LLM_MODEL): not consuming steps; market-intel reports errorClass "config"',
    );

  let shuttingDown = false;
  const app = createBaseApp({ logger, metrics, isReady: () => !shuttingDown && broker.isConnected() });
  // The runner has no public HTTP: its probe port (never behind the Ingress) serves /metrics too.
  app.get('/metrics', metrics.metricsHandler);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  const address = server.address();
  logger.info(
    {
      runnerId,
      port: typeof address === 'object' && address ? address.port : config.PORT,
      llm: llm ? { model: llm.model } : null,
      search: search?.name ?? null,
      prefetch: config.RUNNER_PREFETCH,
      ssrfAllowlist: config.SSRF_ALLOWLIST.length > 0 ? config.SSRF_ALLOWLIST : null,
    },
    'pipeline-runner started',
  );

  onShutdown(
    logger,
    [
      { name: 'mark not ready', run: () => (shuttingDown = true) },
      { name: 'stop heartbeats', run: () => heartbeat.stop() },
      // In-flight steps get the shutdown budget to finish; unfinished ones return to the queue.
      {
        name: 'drain steps and close RabbitMQ',
        run: () => broker.close(Math.max(1000, config.SHUTDOWN_TIMEOUT_MS - 2000)),
      },
      { name: 'close http', run: () => closeServer(server) },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
