import { createServer, type Server } from 'node:http';
import express, { type Application, type RequestHandler } from 'express';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { createLoopMetrics, type LoopMetrics } from './loop';

/**
 * One series of a {@link MetricTable}: its Prometheus type, its help
 * text, its label names (none when absent) and, for a histogram, its bucket bounds (in the unit its
 * name ends with). These are what `/metrics` shows, so each service's README documents them.
 */
export type MetricSpec =
  | { type: 'counter' | 'gauge'; help: string; labels?: readonly string[] }
  | { type: 'histogram'; help: string; labels?: readonly string[]; buckets: readonly number[] };

/** The label names of a {@link MetricSpec}: `never` when it has none. */
type LabelOf<S> = S extends { labels: readonly (infer L extends string)[] } ? L : never;

/** The prom-client metric a {@link MetricSpec} declares, typed by its label names. */
export type DeclaredMetric<S extends MetricSpec> = S['type'] extends 'counter'
  ? Counter<LabelOf<S>>
  : S['type'] extends 'gauge'
    ? Gauge<LabelOf<S>>
    : Histogram<LabelOf<S>>;

/** A service's own series by metric name, each a {@link MetricSpec} (see {@link createMetrics}). */
export type MetricTable = Readonly<Record<string, MetricSpec>>;

/** The metrics a {@link MetricTable} declares, under their metric names. */
export type DeclaredMetrics<T extends MetricTable> = {
  readonly [Name in keyof T]: DeclaredMetric<T[Name]>;
};

/**
 * What {@link ServiceMetrics.observeQueueDepths} reads queue depths through: `@repo/queue`'s
 * `Broker` is one (a structural type, so that this package needs no broker).
 */
export interface QueueDepthSource {
  /** Whether the broker is connected now (no channel is asked for while it is not). */
  isConnected(): boolean;
  /** Runs `fn` on a channel of its own, closed afterwards. */
  withChannel<T>(
    fn: (channel: { checkQueue(queue: string): Promise<{ messageCount: number }> }) => Promise<T>,
  ): Promise<T>;
}

/**
 * How long a scrape-time lookup (a job count, a queue depth) is reused between scrapes, in
 * milliseconds (see {@link cachedFor}).
 */
export const SCRAPE_CACHE_MS = 1000;

/**
 * Declares series read at scrape time on a service's registry. What such a gauge reads: a number (no
 * label), values by the value of its one label, or `undefined` to keep the last values (a dropped
 * series would read as zero).
 */
export interface MetricFactory {
  /**
   * A gauge read at every scrape: `read` returns the value, the values by `label`, or `undefined`
   * to keep the last ones; a `read` that throws keeps them too.
   */
  scrapedGauge(
    name: string,
    help: string,
    label: string | undefined,
    read: () =>
      number | Record<string, number> | undefined | Promise<number | Record<string, number> | undefined>,
  ): void;
}

/** A service's Prometheus registry with the HTTP latency histogram every service exposes. */
export interface ServiceMetrics extends MetricFactory {
  registry: Registry;
  /** `http_request_duration_seconds{method,route,status}`. */
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  /** Express middleware observing every request's duration under its matched route. */
  httpMiddleware: RequestHandler;
  /** Express handler for `GET /metrics` (Prometheus text format). */
  metricsHandler: RequestHandler;
  /** The series of the background loops (`background_loop_*`); pass to `createLoop`. */
  loops: LoopMetrics;
  /** `mcp_tool_calls_total{tool,code}`: MCP tool calls by tool and outcome (`ok` or the error code). */
  mcpToolCalls: Counter<'tool' | 'code'>;
  /**
   * Adds the scrape-time gauge `rabbitmq_queue_messages{queue}`: the ready messages of each of
   * `queues` (queue depth), read with `checkQueue` and reused for {@link SCRAPE_CACHE_MS} between
   * scrapes. While the broker is not connected, or a read fails, the last values stay.
   * @param help the series' help text, which says which queues the service watches
   */
  observeQueueDepths(broker: QueueDepthSource, queues: readonly string[], help: string): void;
}

/**
 * Creates a registry with the default Node.js process metrics, the HTTP histogram (seconds), the MCP
 * tool counter and the background loop series, then the service's own series.
 * @param service added as the `service` label on every metric
 * @param table the service's own series (metric name -> {@link MetricSpec}), registered in its order
 * @returns the registry's shared series and helpers, and in `series` the service's own metrics under
 *   their names, each typed by its label names
 * @throws Error when a name of `table` is taken by a shared series or is not a valid Prometheus name
 */
export function createMetrics<const T extends MetricTable = Record<never, never>>(
  service: string,
  table?: T,
): ServiceMetrics & { series: DeclaredMetrics<T> } {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  const factory = metricFactory(registry);
  const shared = declare(registry, {
    http_request_duration_seconds: {
      type: 'histogram',
      help: 'HTTP request latency in seconds, by method, matched route and status',
      labels: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    },
    mcp_tool_calls_total: {
      type: 'counter',
      help: 'MCP tool calls, by tool and outcome (ok, tool_error or the error code)',
      labels: ['tool', 'code'],
    },
  });
  const httpDuration = shared.http_request_duration_seconds;
  const httpMiddleware: RequestHandler = (req, res, next) => {
    const end = httpDuration.startTimer();
    res.once('finish', () => {
      const route = (req as { route?: { path?: unknown } }).route?.path;
      // Unmatched paths share one label so scanners cannot blow up the label set.
      const label = typeof route === 'string' ? `${req.baseUrl}${route}` : 'unmatched';
      end({ method: req.method, route: label, status: String(res.statusCode) });
    });
    next();
  };
  const metricsHandler: RequestHandler = async (_req, res) => {
    res.setHeader('content-type', registry.contentType);
    res.end(await registry.metrics());
  };
  return {
    ...factory,
    registry,
    httpDuration,
    httpMiddleware,
    metricsHandler,
    loops: createLoopMetrics(registry),
    mcpToolCalls: shared.mcp_tool_calls_total,
    // Without a table T is its default, the empty table.
    series: declare(registry, table ?? ({} as T)),
    observeQueueDepths(broker, queues, help) {
      const depths = cachedFor(SCRAPE_CACHE_MS, () =>
        broker.withChannel(async (channel) => {
          const out: Record<string, number> = {};
          for (const queue of queues) out[queue] = (await channel.checkQueue(queue)).messageCount;
          return out;
        }),
      );
      factory.scrapedGauge('rabbitmq_queue_messages', help, 'queue', () =>
        broker.isConnected() ? depths() : undefined,
      );
    },
  };
}

/**
 * Creates every series of `table` on `registry`, in the table's order.
 * @returns the metrics under their names
 * @throws Error when a name is already registered or is not a valid Prometheus metric name
 */
function declare<const T extends MetricTable>(registry: Registry, table: T): DeclaredMetrics<T> {
  const registers = [registry];
  const create = (name: string, spec: MetricSpec): Counter | Gauge | Histogram => {
    const labelNames = spec.labels ?? [];
    switch (spec.type) {
      case 'counter':
        return new Counter({ name, help: spec.help, labelNames, registers });
      case 'gauge':
        return new Gauge({ name, help: spec.help, labelNames, registers });
      case 'histogram':
        return new Histogram({ name, help: spec.help, labelNames, buckets: [...spec.buckets], registers });
    }
  };
  // Each entry was created from its own spec, which is what DeclaredMetrics reads.
  return Object.fromEntries(
    Object.entries(table).map(([name, spec]) => [name, create(name, spec)]),
  ) as DeclaredMetrics<T>;
}

/** The {@link MetricFactory} of `registry`. */
function metricFactory(registry: Registry): MetricFactory {
  const registers = [registry];
  return {
    scrapedGauge(name, help, label, read) {
      new Gauge({
        name,
        help,
        labelNames: label === undefined ? [] : [label],
        registers,
        async collect() {
          const value = await Promise.resolve()
            .then(read)
            .catch(() => undefined);
          if (typeof value === 'number') this.set(value);
          else if (value && label !== undefined)
            for (const [key, count] of Object.entries(value)) this.set({ [label]: key }, count);
        },
      });
    },
  };
}

/**
 * Shares one result of a scrape-time lookup (a queue depth, a count query) between the scrapes of
 * `ttlMs` milliseconds, and one call in flight between concurrent scrapes, so frequent scrapes by
 * several Prometheus servers cost one lookup. A failed lookup is not kept.
 * @param ttlMs how long a result is reused, in milliseconds
 */
export function cachedFor<T>(ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let entry: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (entry && now - entry.at < ttlMs) return entry.value;
    const value = load();
    const current = { at: now, value };
    entry = current;
    value.catch(() => {
      if (entry === current) entry = undefined;
    });
    return value;
  };
}

/**
 * The metrics listener's app: `GET /metrics` (Prometheus text format) and a `404 not_found` envelope
 * for anything else. It is served on its own port (`METRICS_PORT`), which the Ingress never routes
 * and Prometheus scrapes inside the cluster (services/market-intel/README.md, "Observability").
 * @param metrics the service's registry
 */
export function createMetricsApp(metrics: ServiceMetrics): Application {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', metrics.metricsHandler);
  app.use(notFoundHandler);
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  return app;
}

/**
 * Serves {@link createMetricsApp} on `port` (0: a free port) and `host`.
 * @returns the HTTP server and the port it listens on
 * @throws Error from `listen` (e.g. `EADDRINUSE`)
 */
export async function listenMetrics(
  metrics: ServiceMetrics,
  port: number,
  host = '0.0.0.0',
): Promise<{ server: Server; port: number }> {
  const server = createServer(createMetricsApp(metrics));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}
