// agent-pay --wait: follows the compute job a paid answer started, loaded only with --wait (it brings
// the typed client package and the progress bar).
import { SingleBar } from 'cli-progress';
import { JobWaitError, waitForJob, type JobOutcome, type JobProgress } from '@repo/api-client';
import { EXIT } from './exit-codes';
import { printable } from './printable';
import { formatUsdc } from './usdc';

/** Where the wait reports its progress and what it reads. */
export interface WaitIo {
  /** Standard error, for progress lines when `terminal` is not a TTY. */
  stderr: (text: string) => void;
  /** The stream the progress bar is drawn on when it is a TTY (agent-pay passes process.stderr). */
  terminal?: NodeJS.WriteStream;
  /** Fetch implementation of the job reads; default the global fetch. */
  fetch?: typeof fetch;
}

/** How the wait ended: the exit code, one line for stderr on failure, and the job for `--json`. */
export interface WaitResult {
  /** {@link EXIT}: `ok` when the job completed, `jobFailed` otherwise. */
  exitCode: number;
  /** Set when the job failed or could not be followed: one line, without the `agent-pay: ` prefix. */
  message?: string;
  /** What the job came to, for `--json` and the text output. */
  job: {
    jobId: string | null;
    status: 'completed' | 'failed' | 'unknown';
    /** A completed job's `result` (for prove/debate, `verdict` and `report`). */
    result?: Record<string, unknown>;
    /** A failed job's parsed `error`. */
    failure?: { code: string; message: string; step: number | null };
    /** A failed job's refund: amount in USDC and atomic units, status and transaction. */
    refund?: Record<string, unknown> | null;
    /** Seconds from the start of the wait to the end. */
    elapsedSeconds: number;
  };
}

/**
 * Follows the job of a compute answer (`202 { jobId, statusUrl }`; packages/agent-client/README.md,
 * "Waiting for a job") with `waitForJob` from `@repo/api-client` until it completes or fails, showing
 * its progress: a progress bar when `io.terminal` is a TTY, else one line per change on stderr.
 * @param url the URL that answered (the job is read from the same service)
 * @param body the answer's body
 * @param timeoutMs how long to follow the job, in milliseconds (waitForJob's default: 2 hours)
 * @returns `EXIT.ok` with the result, or `EXIT.jobFailed` with the failure and its refund, a job the
 *   service does not know, an answer without `jobId`, or a wait that timed out
 */
export async function followJob(
  url: string,
  body: unknown,
  io: WaitIo,
  timeoutMs?: number,
): Promise<WaitResult> {
  const started = Date.now();
  const elapsedSeconds = () => Math.round((Date.now() - started) / 1000);
  const answer = (typeof body === 'object' && body !== null ? body : {}) as {
    jobId?: unknown;
    statusUrl?: unknown;
  };
  if (typeof answer.jobId !== 'string' || answer.jobId === '') {
    return {
      exitCode: EXIT.jobFailed,
      message: `--wait: the answer of ${url} names no jobId to follow`,
      job: { jobId: null, status: 'unknown', elapsedSeconds: 0 },
    };
  }
  const jobId = answer.jobId;
  // Printed in progress and failure lines: no control characters from the server.
  const shownId = printable(jobId, 100);
  const progress = progressDisplay(shownId, io);
  let outcome: JobOutcome;
  try {
    outcome = await waitForJob(jobId, {
      baseUrl: serviceBaseUrl(url, jobId, answer.statusUrl),
      onProgress: progress.update,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(io.fetch ? { fetch: io.fetch } : {}),
    });
  } catch (error) {
    progress.stop();
    const reason = error instanceof JobWaitError || error instanceof Error ? error.message : String(error);
    return {
      exitCode: EXIT.jobFailed,
      message: `--wait: ${reason}`,
      job: { jobId, status: 'unknown', elapsedSeconds: elapsedSeconds() },
    };
  }
  progress.stop();
  if (outcome.status === 'completed') {
    return {
      exitCode: EXIT.ok,
      job: { jobId, status: 'completed', result: outcome.result, elapsedSeconds: elapsedSeconds() },
    };
  }
  const { failure, refund } = outcome;
  const refundView = refund
    ? {
        status: refund.status,
        amount: formatUsdc(BigInt(refund.amount)),
        amountAtomic: refund.amount,
        network: refund.network,
        to: refund.to,
        transaction: refund.transaction,
        reason: refund.reason,
      }
    : null;
  const refunded = refundView
    ? `; refund of ${refundView.amount} USDC ${printable(refundView.status)}${refundView.transaction ? ` (transaction ${printable(refundView.transaction)})` : ''}`
    : '';
  return {
    exitCode: EXIT.jobFailed,
    message: `job ${shownId} failed: ${printable(failure.raw || failure.code)}${refunded}`,
    job: {
      jobId,
      status: 'failed',
      failure: { code: failure.code, message: failure.message, step: failure.step ?? null },
      refund: refundView,
      elapsedSeconds: elapsedSeconds(),
    },
  };
}

/**
 * The service's base URL for `waitForJob`: the `statusUrl` of the answer (resolved against the URL
 * called) without its `api/v1/jobs/<id>` tail when it is on the same origin, else the origin of the
 * URL called (an answer does not send the polling to another host).
 */
export function serviceBaseUrl(url: string, jobId: string, statusUrl: unknown): string {
  const origin = new URL(url).origin;
  if (typeof statusUrl === 'string') {
    try {
      const resolved = new URL(statusUrl, url);
      // Another origin is not followed: the answer must not send the polling elsewhere.
      if (resolved.origin !== origin) return `${origin}/`;
      resolved.search = '';
      const tail = `api/v1/jobs/${encodeURIComponent(jobId)}`;
      if (resolved.pathname.endsWith(tail))
        return `${resolved.origin}${resolved.pathname.slice(0, -tail.length)}`;
    } catch {
      // not a URL: fall back to the origin
    }
  }
  return `${origin}/`;
}

/** The progress display: cli-progress's bar on a TTY, one plain line per change elsewhere. */
function progressDisplay(jobId: string, io: WaitIo): { update: (p: JobProgress) => void; stop: () => void } {
  if (io.terminal?.isTTY) {
    const bar = new SingleBar({
      stream: io.terminal,
      // cli-progress reads {tokens} in the format: none may come from the server.
      format: `job ${jobId.replace(/[{}]/g, '?')} [{bar}] {percentage}% {state} {duration}s`,
      hideCursor: true,
      clearOnComplete: false,
    });
    let started = false;
    return {
      update: (p) => {
        if (!started) {
          bar.start(100, p.progressPct, { state: printable(p.status, 20) });
          started = true;
        } else bar.update(p.progressPct, { state: printable(p.status, 20) });
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  return {
    update: (p) =>
      io.stderr(
        `job ${jobId} ${printable(p.status, 20)} ${printable(p.progressPct, 5)} % after ${Math.round(p.elapsedMs / 1000)} s\n`,
      ),
    stop: () => undefined,
  };
}
