import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino, { type Logger } from 'pino';
import pinoHttp, { type HttpLogger } from 'pino-http';

/** Paths redacted from every log line: payment proofs, API keys, authorization and cookies. */
export const REDACT_PATHS = [
  'req.headers["x-payment"]',
  'req.headers["payment-signature"]',
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers["x-payment"]',
  'headers["payment-signature"]',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
];

/**
 * The service logger: pino JSON to stdout with the secret-bearing headers redacted.
 * With `buffered`, lines are written in batches of up to 4 KiB instead of one write per line (a
 * measurable share of a small request's cost); call `logger.flush()` on shutdown.
 * @param options `name` of the service, `level` (pino level, `silent` in tests), `buffered`
 */
export function createLogger(options: { name: string; level?: string; buffered?: boolean }): Logger {
  const settings = {
    name: options.name,
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  return options.buffered
    ? pino(settings, pino.destination({ dest: 1, sync: false, minLength: 4096 }))
    : pino(settings);
}

/**
 * pino-http middleware: reuses `x-request-id` (≤ 200 chars) or generates a UUID, echoes it in the
 * response header and carries it in every log line as `req.id`.
 * @param logger the service logger
 */
export function httpLogger(logger: Logger): HttpLogger {
  return pinoHttp({
    logger,
    genReqId(req: IncomingMessage, res: ServerResponse) {
      const header = req.headers['x-request-id'];
      const id =
        typeof header === 'string' && header.length > 0 && header.length <= 200 ? header : randomUUID();
      res.setHeader('x-request-id', id);
      return id;
    },
    customLogLevel(_req, res, err) {
      // A 503 is a deliberate answer (an upstream is unhealthy, the service is draining), not a fault.
      if (res.statusCode === 503) return 'warn';
      if (err || res.statusCode >= 500) return 'error';
      return 'info';
    },
    autoLogging: { ignore: (req) => req.url === '/livez' || req.url === '/readyz' || req.url === '/metrics' },
    // Only what an access log needs: no headers are logged at all (so none can leak), and each line
    // stays cheap to build.
    serializers: {
      req: (req: { id?: unknown; method?: string; url?: string; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: req.url,
        remoteAddress: req.remoteAddress,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
  });
}

export type { Logger };
