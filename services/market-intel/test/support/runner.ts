import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const RUNNER_DIR = path.join(__dirname, '../../../pipeline-runner');

/** A pipeline-runner running as its own process, as in production. */
export interface RunnerProcess {
  child: ChildProcess;
  /** stdout + stderr so far (for failure messages). */
  output(): string;
  /** Resolves with the exit code or signal when the process ends. */
  exited: Promise<number | NodeJS.Signals | null>;
  /** Sends `signal` and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | NodeJS.Signals | null>;
}

/**
 * Starts `services/pipeline-runner/src/main.ts` in a child process (through tsx, from the sources)
 * with `env` over fast test settings: heartbeats every 200 ms, probes every 500 ms, 10 ms retry backoff.
 */
export function spawnRunner(env: Record<string, string>): RunnerProcess {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@repo/source', 'src/main.ts'], {
    cwd: RUNNER_DIR,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      HEARTBEAT_INTERVAL_MS: '200',
      PROBE_INTERVAL_MS: '500',
      STEP_RETRY_BASE_MS: '10',
      SHUTDOWN_TIMEOUT_MS: '5000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code)),
  );
  return {
    child,
    output: () => output,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
