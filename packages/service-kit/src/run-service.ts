import { createServer, type RequestListener, type Server } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { createLogger, type Logger } from './logger';
import type { Loop } from './loop';
import { listenMetrics, type ServiceMetrics } from './metrics';
import type { Readiness } from './readiness';
import { closeServer, onShutdown, type ShutdownStep } from './shutdown';

/** The configuration fields {@link runService} reads (every service's `config.ts` has them). */
export interface RuntimeConfig {
  /** Public HTTP port (0: any free port). */
  PORT: number;
  HOST: string;
  LOG_LEVEL: string;
  /** Milliseconds the whole shutdown may take before the process exits 1. */
  SHUTDOWN_TIMEOUT_MS: number;
  /** Milliseconds between readiness turning false and the HTTP port closing. */
  SHUTDOWN_DRAIN_DELAY_MS: number;
  /** Port of `/metrics` (0: any free port); absent for a service that serves it on its own app. */
  METRICS_PORT?: number;
}

/** What a service's composition root hands to the runtime. */
export interface ComposedService {
  /** The public HTTP app. */
  http: RequestListener;
  /** Turned false first on shutdown; the app's `/readyz` should answer from it. */
  readiness: Readiness;
  /** Served on `METRICS_PORT` when the configuration has one. */
  metrics?: ServiceMetrics;
  /** Background loops: started once HTTP listens, stopped after HTTP drained. */
  loops?: Loop[];
  /** Runs before the HTTP port opens (queue consumers, for example). */
  start?(): Promise<void>;
  /** Runs after readiness turned false, before HTTP drains: stop taking queued work, finish what is in flight. */
  drain?(): Promise<void>;
  /** Runs last: closes the broker, pools and database. */
  close(): Promise<void>;
  /** Extra fields of the "listening" log line. */
  describe?: Record<string, unknown>;
}

/** The definition of a service: its name, configuration reader and composition root. */
export interface ServiceDefinition<C extends RuntimeConfig> {
  /** Logger name and the "listening" line, e.g. `skill-router`. */
  name: string;
  /** Reads and validates the environment once; throws `ConfigError` naming every bad variable. */
  loadConfig(): C;
  /** The composition root: config -> clients -> repositories -> use cases -> entry points. */
  compose(context: { config: C; logger: Logger }): Promise<ComposedService> | ComposedService;
  /** Writes logs in 4 KiB batches (default `true`); flushed on shutdown. */
  bufferedLogs?: boolean;
}

/** A started service (see {@link startService}). */
export interface RunningService {
  logger: Logger;
  server: Server;
  /** The public port actually bound. */
  port: number;
  /** The metrics port actually bound, when one was configured. */
  metricsPort?: number;
  /** The shutdown steps in order (what SIGTERM runs). */
  shutdownSteps: ShutdownStep[];
  /** `SHUTDOWN_TIMEOUT_MS` of the configuration. */
  shutdownTimeoutMs: number;
}

/**
 * Starts a service in this process (docs/architecture.md, "Runtime"): reads the configuration,
 * creates the logger, composes the service, runs its `start`, opens the public port (keep-alive
 * 65 s, longer than common load balancers' idle timeouts) and the metrics port, then starts the loops.
 * Installs no signal handlers (see {@link runService}).
 * @throws whatever configuration, composition or `listen` throws
 */
export async function startService<C extends RuntimeConfig>(
  definition: ServiceDefinition<C>,
): Promise<RunningService> {
  const config = definition.loadConfig();
  const logger = createLogger({
    name: definition.name,
    level: config.LOG_LEVEL,
    buffered: definition.bufferedLogs ?? true,
  });
  const service = await definition.compose({ config, logger });
  await service.start?.();

  const server = createServer(service.http);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const metricsServer =
    service.metrics && config.METRICS_PORT !== undefined
      ? await listenMetrics(service.metrics, config.METRICS_PORT, config.HOST)
      : undefined;
  const loops = service.loops ?? [];
  for (const loop of loops) loop.start();
  logger.info(
    {
      port,
      ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
      loops: loops.map((loop) => loop.name),
      ...service.describe,
    },
    `${definition.name} listening on http://${config.HOST}:${port}`,
  );

  const shutdownSteps: ShutdownStep[] = [
    { name: 'mark not ready', run: () => service.readiness.markShuttingDown() },
    // Load balancers see /readyz fail and stop sending new connections before the port closes.
    { name: 'wait for load balancers', run: () => delay(config.SHUTDOWN_DRAIN_DELAY_MS) },
    ...(service.drain ? [{ name: 'drain queued work', run: () => service.drain?.() }] : []),
    { name: 'drain http', run: () => closeServer(server) },
    ...(metricsServer
      ? [{ name: 'close the metrics port', run: () => closeServer(metricsServer.server) }]
      : []),
    // After HTTP: a request in flight may still kick a loop.
    { name: 'stop background loops', run: () => Promise.all(loops.map((loop) => loop.stop())) },
    { name: 'close connections and database', run: () => service.close() },
    { name: 'flush logs', run: () => logger.flush() },
  ];
  return {
    logger,
    server,
    port,
    ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
    shutdownSteps,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  };
}

/**
 * The whole `main.ts` of a service: {@link startService}, then SIGTERM/SIGINT run its shutdown steps
 * in order within `SHUTDOWN_TIMEOUT_MS` and exit 0. A failure to start prints its message and exits 1.
 */
export function runService<C extends RuntimeConfig>(definition: ServiceDefinition<C>): void {
  startService(definition).then(
    (running) => {
      onShutdown(running.logger, running.shutdownSteps, running.shutdownTimeoutMs);
    },
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
