import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';

/** A service started as its own process from its TypeScript entry (as `pnpm dev` runs it, without watch). */
export interface ServiceProcess {
  child: ChildProcess;
  /** The port it listens on (`PORT`). */
  port: number;
  /** `http://127.0.0.1:<port>`. */
  baseUrl: string;
  /** `http://127.0.0.1:<METRICS_PORT>`: where an HTTP service serves `/metrics` (its own port). */
  metricsUrl: string;
  /** Everything written to stdout and stderr so far (pino JSON lines). */
  output(): string;
  /** Resolves with the exit code and signal once the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGTERM). */
  kill(signal?: NodeJS.Signals): void;
  /** SIGKILLs the process if it still runs and waits for it. */
  stop(): Promise<void>;
}

/** Options of {@link spawnService}. */
export interface SpawnServiceOptions {
  /** The service's directory (holds `src/main.ts`). */
  cwd: string;
  /** Entry file relative to `cwd` (default `src/main.ts`). */
  entry?: string;
  /** Environment of the service (added to PATH and HOME of the test process; PORT and HOST are set). */
  env: Record<string, string>;
  /** How long to wait for `GET /livez` to answer, in milliseconds (default 30 000). */
  startTimeoutMs?: number;
}

/** A free TCP port on 127.0.0.1 (bound and released at once). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/**
 * Starts `node --import tsx --conditions=@repo/source <entry>` in `cwd` (workspace packages from
 * source, like the dev script) on a free port, and waits until `/livez` answers.
 * Signals go straight to the service (no package-manager wrapper in between).
 * @throws Error with the process output when it exits or does not answer in time
 */
export async function spawnService(options: SpawnServiceOptions): Promise<ServiceProcess> {
  const port = await freePort();
  const metricsPort = await freePort();
  let output = '';
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=@repo/source', options.entry ?? path.join('src', 'main.ts')],
    {
      cwd: options.cwd,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        NODE_ENV: 'test',
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let done = false;
  void exited.then(() => (done = true));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  for (;;) {
    if (done) throw new Error(`service exited before answering /livez:\n${output}`);
    const up = await fetch(`${baseUrl}/livez`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`service did not answer /livez in time:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    port,
    baseUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    output: () => output,
    exited,
    kill: (signal = 'SIGTERM') => {
      child.kill(signal);
    },
    async stop() {
      if (!done) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Polls `check` every `intervalMs` until it returns something other than `undefined`/`false`
 * (a thrown error counts as not yet).
 * @throws Error naming `what` (and the last error) after `timeoutMs` milliseconds
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Black-holes `proxy` (connections accepted, never answered), waits until `/readyz` at `baseUrl`
 * answers 503, then restores the proxy and waits until it answers 200 again.
 * @returns milliseconds from the black-hole to the first 503 (the probe's own timeout bounds it)
 * @throws Error when either state is not reached within 15 s / 20 s
 */
export async function readinessWhileHung(
  baseUrl: string,
  proxy: { blackhole(): Promise<void>; restore(): Promise<void> },
): Promise<number> {
  await proxy.blackhole();
  let elapsedMs: number;
  try {
    const started = Date.now();
    await waitFor('503 with a hanging dependency', async () => (await readyStatus(baseUrl)) === 503, 15_000);
    elapsedMs = Date.now() - started;
  } finally {
    await proxy.restore();
  }
  await waitFor('200 after the hang', async () => (await readyStatus(baseUrl)) === 200, 20_000);
  return elapsedMs;
}

/** `GET /readyz` status, or 0 when the connection failed. */
export async function readyStatus(baseUrl: string): Promise<number> {
  return fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
    (r) => r.status,
    () => 0,
  );
}
