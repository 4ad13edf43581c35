import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLogger } from '@repo/service-kit';
import {
  SandboxClosedError,
  SchemaSandbox,
  type SandboxOutcome,
  type SchemaSandboxOptions,
} from '../src/adapters/sandbox/schema-sandbox';
import { waitFor } from './support/harness';

// The schema sandbox's limits, against a worker that misbehaves on demand and against the real one.
const logger = createLogger({ name: 'sandbox-test', level: 'silent' });
const HOSTILE = path.join(__dirname, 'support/hostile-worker.ts');
const sandboxes: SchemaSandbox[] = [];
let outcomes: SandboxOutcome[];

function sandbox(options: Partial<SchemaSandboxOptions> = {}): SchemaSandbox {
  outcomes = [];
  const s = new SchemaSandbox({
    threads: 1,
    memoryMb: 32,
    taskTimeoutMs: 2000,
    logger,
    onTask: (_kind, outcome) => outcomes.push(outcome),
    filename: HOSTILE,
    ...options,
  });
  sandboxes.push(s);
  return s;
}
const task = (schema: Record<string, unknown>) => ({ kind: 'check_schema' as const, schema });

afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

describe('SchemaSandbox limits', () => {
  it('When a task allocates without end, then it fails naming the memory limit, its thread is replaced and the next task succeeds', async () => {
    const s = sandbox({ memoryMb: 32 });
    const before = (await s.run(task({}))) as unknown as { thread: number };
    const verdict = await s.run(task({ how: 'hog' }));
    expect(verdict).toEqual({
      ok: false,
      error: 'could not be checked: the check exceeded the 32 MB memory limit and was stopped',
    });
    const after = (await s.run(task({}))) as unknown as { ok: boolean; thread: number };
    expect(after.ok).toBe(true);
    expect(after.thread).not.toBe(before.thread);
    expect(outcomes).toEqual(['ok', 'out_of_memory', 'ok']);
  });

  it('When no thread is running, then a check starts one without its start-up counting against the deadline, and an idle thread stops', async () => {
    const s = sandbox({ taskTimeoutMs: 50, idleTimeoutMs: 500 });
    expect(s.threads).toBe(0);
    // Loading the worker takes far longer than 50 ms: counted against the deadline, this would time out.
    expect(await s.run(task({}))).toMatchObject({ ok: true });
    expect(s.threads).toBe(1);
    await waitFor('the idle thread to stop', async () => s.threads === 0, 10_000);
    expect(await s.run(task({}))).toMatchObject({ ok: true });
    expect(outcomes).toEqual(['ok', 'ok']);
  });

  it('When a task never returns, then it is stopped at its deadline and fails naming it, while the event loop stays free', async () => {
    const s = sandbox({ taskTimeoutMs: 1500 });
    await s.run(task({})); // thread started
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = performance.now();
    const verdict = await s.run(task({ how: 'spin' }));
    const elapsed = performance.now() - started;
    delay.disable();
    expect(verdict).toEqual({
      ok: false,
      error: 'could not be checked: the check took longer than 1500 ms and was stopped',
    });
    expect(elapsed).toBeGreaterThanOrEqual(1450);
    // Had the loop run on this thread, the event loop would have stalled for the whole 1500 ms.
    expect(delay.max / 1e6).toBeLessThan(750);
    expect((await s.run(task({}))).ok).toBe(true);
    expect(outcomes).toEqual(['ok', 'timeout', 'ok']);
  });

  it('When a task throws, then it fails as a crash of its thread and the sandbox goes on', async () => {
    const s = sandbox();
    expect(await s.run(task({ how: 'throw' }))).toEqual({
      ok: false,
      error: 'could not be checked: the check crashed its thread (Error)',
    });
    expect((await s.run(task({}))).ok).toBe(true);
    expect(outcomes).toEqual(['crashed', 'ok']);
  });

  it('When more tasks arrive than threads, then each deadline starts when a thread takes the task, not when it is queued', async () => {
    // Three tasks of 600 ms on one thread with a 1000 ms deadline: counted from the queue, the
    // second and third would time out.
    const s = sandbox({ taskTimeoutMs: 1000 });
    await s.run(task({}));
    const verdicts = await Promise.all([1, 2, 3].map(() => s.run(task({ how: 'busy', ms: 600 }))));
    expect(verdicts.map((v) => v.ok)).toEqual([true, true, true]);
    expect(outcomes).toEqual(['ok', 'ok', 'ok', 'ok']);
  });

  it('When the sandbox is closed, then queued tasks reject with SandboxClosedError instead of failing the schema', async () => {
    const s = sandbox({ taskTimeoutMs: 5000 });
    await s.run(task({}));
    const running = expect(s.run(task({ how: 'busy', ms: 300 }))).rejects.toBeInstanceOf(SandboxClosedError);
    const queued = expect(s.run(task({}))).rejects.toBeInstanceOf(SandboxClosedError);
    await s.close();
    await running;
    await queued;
    await expect(s.run(task({}))).rejects.toBeInstanceOf(SandboxClosedError);
  });
});

describe('SchemaSandbox with the real checks', () => {
  it('When an output pattern backtracks catastrophically in JavaScript, then the reply is checked in linear time and refused', async () => {
    const s = sandbox({ filename: undefined, threads: 1, memoryMb: 64, taskTimeoutMs: 2000 });
    const outputSchema = { type: 'object', properties: { x: { type: 'string', pattern: '^(a+)+$' } } };
    const verdict = await s.checkReply(outputSchema, JSON.stringify({ x: `${'a'.repeat(5000)}!` }));
    expect(verdict.ok).toBe(false);
    if (!verdict.ok)
      expect(verdict.error).toMatch(/^the response does not match output_schema: \/x must match pattern/);
    expect(await s.checkReply(outputSchema, JSON.stringify({ x: 'aaaa' }))).toEqual({ ok: true });
    expect(outcomes).toEqual(['refused', 'ok']);
  });

  it('When an input pattern would expand to 400 million characters, then the schema is refused by the pattern engine and nothing is generated', async () => {
    const s = sandbox({ filename: undefined, threads: 1, memoryMb: 64 });
    const inputSchema = { type: 'string', pattern: '(a{20000}){20000}' };
    const check = await s.checkSchema(inputSchema);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.error).toMatch(/^cannot be compiled: .*invalid repeat count/);
    const generated = await s.generateInput(inputSchema);
    expect(generated.ok).toBe(false);
    expect(outcomes).toEqual(['refused', 'refused']);
  });

  it('When generating an input needs more memory than the thread has, then generation fails naming the limit', async () => {
    const s = sandbox({ filename: undefined, threads: 1, memoryMb: 16, taskTimeoutMs: 10_000 });
    const generated = await s.generateInput({ type: 'string', minLength: 200_000_000 });
    expect(generated).toEqual({
      ok: false,
      error: 'generating an input from input_schema exceeded the 16 MB memory limit and was stopped',
    });
    expect(outcomes).toEqual(['out_of_memory']);
  });
});
