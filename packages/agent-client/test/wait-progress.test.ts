import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { followJob, serviceBaseUrl } from '../src/wait';
import { EXIT } from '../src/exit-codes';

// followJob against a job endpoint that answers the states a test sets: the progress bar on a
// terminal, and a failed job with its refund.
let server: Server;
let base: string;
/** The answers of GET /api/v1/jobs/{id}, in turn; the last one repeats. */
let answers: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const job = answers.length > 1 ? answers.shift() : answers[0];
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ...job, jobId: req.url?.split('/').pop() }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function job(
  status: string,
  progressPct: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    endpoint: 'POST /api/v1/prove/debate',
    status,
    progressPct,
    result: null,
    error: null,
    createdAt: new Date().toISOString(),
    completedAt: null,
    txHash: 'sig',
    refund: null,
    ...extra,
  };
}

/** A stream that says it is a terminal, as process.stderr does on one. */
function fakeTerminal(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough() as unknown as NodeJS.WriteStream & PassThrough;
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  Object.assign(stream, { isTTY: true, columns: 100, rows: 30 });
  return { stream, text: () => text };
}

describe('agent-pay --wait progress and failures', () => {
  it('When the progress stream is a terminal, then a progress bar is drawn up to 100 % and no progress line goes to stderr', async () => {
    answers = [job('running', 40), job('completed', 100, { result: { verdict: 'APPROVED' } })];
    const terminal = fakeTerminal();
    let stderr = '';
    const waited = await followJob(
      `${base}/api/v1/prove/debate`,
      { jobId: 'job-tty', statusUrl: '/api/v1/jobs/job-tty' },
      { stderr: (t) => (stderr += t), terminal: terminal.stream },
    );
    expect(waited).toMatchObject({ exitCode: EXIT.ok, job: { jobId: 'job-tty', status: 'completed' } });
    expect(stderr).toBe('');
    expect(terminal.text()).toContain('job job-tty [');
    expect(terminal.text()).toContain('40% running');
    expect(terminal.text()).toContain('100% completed');
  });

  it('When the job fails with a refund, then exit 7 names the reason and the refund in USDC', async () => {
    answers = [
      job('failed', 60, {
        error: 'llm_unavailable: the model did not answer (step 3)',
        refund: {
          status: 'confirmed',
          amount: '25000000',
          network: 'solana',
          to: 'AgentTokenAccount',
          transaction: 'refundSig',
          confirmedAt: new Date().toISOString(),
          reason: null,
        },
      }),
    ];
    const waited = await followJob(
      `${base}/api/v1/prove/debate`,
      { jobId: 'job-failed' },
      { stderr: () => undefined },
    );
    expect(waited).toEqual({
      exitCode: EXIT.jobFailed,
      message:
        'job job-failed failed: llm_unavailable: the model did not answer (step 3); refund of 25.00 USDC confirmed (transaction refundSig)',
      job: {
        jobId: 'job-failed',
        status: 'failed',
        failure: { code: 'llm_unavailable', message: 'the model did not answer', step: 3 },
        refund: {
          status: 'confirmed',
          amount: '25.00',
          amountAtomic: '25000000',
          network: 'solana',
          to: 'AgentTokenAccount',
          transaction: 'refundSig',
          reason: null,
        },
        elapsedSeconds: expect.any(Number),
      },
    });
  });

  it('When the answer names no jobId, then exit 7 without reading anything; the base URL comes from statusUrl', async () => {
    expect(await followJob(`${base}/x`, { status: 'ok' }, { stderr: () => undefined })).toMatchObject({
      exitCode: EXIT.jobFailed,
      message: `--wait: the answer of ${base}/x names no jobId to follow`,
    });
    expect(serviceBaseUrl('https://api.example/mi/api/v1/prove/debate', 'j 1', '/mi/api/v1/jobs/j%201')).toBe(
      'https://api.example/mi/',
    );
    expect(serviceBaseUrl('https://api.example/api/v1/prove/debate?network=devnet', 'j', 42)).toBe(
      'https://api.example/',
    );
    // A statusUrl on another origin does not move the polling there.
    expect(
      serviceBaseUrl('https://api.example/api/v1/prove/debate', 'j', 'http://169.254.169.254/api/v1/jobs/j'),
    ).toBe('https://api.example/');
  });

  it('When the server sends control characters in the job, then the lines printed carry none', async () => {
    answers = [
      job('running\u001b[2J', 10),
      job('failed', 10, { error: 'boom\u001b]0;owned\u0007\nsecond line' }),
    ];
    let stderr = '';
    const waited = await followJob(
      `${base}/api/v1/prove/debate`,
      { jobId: 'job\u001b[31m' },
      { stderr: (t) => (stderr += t) },
    );
    expect([...stderr].filter((c) => c !== '\n' && c.charCodeAt(0) < 0x20)).toEqual([]);
    expect(stderr.split('\n').slice(0, 2)).toEqual([
      expect.stringMatching(/^job job\?\[31m running\?\[2J 10 % after \d+ s$/),
      expect.stringMatching(/^job job\?\[31m failed 10 % after \d+ s$/),
    ]);
    expect(waited.message).toBe('job job?[31m failed: boom?]0;owned??second line');
  });
});
