import type { z } from 'zod';
import type { PipelineDeps } from './types';

/**
 * One structured answer of the model for a step (README, "Pipelines"): `prompt`'s system and user
 * messages under the task name `task`, the answer validated by `schema` (with `@repo/llm`'s repair
 * turn).
 * @param temperature the sampling temperature
 * @returns the validated answer
 * @throws what `deps.llm.complete` throws (README, "Pipelines", errors)
 */
export async function askModel<T>(
  deps: PipelineDeps,
  task: string,
  prompt: { system: string; user: string },
  schema: z.ZodType<T>,
  temperature: number,
): Promise<T> {
  return (await deps.llm.complete({ task, system: prompt.system, user: prompt.user, schema, temperature }))
    .value;
}
