import { createServer, type Server } from 'node:http';
import express, { type Application, type RequestHandler } from 'express';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { createLoopMetrics, type LoopMetrics } from './loop';

/**
 * Declares series on a service's registry, one line each. What a scrape-time gauge reads: a number
 * (no label), values by the value of its one label, or `undefined` to keep the last values (a
 * dropped series would read as zero).
 */
export interface MetricFactory {
  /** A counter; `labelNames` empty for none. */
  counter<L extends string = string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>;
  /** A gauge set by the service. */
  gauge<L extends string = string>(name: string, help: string, labelNames?: readonly L[]): Gauge<L>;
  /** A histogram with its bucket bounds (in the unit its name ends with). */
  histogram<L extends string = string>(
    name: string,
    help: string,
    buckets: number[],
    labelNames?: readonly L[],
  ): Histogram<L>;
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
}

/**
 * Creates a registry with the default Node.js process metrics, the HTTP histogram (seconds) and the
 * background loop series.
 * @param service added as the `service` label on every metric
 */
export function createMetrics(service: string): ServiceMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency in seconds, by method, matched route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
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
  const mcpToolCalls = new Counter({
    name: 'mcp_tool_calls_total',
    help: 'MCP tool calls, by tool and outcome (ok, tool_error or the error code)',
    labelNames: ['tool', 'code'] as const,
    registers: [registry],
  });
  return {
    ...metricFactory(registry),
    registry,
    httpDuration,
    httpMiddleware,
    metricsHandler,
    loops: createLoopMetrics(registry),
    mcpToolCalls,
  };
}

/** The {@link MetricFactory} of `registry`. */
function metricFactory(registry: Registry): MetricFactory {
  const registers = [registry];
  return {
    counter: (name, help, labelNames = []) => new Counter({ name, help, labelNames, registers }),
    gauge: (name, help, labelNames = []) => new Gauge({ name, help, labelNames, registers }),
    histogram: (name, help, buckets, labelNames = []) =>
      new Histogram({ name, help, labelNames, buckets, registers }),
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
