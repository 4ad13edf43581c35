import type { Pipeline, PipelineDeps, StepOutcome } from '../domain/pipelines/types';

/** What {@link runToCompletion} observed. */
export interface PipelineRun<S, R> {
  result: R;
  /** Every `continue` outcome, in order. */
  steps: Extract<StepOutcome<S, R>, { kind: 'continue' }>[];
  /** The label of the final (done) step. */
  finalLabel: string;
}

/**
 * Runs a pipeline from `init` to `done` the way the runner and market-intel do, one `step` per
 * command, with the state passed through JSON and re-validated by the pipeline's state schema between
 * steps (as it travels through RabbitMQ and the job row).
 * @param pipeline the pipeline
 * @param input the job input (validated with `pipeline.input` first)
 * @param deps LLM, search, logger, clock
 * @param maxSteps guard against a pipeline that never ends (default 100)
 * @param afterStep what happens to the state between steps outside the runner (for scout: market-intel
 *   replacing the items by the stored window after step 0, see `scoutWindow`); gets the state and the
 *   index of the step that produced it
 * @throws whatever a step throws; `Error` when the pipeline does not finish within `maxSteps`
 */
export async function runToCompletion<I, S, R>(
  pipeline: Pipeline<I, S, R>,
  input: I,
  deps: PipelineDeps,
  maxSteps = 100,
  afterStep?: (state: S, stepIndex: number) => S,
): Promise<PipelineRun<S, R>> {
  const parsedInput = pipeline.input.parse(JSON.parse(JSON.stringify(input)));
  let state = pipeline.init(parsedInput);
  const steps: PipelineRun<S, R>['steps'] = [];
  for (let i = 0; i < maxSteps; i += 1) {
    const outcome = await pipeline.step(parsedInput, state, deps);
    if (outcome.kind === 'done')
      return {
        result: pipeline.result.parse(JSON.parse(JSON.stringify(outcome.result))),
        steps,
        finalLabel: outcome.label,
      };
    steps.push(outcome);
    state = pipeline.state.parse(JSON.parse(JSON.stringify(outcome.state)));
    if (afterStep) state = pipeline.state.parse(JSON.parse(JSON.stringify(afterStep(state, i))));
  }
  throw new Error(`${pipeline.kind} did not finish within ${maxSteps} steps`);
}
