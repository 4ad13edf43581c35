import { threadId } from 'node:worker_threads';
import type { SandboxTask } from '../../src/adapters/sandbox/tasks';

/**
 * A sandbox worker that misbehaves on demand, for the pool's own tests: a `check_schema` task whose
 * schema is `{ how }` allocates without end (`hog`), loops forever (`spin`), keeps its thread busy for
 * `ms` milliseconds and then answers (`busy`) or throws (`throw`); anything else answers `ok`.
 */
export default function hostileWorker(task: SandboxTask): { ok: true; thread: number } {
  const { how, ms = 0 } = (task.kind === 'check_schema' ? task.schema : {}) as { how?: string; ms?: number };
  if (how === 'hog') {
    const kept: string[] = [];
    for (;;) kept.push(`${Math.random()}`.repeat(1000));
  }
  if (how === 'spin') for (;;) Math.random();
  if (how === 'busy') for (const until = Date.now() + ms; Date.now() < until;) Math.random();
  if (how === 'throw') throw new Error('boom');
  return { ok: true, thread: threadId };
}
