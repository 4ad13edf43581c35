// Measuring helpers of the market-intel benchmark (bench/market-intel.ts, bench/official-scheme.ts):
// autocannon runs timed from here, CPU time of processes from /proc, quantiles.
import { readdirSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/** Polls `check` every 200 ms until it holds. @throws Error after `timeoutMs` milliseconds */
export async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * One autocannon run, with its wall time in seconds measured here, from the start to the last
 * response: autocannon's own `duration` and per-second mean move in whole seconds, and its callback
 * comes at the next whole second after the last response of a run of `amount` requests — about 10 %
 * of a run of a few thousand paid requests.
 */
export function run(opts: autocannon.Options): Promise<autocannon.Result & { wallSeconds: number }> {
  const started = performance.now();
  let last = started;
  return new Promise((resolve, reject) => {
    const instance = autocannon(opts, (err, result) =>
      err ? reject(err) : resolve({ ...result, wallSeconds: (last - started) / 1000 }),
    );
    instance.on('response', () => {
      last = performance.now();
    });
  });
}

/** CPU time of a process's main thread and of all its threads, and the main thread's run-queue wait, in ms. */
export interface CpuTimes {
  mainMs: number;
  allMs: number;
  mainWaitMs: number;
}

/**
 * CPU times of `pid` from `/proc/<pid>/task/<tid>/schedstat` (nanoseconds on the CPU, nanoseconds
 * runnable but waiting for one): a machine's speed changes the throughput of every phase, a busy
 * neighbour only the wait.
 */
export function cpuTimes(pid: number): CpuTimes {
  const read = (tid: string) => {
    const [run = '0', wait = '0'] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
    return { run: Number(run) / 1e6, wait: Number(wait) / 1e6 };
  };
  const main = read(String(pid));
  let allMs = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      allMs += read(tid).run;
    } catch {
      // a thread that ended in between
    }
  }
  return { mainMs: main.run, allMs, mainWaitMs: main.wait };
}

/** Which processes {@link besideCpuMs} counts: the benchmark's own database and ledger. */
export interface Beside {
  /** The database name: only its backends count, with the server's shared writers. */
  database: string;
  /** The ledger's port: only the ledger started with `--port <ledgerPort>` counts. */
  ledgerPort: number;
}

/** CPU time in ms (all threads) of the processes {@link besideCpuMs} read, by process id. */
export interface BesideReading {
  postgres: Map<number, number>;
  ledger: Map<number, number>;
  /** This process (the load generator), user and system. */
  loadMs: number;
}

/**
 * CPU time in ms (all threads, from schedstat) of the processes beside market-intel that a paid
 * request makes work — PostgreSQL's (the backends of `beside.database`, the WAL writer, the background
 * writer and the checkpointer) and the ledger's — read in one pass over `/proc`, and of this one (the
 * load generator). Other databases' backends and other ledgers (a test suite running beside) are left
 * out. Take two readings and {@link besideSpent}.
 */
export function besideCpuMs(beside: Beside): BesideReading {
  const usage = process.cpuUsage();
  const ledgerArgs = `--port\0${beside.ledgerPort}`;
  const reading: BesideReading = {
    postgres: new Map(),
    ledger: new Map(),
    loadMs: (usage.user + usage.system) / 1000,
  };
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (comm !== 'postgres' && comm !== 'node') continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (comm === 'postgres') {
        if (cmdline.includes(` ${beside.database} `) || /(writer|checkpointer)/.test(cmdline))
          reading.postgres.set(Number(pid), cpuTimes(Number(pid)).allMs);
      } else if (cmdline.includes('solana-localnet/src/cli.ts') && cmdline.includes(ledgerArgs))
        reading.ledger.set(Number(pid), cpuTimes(Number(pid)).allMs);
    } catch {
      // a process that ended in between, or another user's
    }
  }
  return reading;
}

/**
 * What the processes beside spent between two {@link besideCpuMs} readings, in ms: a process that
 * started in between counts whole, one that ended in between (an idle pool connection closed) not at
 * all, so a reading never goes negative.
 */
export function besideSpent(
  before: BesideReading,
  after: BesideReading,
): { postgresMs: number; ledgerMs: number; loadMs: number } {
  const spent = (a: Map<number, number>, b: Map<number, number>) =>
    [...b].reduce((sum, [pid, ms]) => sum + ms - (a.get(pid) ?? 0), 0);
  return {
    postgresMs: spent(before.postgres, after.postgres),
    ledgerMs: spent(before.ledger, after.ledger),
    loadMs: after.loadMs - before.loadMs,
  };
}

/** What `pid` spent between two {@link cpuTimes} readings. */
export function cpuSpent(before: CpuTimes, after: CpuTimes): CpuTimes {
  return {
    mainMs: after.mainMs - before.mainMs,
    allMs: after.allMs - before.allMs,
    mainWaitMs: after.mainWaitMs - before.mainWaitMs,
  };
}

/** The `q` quantile (0..1, nearest rank) of `xs`, NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length ? (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN) : NaN;
}

/** Count, mean, p50 and p99 of durations in milliseconds (rounded to 0.1 ms). */
export function summary(ms: readonly number[]): { n: number; mean: number; p50: number; p99: number } {
  const d = (x: number) => Math.round(x * 10) / 10;
  return {
    n: ms.length,
    mean: d(ms.length ? ms.reduce((a, b) => a + b, 0) / ms.length : NaN),
    p50: d(quantile(ms, 0.5)),
    p99: d(quantile(ms, 0.99)),
  };
}

/** A scrape of a Prometheus histogram: sum, count and cumulative `[upper bound, count]` buckets. */
export interface RpcScrape {
  sum: number;
  count: number;
  buckets: [number, number][];
}

/**
 * market-intel's `x402_verification_rpc_seconds` series for Solana, scraped from `metricsUrl`: the sum
 * (seconds), the count and the cumulative buckets (upper bound in seconds, count).
 */
export async function scrapeRpc(metricsUrl: string): Promise<RpcScrape> {
  const text = await (await fetch(metricsUrl)).text();
  const line = (re: RegExp) => text.split('\n').filter((l) => re.test(l));
  const sum = line(/^x402_verification_rpc_seconds_sum\{.*network="solana"/).reduce(
    (n, l) => n + Number(l.split(' ').pop()),
    0,
  );
  const count = line(/^x402_verification_rpc_seconds_count\{.*network="solana"/).reduce(
    (n, l) => n + Number(l.split(' ').pop()),
    0,
  );
  const buckets = line(/^x402_verification_rpc_seconds_bucket\{.*network="solana"/).map(
    (l): [number, number] => {
      const le = /le="([^"]+)"/.exec(l)?.[1] ?? '+Inf';
      return [le === '+Inf' ? Infinity : Number(le), Number(l.split(' ').pop())];
    },
  );
  return { sum, count, buckets };
}

/** The `q` quantile (0..1) in milliseconds of what a histogram counted between two scrapes: the upper bound of its bucket. */
export function quantileFromBuckets(
  before: [number, number][],
  after: [number, number][],
  q: number,
): number {
  const deltas = after.map(([le, n], i) => [le, n - (before[i]?.[1] ?? 0)] as [number, number]);
  const total = deltas[deltas.length - 1]?.[1] ?? 0;
  const target = total * q;
  const hit = deltas.find(([, n]) => n >= target);
  return hit ? hit[0] * 1000 : NaN;
}
