import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { scriptedPipelineResponder } from '@repo/compute/testing';
import {
  startFakeSearxng,
  startScriptedLlm,
  type FakeSearxng,
  type ScriptedLlm,
  type ScriptedRequest,
  type ScriptedRespond,
} from '@repo/llm/testing';
import { waitFor } from '@repo/queue/testing';

// Located from the repository root, as `scripts/stack.ts` starts the services.
const ROOT = path.resolve(__dirname, '../../../..');
const RUNNER_DIR = path.join(ROOT, 'services/pipeline-runner');

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
 * @param options.dieBeforeAck - `<kind>:<stepIndex>`: the runner SIGKILLs itself when it is about to
 *   ack that step command, after publishing its outcome (`die-before-ack.cjs`)
 */
export function spawnRunner(
  env: Record<string, string>,
  options: { dieBeforeAck?: string } = {},
): RunnerProcess {
  let output = '';
  const preload = options.dieBeforeAck ? ['--require', path.join(__dirname, 'die-before-ack.cjs')] : [];
  const args = [...preload, '--import', 'tsx', '--conditions=@repo/source', 'src/main.ts'];
  const child = spawn(process.execPath, args, {
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
      ...(options.dieBeforeAck ? { DIE_BEFORE_ACK: options.dieBeforeAck } : {}),
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

/**
 * Waits until market-intel at `baseUrl` reports healthy (it has seen the runner's heartbeats).
 * @throws Error with the runner's output after 60 s
 */
export async function waitForHealthyRunner(baseUrl: string, runner: RunnerProcess): Promise<void> {
  await waitFor(
    'the runner to report healthy',
    async () => (await fetch(`${baseUrl}/api/v1/health`)).status === 200,
    60_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}\nrunner output:\n${runner.output()}`);
  });
}

/** A healthy runner on the scripted LLM and a search provider with no results, as {@link startScriptedRunner} starts it. */
export interface ScriptedRunner {
  runner: RunnerProcess;
  llm: ScriptedLlm;
  search: FakeSearxng;
  /** Stops the runner, then the LLM and search servers. */
  close(): Promise<void>;
}

/**
 * Starts the scripted OpenAI-compatible LLM (answering every pipeline task), a SearXNG stand-in with
 * no results and a runner using both on `amqpUrl`, and waits until market-intel at `baseUrl` reports
 * healthy: what a suite needs to pay for compute jobs that run to completion.
 * @param name a label for the runner's id
 */
export async function startScriptedRunner(
  h: { baseUrl: string; amqpUrl: string },
  name: string,
): Promise<ScriptedRunner> {
  const llm = await startScriptedLlm({ respond: scriptedPipelineResponder() });
  const search = await startFakeSearxng({ results: [] });
  const runner = spawnRunner({
    AMQP_URL: h.amqpUrl,
    LLM_BASE_URL: llm.baseUrl,
    LLM_MODEL: 'scripted-model',
    LLM_API_KEY: 'test-key',
    SEARCH_PROVIDER: 'searxng',
    SEARXNG_URL: search.baseUrl,
    RUNNER_ID: `${name}-${Date.now()}`,
  });
  await waitForHealthyRunner(h.baseUrl, runner);
  return {
    runner,
    llm,
    search,
    async close() {
      await runner.stop();
      await llm.close();
      await search.close();
    },
  };
}

/** Holds the scripted LLM's answers to chosen calls until released, so a test can kill the runner mid-step. */
export class LlmCallHold {
  private matches: ((req: ScriptedRequest) => boolean) | null = null;
  private readonly waiting: (() => void)[] = [];
  /** The last request held (what a runner killed meanwhile must ask again). */
  lastHeld: ScriptedRequest | undefined;

  /** `respond`, except that calls selected by {@link hold} wait for {@link release}. */
  wrap(respond: ScriptedRespond): ScriptedRespond {
    return async (req) => {
      if (this.matches?.(req)) {
        this.lastHeld = req;
        await new Promise<void>((resolve) => this.waiting.push(resolve));
      }
      return respond(req);
    };
  }

  /**
   * How many of `calls` ask exactly what the last held request asked (same task, same messages): a
   * step interrupted while that request was held has run again when this is at least 1.
   */
  askedAgain(calls: readonly Pick<ScriptedRequest, 'task' | 'messages'>[]): number {
    const held = this.lastHeld;
    if (!held) throw new Error('no LLM call was held');
    const prompt = JSON.stringify(held.messages);
    return calls.filter((c) => c.task === held.task && JSON.stringify(c.messages) === prompt).length;
  }

  /** From now on, holds the calls `matches` selects. */
  hold(matches: (req: ScriptedRequest) => boolean): void {
    this.matches = matches;
  }

  /** Resolves once a call is held (throws after `timeoutMs` milliseconds). */
  async held(timeoutMs: number): Promise<void> {
    await waitFor('a held LLM call', () => this.waiting.length > 0, timeoutMs);
  }

  /** Stops holding and lets every held call answer. */
  release(): void {
    this.matches = null;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}
