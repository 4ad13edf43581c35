import { request } from 'node:http';

/** How one request of a load run ended. */
export interface LoadResult {
  /** When the request was started, in epoch milliseconds. */
  startedAt: number;
  endedAt: number;
  /** HTTP status of a complete response. */
  status?: number;
  /** Error code of a request without a complete response (`ECONNREFUSED`, `ECONNRESET`...). */
  error?: string;
  /** Response bytes received before an error (0: nothing was answered). */
  bytes: number;
  /** Parsed JSON body of a complete response when it is JSON. */
  body?: unknown;
}

/** One request of a load run: method, path and optional JSON body and headers. */
export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A running load: `stop()` ends the loops and resolves with every result. */
export interface Load {
  results: LoadResult[];
  /**
   * When `/readyz` was first seen failing (epoch ms, the end of that probe), as a load balancer
   * polling it every 20 ms would.
   */
  unreadyAt(): number | undefined;
  /** How that probe failed: a 503 (readiness turned false while still serving) or an error code (port already closed). */
  unreadyHow(): number | string | undefined;
  stop(): Promise<LoadResult[]>;
}

/**
 * Sends requests to `baseUrl` from `concurrency` loops until stopped. Each request uses its own
 * connection (`connection: close`), so a refused connection after the server closed its port is
 * told apart (`ECONNREFUSED`, nothing sent) from a request dropped mid-flight. A loop keeps going
 * after errors.
 * @param next builds the i-th request
 */
export function startLoad(baseUrl: string, concurrency: number, next: (i: number) => LoadRequest): Load {
  const results: LoadResult[] = [];
  const url = new URL(baseUrl);
  let stopped = false;
  let counter = 0;
  const one = (spec: LoadRequest): Promise<LoadResult> =>
    new Promise((resolve) => {
      const startedAt = Date.now();
      const payload = spec.body === undefined ? undefined : Buffer.from(JSON.stringify(spec.body));
      let bytes = 0;
      let settled = false;
      const finish = (r: Omit<LoadResult, 'startedAt' | 'endedAt' | 'bytes'>): void => {
        if (settled) return;
        settled = true;
        resolve({ startedAt, endedAt: Date.now(), bytes, ...r });
      };
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          method: spec.method,
          path: spec.path,
          agent: false,
          headers: {
            connection: 'close',
            ...(payload
              ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
              : {}),
            ...spec.headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            chunks.push(c);
          });
          res.on('error', (err: NodeJS.ErrnoException) => finish({ error: err.code ?? err.message }));
          res.on('aborted', () => finish({ error: 'ABORTED' }));
          res.on('end', () => {
            if (!res.complete) return finish({ error: 'INCOMPLETE' });
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown;
            try {
              body = JSON.parse(text);
            } catch {
              body = text;
            }
            finish({ status: res.statusCode ?? 0, body });
          });
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => finish({ error: err.code ?? err.message }));
      req.end(payload);
    });
  const loops = Array.from({ length: concurrency }, async () => {
    while (!stopped) results.push(await one(next(counter++)));
  });
  let unreadyAt: number | undefined;
  let unreadyHow: number | string | undefined;
  const watcher = (async () => {
    while (!stopped && unreadyAt === undefined) {
      const probe = await one({ method: 'GET', path: '/readyz' });
      if (probe.status !== 200) {
        unreadyAt = probe.endedAt;
        unreadyHow = probe.status ?? probe.error;
      } else await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    results,
    unreadyAt: () => unreadyAt,
    unreadyHow: () => unreadyHow,
    async stop() {
      stopped = true;
      await Promise.all([...loops, watcher]);
      return results;
    },
  };
}

/** A load run split around the moment a shutdown signal was sent. */
export interface ShutdownVerdict {
  /** Requests with a complete response. */
  completed: number;
  /** Requests started before the signal and completed after it (in flight at the signal). */
  inFlightCompleted: number;
  /** Requests started once readiness had failed whose connection was refused or closed before any byte of answer. */
  refusedAfterUnready: number;
  /** Everything else that failed: a request dropped mid-flight, or refused while still ready. */
  failures: LoadResult[];
}

/**
 * Judges a load run against a shutdown: a signal sent at `signalAt` and readiness first seen failing
 * at `unreadyAt` (epoch ms). Every request started before readiness failed must have a complete
 * response; later ones may be refused (the port closed, or the connection closed before the server
 * read the request) but never cut once an answer began.
 */
export function judgeShutdown(
  results: LoadResult[],
  signalAt: number,
  unreadyAt: number | undefined,
): ShutdownVerdict {
  const verdict: ShutdownVerdict = {
    completed: 0,
    inFlightCompleted: 0,
    refusedAfterUnready: 0,
    failures: [],
  };
  for (const r of results) {
    if (r.status !== undefined) {
      verdict.completed++;
      if (r.startedAt < signalAt && r.endedAt >= signalAt) verdict.inFlightCompleted++;
    } else if (
      unreadyAt !== undefined &&
      r.startedAt >= unreadyAt &&
      r.bytes === 0 &&
      (r.error === 'ECONNREFUSED' || r.error === 'ECONNRESET' || r.error === 'EPIPE')
    ) {
      verdict.refusedAfterUnready++;
    } else {
      verdict.failures.push(r);
    }
  }
  return verdict;
}
