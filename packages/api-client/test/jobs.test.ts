import {
  JobNotFoundError,
  JobWaitTimeoutError,
  parseJobFailure,
  waitForJob,
  type JobProgress,
} from '../src/index';
import { startJobServer, type JobServer } from './support/job-server';

// waitForJob against a local server speaking market-intel's job status contract (GET /api/v1/jobs/{jobId}).
let server: JobServer;
const refund = {
  status: 'pending' as const,
  amount: '25000000',
  network: 'solana' as const,
  to: 'Agent1111111111111111111111111111111111111',
  transaction: null,
  confirmedAt: null,
  reason: null,
};

beforeAll(async () => {
  server = await startJobServer({
    job_debate: [
      { job: { status: 'pending', progressPct: 0 } },
      { job: { status: 'running', progressPct: 20 } },
      { job: { status: 'running', progressPct: 20 } },
      { job: { status: 'running', progressPct: 60 } },
      {
        job: {
          status: 'completed',
          progressPct: 100,
          result: { verdict: 'APPROVED', report: { output: 'roadmap', summary: 'canvas' } },
          completedAt: '2026-11-28T18:00:00.000Z',
        },
      },
    ],
    job_busy: [
      { job: { status: 'running', progressPct: 10 } },
      { status: 429, headers: { 'retry-after': '1' } },
      { job: { status: 'completed', progressPct: 100, result: { ideas: [] } } },
    ],
    job_failed: [
      { job: { status: 'running', progressPct: 40 } },
      {
        job: {
          status: 'failed',
          progressPct: 40,
          error: 'llm_unavailable: the LLM is unreachable (step 3)',
          refund,
        },
      },
      {
        job: {
          status: 'failed',
          progressPct: 40,
          error: 'llm_unavailable: the LLM is unreachable (step 3)',
          refund: {
            ...refund,
            status: 'confirmed',
            transaction: '4'.repeat(88),
            confirmedAt: '2026-11-28T18:01:00.000Z',
          },
        },
      },
    ],
    job_slow: [{ job: { status: 'running', progressPct: 5 } }],
  });
});
afterAll(() => server?.close());

const fast = { initialDelayMs: 5, maxDelayMs: 20 };

describe('waitForJob', () => {
  it('When a debate runs to its verdict, then each change of progress is reported once, in order, and the result is returned', async () => {
    const seen: JobProgress[] = [];
    const outcome = await waitForJob('job_debate', {
      baseUrl: server.baseUrl,
      ...fast,
      onProgress: (p) => seen.push(p),
    });
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') throw new Error('unreachable');
    expect(outcome.result).toEqual({ verdict: 'APPROVED', report: { output: 'roadmap', summary: 'canvas' } });
    expect(outcome.job.completedAt).toBe('2026-11-28T18:00:00.000Z');
    expect(seen.map((p) => [p.status, p.progressPct])).toEqual([
      ['pending', 0],
      ['running', 20],
      ['running', 60],
      ['completed', 100],
    ]);
    expect(server.reads.get('job_debate')).toHaveLength(5);
  });

  it('When the service answers 429 with Retry-After, then the next read waits that long', async () => {
    const outcome = await waitForJob('job_busy', { baseUrl: server.baseUrl, ...fast });
    expect(outcome.status).toBe('completed');
    const [, limited, after] = server.reads.get('job_busy')!;
    expect(after! - limited!).toBeGreaterThanOrEqual(990);
  });

  it('When the job fails and its refund is pending, then with waitForRefund it returns the parsed failure and the confirmed refund', async () => {
    const outcome = await waitForJob('job_failed', { baseUrl: server.baseUrl, ...fast, waitForRefund: true });
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') throw new Error('unreachable');
    expect(outcome.failure).toEqual({
      code: 'llm_unavailable',
      message: 'the LLM is unreachable',
      step: 3,
      raw: 'llm_unavailable: the LLM is unreachable (step 3)',
    });
    expect(outcome.refund).toMatchObject({
      status: 'confirmed',
      amount: '25000000',
      transaction: '4'.repeat(88),
    });
  });

  it('When the job is unknown, then it throws JobNotFoundError', async () => {
    await expect(waitForJob('job_nope', { baseUrl: server.baseUrl, ...fast })).rejects.toBeInstanceOf(
      JobNotFoundError,
    );
  });

  it('When the job does not end in time, then it throws JobWaitTimeoutError with the last state', async () => {
    const error = await waitForJob('job_slow', { baseUrl: server.baseUrl, ...fast, timeoutMs: 100 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(JobWaitTimeoutError);
    expect((error as JobWaitTimeoutError).lastJob).toMatchObject({ status: 'running', progressPct: 5 });
  });

  it('When the signal aborts, then the wait rejects with its reason', async () => {
    const controller = new AbortController();
    const waiting = waitForJob('job_slow', {
      baseUrl: server.baseUrl,
      initialDelayMs: 60_000,
      signal: controller.signal,
      onProgress: () => controller.abort(new Error('stopped by the caller')),
    });
    await expect(waiting).rejects.toThrow('stopped by the caller');
  });

  it('When the service cannot be reached until the deadline, then it times out instead of throwing the network error', async () => {
    const error = await waitForJob('job_x', { baseUrl: 'http://127.0.0.1:9', ...fast, timeoutMs: 150 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(JobWaitTimeoutError);
  });

  it('When an error does not have the documented shape, then its code is unknown and the text is kept', () => {
    expect(parseJobFailure('something odd')).toEqual({
      code: 'unknown',
      message: 'something odd',
      step: undefined,
      raw: 'something odd',
    });
  });
});
