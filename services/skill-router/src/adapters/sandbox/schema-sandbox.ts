import path from 'node:path';
import { Piscina } from 'piscina';
import type { Logger } from '@repo/service-kit';
import type { Generated, SchemaChecks, Verdict } from '../../domain/verification';
import type { SandboxAnswers, SandboxTask, SandboxTaskKind } from './tasks';

/** How a sandbox task ended, as counted by `skill_sandbox_tasks_total{outcome}`. */
export type SandboxOutcome = 'ok' | 'refused' | 'timeout' | 'out_of_memory' | 'crashed';

/** Settings of {@link SchemaSandbox} (config `SANDBOX_*`, README "Security"). */
export interface SchemaSandboxOptions {
  /** Worker threads, each running one task at a time. */
  threads: number;
  /** Old-generation heap limit of each thread, in MB; a thread that reaches it is terminated. */
  memoryMb: number;
  /** Deadline of one task in milliseconds, counted from when a thread takes it. */
  taskTimeoutMs: number;
  /**
   * How long a thread may stay idle before it stops, in milliseconds (default 300,000): threads start on
   * demand, so a replica that verifies nothing holds none (each costs about 20 MB).
   */
  idleTimeoutMs?: number;
  logger: Logger;
  /** Called once per finished task (metrics). */
  onTask?: (kind: SandboxTaskKind, outcome: SandboxOutcome) => void;
  /** The worker module (tests substitute their own); default `schema-worker` beside this file. */
  filename?: string;
}

/** Thrown by the sandbox's methods once {@link SchemaSandbox.close} was called: not the schema's fault. */
export class SandboxClosedError extends Error {
  constructor() {
    super('the schema sandbox is shut down');
    this.name = 'SandboxClosedError';
  }
}

/** How each task is named in a failure reason (the step detail says which schema). */
const WHAT: Record<SandboxTaskKind, string> = {
  check_schema: 'could not be checked: the check',
  generate_input: 'generating an input from input_schema',
  check_reply: 'checking the response against output_schema',
};

/** Compiled (`dist/*.js`) or run from TypeScript sources (tsx in development, jest in tests). */
const fromSources = !__filename.endsWith('.js');

/** Default of {@link SchemaSandboxOptions.idleTimeoutMs}. */
const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** A trivial task that starts a thread before a real task's deadline runs. */
const WARM_UP: SandboxTask = { kind: 'check_schema', schema: { type: 'object' } };

/**
 * The schema sandbox: a pool of worker threads (piscina) with `resourceLimits` that runs every
 * computation whose cost a registrant controls (compiling their JSON Schemas, generating inputs from
 * them, validating replies against them). A task that exceeds its deadline or its memory limit
 * terminates its thread, which piscina replaces, and answers `{ ok: false, error }` naming the limit;
 * the service's event loop never runs any of it. Tasks wait in a FIFO here rather than in piscina so
 * that each deadline starts when a thread takes the task, not when it is queued.
 */
export class SchemaSandbox implements SchemaChecks {
  private readonly pool: Piscina;
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  private closed = false;

  constructor(private readonly options: SchemaSandboxOptions) {
    this.pool = new Piscina({
      filename:
        options.filename ?? path.join(__dirname, fromSources ? 'schema-worker.ts' : 'schema-worker.js'),
      // Worker threads do not inherit tsx's module hooks: load them explicitly from sources.
      execArgv: fromSources ? ['--require', 'tsx/cjs'] : [],
      minThreads: 0,
      maxThreads: options.threads,
      idleTimeout: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      resourceLimits: {
        maxOldGenerationSizeMb: options.memoryMb,
        maxYoungGenerationSizeMb: Math.max(2, Math.floor(options.memoryMb / 8)),
        stackSizeMb: 4,
      },
    });
    // A thread that dies with no task attached (e.g. at start-up) must not crash the service.
    this.pool.on('error', (err: unknown) => options.logger.error({ err }, 'schema sandbox thread failed'));
  }

  /** Threads alive now (starting, busy or idle): 0 once they have all been idle past the timeout. */
  get threads(): number {
    return this.pool.threads.length;
  }

  /** {@link SchemaChecks.checkSchema}: validates and compiles a registrant's JSON Schema. */
  checkSchema(schema: unknown): Promise<Verdict> {
    return this.run({ kind: 'check_schema', schema });
  }

  /** {@link SchemaChecks.generateInput}: a test input valid against `inputSchema`. */
  generateInput(inputSchema: unknown): Promise<Generated> {
    return this.run({ kind: 'generate_input', inputSchema });
  }

  /** {@link SchemaChecks.checkReply}: the reply text is JSON valid against `outputSchema`. */
  checkReply(outputSchema: unknown, body: string): Promise<Verdict> {
    return this.run({ kind: 'check_reply', outputSchema, body });
  }

  /**
   * Runs one task on a sandbox thread.
   * @returns the task's answer, or `{ ok: false, error }` when the thread hit the deadline, the memory
   *   limit or crashed
   * @throws SandboxClosedError after {@link close}
   */
  async run<K extends SandboxTaskKind>(task: SandboxTask & { kind: K }): Promise<SandboxAnswers[K]> {
    await this.acquire();
    let outcome: SandboxOutcome = 'crashed';
    try {
      // Fewer threads than tasks in flight: one starts for this task, and its start-up (hundreds of
      // milliseconds on a busy machine) must not count against the task's deadline.
      if (this.pool.threads.length < this.running) await this.pool.run(WARM_UP);
      const answer = (await this.pool.run(task, {
        signal: AbortSignal.timeout(this.options.taskTimeoutMs),
      })) as SandboxAnswers[K];
      outcome = answer.ok ? 'ok' : 'refused';
      return answer;
    } catch (err) {
      if (this.closed) throw new SandboxClosedError();
      const failure = this.describe(task.kind, err);
      outcome = failure.outcome;
      this.options.logger.warn({ task: task.kind, outcome, err }, 'schema sandbox task stopped');
      return { ok: false, error: failure.error };
    } finally {
      this.release();
      this.options.onTask?.(task.kind, outcome);
    }
  }

  /** Terminates the threads (once; later calls do nothing); tasks still waiting or running reject with {@link SandboxClosedError}. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake();
    await this.pool.destroy();
  }

  private describe(kind: SandboxTaskKind, err: unknown): { outcome: SandboxOutcome; error: string } {
    const e = err as { name?: string; code?: string } | undefined;
    const what = WHAT[kind];
    if (e?.name === 'AbortError')
      return {
        outcome: 'timeout',
        error: `${what} took longer than ${this.options.taskTimeoutMs} ms and was stopped`,
      };
    if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY')
      return {
        outcome: 'out_of_memory',
        error: `${what} exceeded the ${this.options.memoryMb} MB memory limit and was stopped`,
      };
    return { outcome: 'crashed', error: `${what} crashed its thread (${e?.code ?? e?.name ?? 'error'})` };
  }

  private async acquire(): Promise<void> {
    if (this.closed) throw new SandboxClosedError();
    if (this.running < this.options.threads) {
      this.running++;
      return;
    }
    // release() hands its slot straight to the first waiter, so no newcomer can take it meanwhile.
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.closed) throw new SandboxClosedError();
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}
