import { z } from 'zod';
import { nextProgress } from '../progress';
import type { Pipeline, PipelineDeps, StepOutcome } from './types';

/**
 * The fields every phased pipeline's state ends with (README, "Pipelines"): steps done so far and the
 * progress last reported (integer 0–99; 100 is the terminal event's).
 */
export const PROGRESS_FIELDS = {
  stepsDone: z.number().int().nonnegative(),
  progressPct: z.number().int().min(0).max(99),
};

/** {@link PROGRESS_FIELDS} before step 0. */
const NO_PROGRESS = { stepsDone: 0, progressPct: 0 } as const;

/** The part of a phased pipeline's state that {@link phasedPipeline} and {@link advanceOver} read. */
export interface PhasedState<P extends string = string> {
  /** The phase whose step runs next. */
  phase: P;
  stepsDone: number;
  progressPct: number;
}

/**
 * One step of a phased pipeline: runs one unit of work of its phase from `state` and returns the
 * outcome, never mutating `state` (README, "Pipelines").
 */
export type PhaseStep<I, S, R> = (input: I, state: S, deps: PipelineDeps) => Promise<StepOutcome<S, R>>;

/** What {@link phasedPipeline} builds a pipeline from. */
export interface PhasedPipelineSpec<I, S extends PhasedState<P>, R, P extends string> extends Omit<
  Pipeline<I, S, R>,
  'step' | 'init'
> {
  /** The state before step 0 but for the progress fields (no step done, 0 %): `init` returns a copy. */
  start: Omit<S, keyof typeof NO_PROGRESS>;
  /** The step that runs in each phase. */
  steps: { readonly [K in P]: PhaseStep<I, S, R> };
  /**
   * Asked before the phase's step: an outcome it returns is the step's instead (scout finishes an
   * empty window at once); `undefined` runs the phase's step.
   */
  shortcut?: (
    input: I,
    state: S,
    deps: PipelineDeps,
  ) => StepOutcome<S, R> | Promise<StepOutcome<S, R>> | undefined;
}

/**
 * A pipeline that starts from `spec.start` with no progress, and whose `step` runs the step of the
 * state's phase from `spec.steps` (after `spec.shortcut`, when given) and throws what that step
 * throws (README, "Pipelines", errors).
 */
export function phasedPipeline<I, S extends PhasedState<P>, R, P extends string>(
  spec: PhasedPipelineSpec<I, S, R, P>,
): Pipeline<I, S, R> {
  const { steps, shortcut, start, ...pipeline } = spec;
  return {
    ...pipeline,
    // `start` plus the progress fields is an S; TypeScript cannot see it through Omit of a generic S.
    init: () => structuredClone({ ...start, ...NO_PROGRESS }) as S,
    async step(input, state, deps) {
      return shortcut?.(input, state, deps) ?? steps[state.phase](input, state, deps);
    },
  };
}

/**
 * The `advance` of a phased pipeline: a `continue` outcome with `state` and `patch` merged (neither
 * mutated), one more step done and the progress (README, "Pipelines": integer 1–99, strictly rising)
 * over the steps `plannedSteps` counts for that next state.
 * @param plannedSteps the job's total steps as far as known, given the next state
 */
export function advanceOver<S extends PhasedState, R>(
  plannedSteps: (next: S) => number,
): (state: S, patch: Partial<S>, label: string) => StepOutcome<S, R> {
  return (state, patch, label) => {
    const next: S = { ...state, ...patch, stepsDone: state.stepsDone + 1 };
    const progressPct = nextProgress(state.progressPct, next.stepsDone, plannedSteps(next));
    return { kind: 'continue', state: { ...next, progressPct }, progressPct, label };
  };
}
