import type { JobStatus } from '@repo/schemas';
import { publicJobError, type JobErrorCode, type JobEvent } from './messages';

/**
 * A failure market-intel decides itself (README, "Job state machine"): a dead-lettered step
 * (`delivery_limit`), a job no runner started (`stalled`).
 */
export interface JobFailure {
  type: 'job.failed';
  code: JobErrorCode;
  /** The full text for operators (upstream text included); never shown to agents. */
  detail: string;
  /**
   * When given, the failure applies only to a job still at that step: a late dead letter for a step
   * that another delivery completed changes nothing. It is also named in the public error.
   */
  stepIndex?: number;
}

/** What moves a job: an event from a runner, or a failure market-intel decides. */
export type JobInput = JobEvent | JobFailure;

/** Most characters of a job's operator-only error text (`lastError`). */
export const JOB_LAST_ERROR_MAX = 2000;

/**
 * What a job must be for an input to change it: one of `statuses`, and at step `stepIndex` when that
 * is given. A job that fails its guard ignores the input (a duplicate, a stale or early outcome, an
 * event for a finished job).
 */
export interface JobGuard {
  statuses: readonly JobStatus[];
  stepIndex?: number;
}

/** A job as the state machine sees it. */
export interface JobSnapshot {
  status: JobStatus;
  /** The step the job waits for (0-based): the only step whose outcome it accepts. */
  stepIndex: number;
  /** Progress shown to agents, 0–100. */
  progressPct: number;
  /** When a runner first started the job, or `null`. */
  startedAt: Date | null;
  /** The operator-only text of the last failed attempt, or `null`. */
  lastError: string | null;
}

/** A step whose outcome was applied, as the job's audit trail records it. */
export interface AppliedStep {
  stepIndex: number;
  label: string;
  /** The job's progress once the step was applied, 0–100. */
  progressPct: number;
  runnerId: string;
}

/** A runner began the job: pending -> running. */
export interface StartedTransition {
  type: 'started';
  status: 'running';
  startedAt: Date;
}

/** A step attempt failed and will be retried: only the operator-only error text changes. */
export interface RetryingTransition {
  type: 'retrying';
  lastError: string;
}

/**
 * What an input does to a job:
 * - `unchanged`: nothing (the job fails the input's guard);
 * - `started`, `retrying`: see {@link StartedTransition}, {@link RetryingTransition};
 * - `advanced`: the current step's outcome was `continue`: the job runs on at `stepIndex` (the next
 *   step) from `state`, its progress never lower than before, its last error cleared;
 * - `completed`: the current step's outcome was `done`: the job ends with `result` at 100 %;
 * - `failed`: the job ends with `error` (the public `"<code>: <message>"`, see `publicJobError`) and
 *   `lastError` (the operator-only text, the previous one appended, at most {@link JOB_LAST_ERROR_MAX}
 *   characters).
 */
export type JobTransition =
  | { type: 'unchanged' }
  | StartedTransition
  | RetryingTransition
  | {
      type: 'advanced';
      status: 'running';
      step: AppliedStep;
      stepIndex: number;
      stepLabel: string;
      progressPct: number;
      state: unknown;
      startedAt: Date;
      lastError: null;
    }
  | {
      type: 'completed';
      status: 'completed';
      step: AppliedStep;
      stepIndex: number;
      stepLabel: string;
      progressPct: 100;
      result: unknown;
      startedAt: Date;
      lastError: null;
    }
  | { type: 'failed'; status: 'failed'; code: JobErrorCode; error: string; lastError: string };

const ACTIVE: readonly JobStatus[] = ['pending', 'running'];

/**
 * The guard of an input (README, "Job state machine"): a start applies to a pending job only; a step's
 * outcome or failure only to an active job (pending or running) still at that step, so that a
 * redelivered, stale or early outcome changes nothing; a failure market-intel decides to any active
 * job, or only to one still at its `stepIndex` when that is given. Finished jobs accept nothing.
 * @param input the event or failure
 */
export function jobGuard(input: JobInput): JobGuard {
  if (input.type === 'job.step-started') return { statuses: ['pending'] };
  return input.stepIndex === undefined
    ? { statuses: ACTIVE }
    : { statuses: ACTIVE, stepIndex: input.stepIndex };
}

/**
 * Whether `job` passes `guard`.
 * @param job the job's status and current step
 * @param guard see {@link jobGuard}
 */
export function passesGuard(job: Pick<JobSnapshot, 'status' | 'stepIndex'>, guard: JobGuard): boolean {
  return (
    guard.statuses.includes(job.status) &&
    (guard.stepIndex === undefined || job.stepIndex === guard.stepIndex)
  );
}

/**
 * The transition of an input whose effect does not depend on the job beyond its guard (a start, a
 * retryable step failure), so that it can be applied as one conditional update: `guard` in the
 * condition, `transition` the values set. `null` for the other inputs, which need the job
 * ({@link jobTransition} over the job read under a lock).
 * @param input the event or failure
 */
export function conditionalTransition(
  input: JobInput,
): { guard: JobGuard; transition: StartedTransition | RetryingTransition } | null {
  if (input.type === 'job.step-started') return { guard: jobGuard(input), transition: started(input) };
  if (input.type === 'job.step-failed' && input.retryable)
    return { guard: jobGuard(input), transition: retrying(input) };
  return null;
}

/**
 * The job state machine (README, "Job state machine"): what `input` does to `job`. Pure: market-intel
 * applies the transition to its stored job, in the same transaction as what goes with it (the next
 * step command, the webhook, the refund). A step failure without a code counts as `internal`.
 * @param job the job as stored when the input is applied
 * @param input a runner's event or market-intel's own failure
 * @returns `unchanged` when the job fails the input's guard ({@link jobGuard}), else the transition
 */
export function jobTransition(job: JobSnapshot, input: JobInput): JobTransition {
  if (!passesGuard(job, jobGuard(input))) return { type: 'unchanged' };
  switch (input.type) {
    case 'job.step-started':
      return started(input);
    case 'job.step-failed':
      return input.retryable
        ? retrying(input)
        : failed(
            job,
            input.code ?? 'internal',
            `step ${input.stepIndex} failed: ${input.error}`,
            input.stepIndex,
          );
    case 'job.failed':
      return failed(job, input.code, input.detail, input.stepIndex);
    case 'job.step-completed':
      return applyOutcome(job, input);
  }
}

type StepEvent<T extends JobEvent['type']> = Extract<JobEvent, { type: T }>;

function started(event: StepEvent<'job.step-started'>): StartedTransition {
  return { type: 'started', status: 'running', startedAt: new Date(event.at) };
}

function retrying(event: StepEvent<'job.step-failed'>): RetryingTransition {
  return { type: 'retrying', lastError: `attempt ${event.attempt}: ${event.error}` };
}

function applyOutcome(job: JobSnapshot, event: StepEvent<'job.step-completed'>): JobTransition {
  const { outcome } = event;
  const startedAt = job.startedAt ?? new Date(event.at);
  const step = (progressPct: number): AppliedStep => ({
    stepIndex: event.stepIndex,
    label: outcome.label,
    progressPct,
    runnerId: event.runnerId,
  });
  if (outcome.kind === 'done')
    return {
      type: 'completed',
      status: 'completed',
      step: step(100),
      stepIndex: event.stepIndex + 1,
      stepLabel: outcome.label,
      progressPct: 100,
      result: outcome.result,
      startedAt,
      lastError: null,
    };
  // Progress never drops, whatever a step reports.
  const progressPct = Math.max(job.progressPct, outcome.progressPct);
  return {
    type: 'advanced',
    status: 'running',
    step: step(progressPct),
    stepIndex: event.stepIndex + 1,
    stepLabel: outcome.label,
    progressPct,
    state: outcome.state,
    startedAt,
    lastError: null,
  };
}

function failed(job: JobSnapshot, code: JobErrorCode, detail: string, stepIndex?: number): JobTransition {
  return {
    type: 'failed',
    status: 'failed',
    code,
    error: publicJobError(code, stepIndex),
    lastError: (job.lastError ? `${detail}; last error: ${job.lastError}` : detail).slice(
      0,
      JOB_LAST_ERROR_MAX,
    ),
  };
}
