import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentJob } from '../../src/jobs';

/** One scripted answer of GET /api/v1/jobs/{jobId}: a job state, or a bare status with headers. */
export type ScriptedAnswer =
  | { job: Partial<AgentJob>; headers?: Record<string, string> }
  | { status: number; headers?: Record<string, string>; body?: unknown };

/** A local server speaking market-intel's job status contract from scripts, counting reads. */
export interface JobServer {
  baseUrl: string;
  /** When each read of a job arrived (ms since epoch). */
  reads: Map<string, number[]>;
  close(): Promise<void>;
}

/**
 * Starts a server answering `GET /api/v1/jobs/{jobId}` with the next answer of that job's script (the
 * last one repeated), as market-intel's AgentJob; unknown jobs answer the error envelope's 404.
 */
export async function startJobServer(scripts: Record<string, ScriptedAnswer[]>): Promise<JobServer> {
  const reads = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    const match = /^\/api\/v1\/jobs\/([^/?]+)$/.exec(req.url ?? '');
    const jobId = match?.[1] ? decodeURIComponent(match[1]) : undefined;
    const script = jobId === undefined ? undefined : scripts[jobId];
    if (!jobId || !script) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'unknown job', code: 'not_found', requestId: 'r1' }));
      return;
    }
    const seen = reads.get(jobId) ?? [];
    seen.push(Date.now());
    reads.set(jobId, seen);
    const answer = script[Math.min(seen.length - 1, script.length - 1)]!;
    if ('status' in answer) {
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(JSON.stringify(answer.body ?? { error: 'busy', code: 'rate_limited', requestId: 'r2' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', ...answer.headers });
    res.end(JSON.stringify(buildJob({ jobId, ...answer.job })));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    reads,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An AgentJob with every field the contract requires. */
export function buildJob(overrides: Partial<AgentJob> = {}): AgentJob {
  return {
    jobId: 'job_test',
    endpoint: 'POST /api/v1/prove/debate',
    status: 'pending',
    progressPct: 0,
    result: null,
    error: null,
    createdAt: '2026-11-28T17:00:00.000Z',
    completedAt: null,
    txHash: '5'.repeat(88),
    refund: null,
    ...overrides,
  };
}
