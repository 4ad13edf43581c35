import { COMPUTE_TOPOLOGY, type JobEvent } from '@repo/compute';
import { waitFor } from '@repo/queue/testing';
import { useComputeApi, HEALTHY, IDEA, json } from './support/compute-api';

// What runner events do to a job, sent by the test over RabbitMQ as a runner would.
const api = useComputeApi('market_intel_compute_job_state_machine_test');
const { beat, healthStatus } = api;

describe('Job state machine (runner events over RabbitMQ)', () => {
  const at = () => new Date().toISOString();
  async function paidJob(): Promise<string> {
    await beat(HEALTHY, null);
    await waitFor('healthy', async () => (await healthStatus()) === 200);
    const signature = await api.h.transfer({ amountAtomic: 25_000_000n });
    const res = await api.h.postWithProof('/api/v1/prove/debate', { idea: IDEA }, signature);
    expect(res.status).toBe(202);
    return String((await json(res)).jobId);
  }
  async function emit(event: JobEvent): Promise<void> {
    await api.runner.publish(COMPUTE_TOPOLOGY.exchanges.events, event.type, event, { type: event.type });
  }
  async function job(jobId: string): Promise<Record<string, unknown>> {
    return json(await fetch(`${api.h.baseUrl}/api/v1/jobs/${jobId}`));
  }
  const base = (jobId: string, stepIndex: number) => ({
    jobId,
    stepIndex,
    runnerId: 'test-runner',
    at: at(),
  });
  /** Runner events market-intel consumed so far, applied or not (its own counter on /metrics). */
  async function eventsConsumed(): Promise<number> {
    const text = await api.h.service.metrics.registry.metrics();
    return text
      .split('\n')
      .filter((line) => line.startsWith('compute_job_events_total{'))
      .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
  }

  it('When step outcomes arrive twice, out of order or after the end, then each step is applied once, progress never drops and the terminal state stays final', async () => {
    const jobId = await paidJob();
    await emit({ type: 'job.step-started', ...base(jobId, 0) });
    await waitFor('running', async () => (await job(jobId)).status === 'running');
    const step0 = {
      type: 'job.step-completed' as const,
      ...base(jobId, 0),
      outcome: { kind: 'continue' as const, state: { n: 1 }, progressPct: 40, label: 'round 1' },
    };
    await emit(step0);
    await emit(step0); // a redelivery after a runner crash
    await waitFor('step 0 applied', async () => (await job(jobId)).progressPct === 40);
    // A lower progress figure for the next step is never shown.
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 1),
      outcome: { kind: 'continue', state: { n: 2 }, progressPct: 30, label: 'round 2' },
    });
    await waitFor('step 1 applied', async () => (await api.h.service.jobs.appliedSteps(jobId)).length === 2);
    expect((await job(jobId)).progressPct).toBe(40);
    // An outcome for a step that is not the current one (stale or from the future) changes nothing.
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 7),
      outcome: { kind: 'done', result: { verdict: 'APPROVED' }, label: 'bogus' },
    });
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 2),
      outcome: { kind: 'done', result: { verdict: 'REJECTED' }, label: 'report' },
    });
    await waitFor('completed', async () => (await job(jobId)).status === 'completed');
    // Late events after the terminal state: a failure, a duplicate outcome, a start.
    const seen = await eventsConsumed();
    await emit({
      type: 'job.step-failed',
      ...base(jobId, 2),
      attempt: 2,
      retryable: false,
      error: 'too late',
    });
    await emit({
      type: 'job.step-completed',
      ...base(jobId, 2),
      outcome: { kind: 'done', result: { verdict: 'APPROVED' }, label: 'again' },
    });
    await emit({ type: 'job.step-started', ...base(jobId, 0) });
    await waitFor('the late events consumed', async () => (await eventsConsumed()) >= seen + 3);
    expect(await job(jobId)).toMatchObject({
      status: 'completed',
      progressPct: 100,
      result: { verdict: 'REJECTED' },
      error: null,
    });
    expect(await api.h.service.jobs.appliedSteps(jobId)).toEqual([
      { stepIndex: 0, label: 'round 1', progressPct: 40 },
      { stepIndex: 1, label: 'round 2', progressPct: 40 },
      { stepIndex: 2, label: 'report', progressPct: 100 },
    ]);
  });

  it('When a step fails with a retryable error, then the job keeps running with the last error; a non-retryable failure fails it with its stable code and short message, never the upstream text', async () => {
    const jobId = await paidJob();
    await emit({
      type: 'job.step-failed',
      ...base(jobId, 0),
      attempt: 1,
      retryable: true,
      error: 'LLM timed out',
    });
    await waitFor(
      'last error kept',
      async () =>
        (await api.h.db.agentJob.findUnique({ where: { id: jobId } }))?.lastError ===
        'attempt 1: LLM timed out',
    );
    expect((await job(jobId)).status).toBe('pending');
    await emit({
      type: 'job.step-failed',
      ...base(jobId, 0),
      attempt: 2,
      retryable: false,
      code: 'llm_request',
      error: 'LLM answered 400 at https://llm.internal/v1 for key sk-live-abc: context too long',
    });
    await waitFor('failed', async () => (await job(jobId)).status === 'failed');
    const failed = await job(jobId);
    expect(failed).toMatchObject({
      status: 'failed',
      result: null,
      error: 'llm_request: the language model refused a request of this job (step 0)',
    });
    expect(failed.completedAt).not.toBeNull();
    // The upstream text stays for operators only.
    expect((await api.h.db.agentJob.findUnique({ where: { id: jobId } }))?.lastError).toContain(
      'llm.internal',
    );
  });
});
