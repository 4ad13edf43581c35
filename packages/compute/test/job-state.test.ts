import type { JobStatus } from '@repo/schemas';
import {
  conditionalTransition,
  jobGuard,
  jobTransition,
  passesGuard,
  JOB_LAST_ERROR_MAX,
  type JobInput,
  type JobSnapshot,
} from '../src';

const AT = '2026-11-25T10:00:00.000Z';
const EARLIER = new Date('2026-11-25T09:00:00.000Z');
const STATUSES: JobStatus[] = ['pending', 'running', 'completed', 'failed'];

function job(overrides: Partial<JobSnapshot> = {}): JobSnapshot {
  return {
    status: 'running',
    stepIndex: 2,
    progressPct: 40,
    startedAt: EARLIER,
    lastError: null,
    ...overrides,
  };
}
const base = (stepIndex: number) => ({
  jobId: 'job_0123456789abcdef',
  stepIndex,
  runnerId: 'runner-1',
  at: AT,
});
const started = (stepIndex = 0): JobInput => ({ type: 'job.step-started', ...base(stepIndex) });
const continued = (stepIndex: number, progressPct: number): JobInput => ({
  type: 'job.step-completed',
  ...base(stepIndex),
  outcome: { kind: 'continue', state: { n: stepIndex + 1 }, progressPct, label: `step ${stepIndex}` },
});
const done = (stepIndex: number): JobInput => ({
  type: 'job.step-completed',
  ...base(stepIndex),
  outcome: { kind: 'done', result: { verdict: 'APPROVED' }, label: 'report' },
});
const stepFailed = (stepIndex: number, retryable: boolean, code?: 'llm_request'): JobInput => ({
  type: 'job.step-failed',
  ...base(stepIndex),
  attempt: 2,
  retryable,
  ...(code ? { code } : {}),
  error: 'LLM answered 400 at https://llm.internal/v1',
});

describe('Starts', () => {
  it('When a runner starts a pending job, then it is running from the time of the event', () => {
    expect(jobTransition(job({ status: 'pending', stepIndex: 0, startedAt: null }), started())).toEqual({
      type: 'started',
      status: 'running',
      startedAt: new Date(AT),
    });
  });

  it('When a start arrives for a job that is running or finished, then nothing changes, whatever its step', () => {
    for (const status of ['running', 'completed', 'failed'] as const)
      expect(jobTransition(job({ status }), started(2))).toEqual({ type: 'unchanged' });
  });
});

describe('Step outcomes', () => {
  it('When the current step continues, then the job waits for the next step with the new state, progress and label, its last error cleared', () => {
    const transition = jobTransition(job({ lastError: 'attempt 1: timeout' }), continued(2, 55));
    expect(transition).toEqual({
      type: 'advanced',
      status: 'running',
      step: { stepIndex: 2, label: 'step 2', progressPct: 55, runnerId: 'runner-1' },
      stepIndex: 3,
      stepLabel: 'step 2',
      progressPct: 55,
      state: { n: 3 },
      startedAt: EARLIER,
      lastError: null,
    });
  });

  it('When a step reports less progress than the job shows, then the progress stays where it was', () => {
    const transition = jobTransition(job({ progressPct: 40 }), continued(2, 30));
    expect(transition).toMatchObject({ type: 'advanced', progressPct: 40, step: { progressPct: 40 } });
  });

  it('When a pending job gets its first outcome before its start event, then it runs from the time of the outcome', () => {
    const transition = jobTransition(
      job({ status: 'pending', stepIndex: 0, startedAt: null }),
      continued(0, 10),
    );
    expect(transition).toMatchObject({ type: 'advanced', status: 'running', startedAt: new Date(AT) });
  });

  it('When the current step is done, then the job completes at 100 % with the result', () => {
    expect(jobTransition(job(), done(2))).toEqual({
      type: 'completed',
      status: 'completed',
      step: { stepIndex: 2, label: 'report', progressPct: 100, runnerId: 'runner-1' },
      stepIndex: 3,
      stepLabel: 'report',
      progressPct: 100,
      result: { verdict: 'APPROVED' },
      startedAt: EARLIER,
      lastError: null,
    });
  });

  it('When an outcome is redelivered, stale or early (not the current step), then nothing changes', () => {
    for (const stepIndex of [0, 1, 3, 7]) {
      expect(jobTransition(job(), continued(stepIndex, 90))).toEqual({ type: 'unchanged' });
      expect(jobTransition(job(), done(stepIndex))).toEqual({ type: 'unchanged' });
    }
  });

  it('When an outcome arrives for a finished job, then nothing changes, even for its current step', () => {
    for (const status of ['completed', 'failed'] as const) {
      expect(jobTransition(job({ status }), continued(2, 90))).toEqual({ type: 'unchanged' });
      expect(jobTransition(job({ status }), done(2))).toEqual({ type: 'unchanged' });
    }
  });
});

describe('Failures', () => {
  it('When the current step fails with a retryable error, then only the operator-only error text changes', () => {
    expect(jobTransition(job(), stepFailed(2, true))).toEqual({
      type: 'retrying',
      lastError: 'attempt 2: LLM answered 400 at https://llm.internal/v1',
    });
  });

  it('When the current step fails for good, then the job fails with its code and step in public and the upstream text, the previous error appended, for operators', () => {
    expect(
      jobTransition(job({ lastError: 'attempt 1: timeout' }), stepFailed(2, false, 'llm_request')),
    ).toEqual({
      type: 'failed',
      status: 'failed',
      code: 'llm_request',
      error: 'llm_request: the language model refused a request of this job (step 2)',
      lastError: 'step 2 failed: LLM answered 400 at https://llm.internal/v1; last error: attempt 1: timeout',
    });
  });

  it('When a step failure carries no code, then it counts as internal', () => {
    expect(jobTransition(job(), stepFailed(2, false))).toMatchObject({
      type: 'failed',
      code: 'internal',
      error: 'internal: an internal error stopped this job (step 2)',
    });
  });

  it('When a step failure is for another step or a finished job, then nothing changes', () => {
    for (const retryable of [true, false]) {
      expect(jobTransition(job(), stepFailed(1, retryable))).toEqual({ type: 'unchanged' });
      expect(jobTransition(job({ status: 'completed' }), stepFailed(2, retryable))).toEqual({
        type: 'unchanged',
      });
    }
  });

  it('When market-intel fails a job without naming a step, then any active job fails, whatever its step, and no step is named in public', () => {
    for (const status of ['pending', 'running'] as const)
      expect(
        jobTransition(job({ status, stepIndex: 5 }), {
          type: 'job.failed',
          code: 'stalled',
          detail: 'no runner',
        }),
      ).toEqual({
        type: 'failed',
        status: 'failed',
        code: 'stalled',
        error: 'stalled: the job made no progress in time',
        lastError: 'no runner',
      });
  });

  it('When market-intel fails a job at a step it has already left (a late dead letter), or a finished job, then nothing changes', () => {
    const deadLetter: JobInput = { type: 'job.failed', code: 'delivery_limit', detail: 'dead', stepIndex: 1 };
    expect(jobTransition(job({ stepIndex: 2 }), deadLetter)).toEqual({ type: 'unchanged' });
    expect(jobTransition(job({ stepIndex: 1 }), deadLetter)).toMatchObject({
      type: 'failed',
      error: 'delivery_limit: a step kept failing until its retries ran out (step 1)',
    });
    expect(jobTransition(job({ status: 'failed', stepIndex: 1 }), deadLetter)).toEqual({ type: 'unchanged' });
  });

  it('When the operator-only text grows too long, then it is cut at the limit', () => {
    const transition = jobTransition(job({ lastError: 'x'.repeat(3000) }), {
      type: 'job.failed',
      code: 'internal',
      detail: 'boom',
    });
    expect(transition.type === 'failed' && transition.lastError.length).toBe(JOB_LAST_ERROR_MAX);
  });
});

describe('Guards and conditional updates', () => {
  const inputs: JobInput[] = [
    started(0),
    started(2),
    continued(2, 50),
    done(2),
    stepFailed(2, true),
    stepFailed(1, true),
    stepFailed(2, false),
    { type: 'job.failed', code: 'stalled', detail: 'late' },
    { type: 'job.failed', code: 'delivery_limit', detail: 'dead', stepIndex: 2 },
  ];

  it('When a job fails an input guard, then the transition is unchanged; when it passes, it is not', () => {
    for (const status of STATUSES)
      for (const stepIndex of [0, 1, 2, 3])
        for (const input of inputs) {
          const snapshot = job({ status, stepIndex, startedAt: status === 'pending' ? null : EARLIER });
          const passes = passesGuard(snapshot, jobGuard(input));
          expect(jobTransition(snapshot, input).type === 'unchanged').toBe(!passes);
        }
  });

  it('When an input is applied as a conditional update, then it sets what the state machine decides for every job its guard admits', () => {
    for (const input of inputs) {
      const conditional = conditionalTransition(input);
      if (!conditional) continue;
      for (const status of STATUSES)
        for (const stepIndex of [0, 1, 2, 3]) {
          const snapshot = job({ status, stepIndex, startedAt: null });
          const expected = passesGuard(snapshot, conditional.guard)
            ? conditional.transition
            : { type: 'unchanged' };
          expect(jobTransition(snapshot, input)).toEqual(expected);
        }
    }
  });

  it('When an input needs the job to decide (an outcome, a failure for good), then it has no conditional update', () => {
    expect(conditionalTransition(continued(2, 50))).toBeNull();
    expect(conditionalTransition(done(2))).toBeNull();
    expect(conditionalTransition(stepFailed(2, false))).toBeNull();
    expect(conditionalTransition({ type: 'job.failed', code: 'stalled', detail: 'late' })).toBeNull();
  });

  it('When the guards are read, then a start needs a pending job and everything else an active job, at the step named', () => {
    expect(jobGuard(started(3))).toEqual({ statuses: ['pending'] });
    expect(jobGuard(continued(3, 10))).toEqual({ statuses: ['pending', 'running'], stepIndex: 3 });
    expect(jobGuard({ type: 'job.failed', code: 'stalled', detail: '' })).toEqual({
      statuses: ['pending', 'running'],
    });
  });
});
