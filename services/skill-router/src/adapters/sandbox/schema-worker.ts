import { checkJsonSchema, checkReply, clip, generateInput } from '../../domain/json-schema';
import type { Generated, Verdict } from '../../domain/verification';
import type { SandboxTask } from './tasks';

/** Longest reason sent back; registrant-controlled text ends up in public skill details. */
const MAX_REASON = 500;

const fail = (error: string) => ({ ok: false as const, error: clip(error, MAX_REASON) });

/**
 * The entry point of a schema sandbox thread (piscina calls the default export once per task). It
 * runs under the thread's `resourceLimits`; the sandbox terminates it at the task's deadline.
 * @returns the task's answer (see {@link SandboxTask}); never throws for bad schemas or replies
 */
export default function runSandboxTask(task: SandboxTask): Verdict | Generated {
  switch (task.kind) {
    case 'check_schema': {
      const check = checkJsonSchema(task.schema);
      return check.ok ? { ok: true } : fail(check.error);
    }
    case 'generate_input': {
      const check = checkJsonSchema(task.inputSchema);
      if (!check.ok) return fail(`input_schema ${check.error}`);
      const input = generateInput(task.inputSchema as object, check.validate);
      return input.ok ? input : fail(input.error);
    }
    case 'check_reply': {
      const check = checkJsonSchema(task.outputSchema);
      if (!check.ok) return fail(`output_schema ${check.error}`);
      const verdict = checkReply(check.validate, task.body);
      return verdict.ok ? verdict : fail(verdict.error);
    }
  }
}
