// Following a compute job to its end (README, "Waiting for a job"): polls GET /api/v1/jobs/{jobId}
// with cockatiel's exponential backoff, honouring Retry-After, and reports progress.
import { ExponentialBackoff, type IBackoff } from 'cockatiel';
import type { components } from './generated/market-intel';

/** A compute job as `GET /api/v1/jobs/{jobId}` answers it (spec "AgentJob", plus `refund`). */
export type AgentJob = components['schemas']['AgentJob'];

/** The refund of a failed paid job, as the job shows it (services/market-intel/README.md, "Refunds"). */
export type JobRefund = NonNullable<AgentJob['refund']>;

/** What {@link WaitForJobOptions.onProgress} is told each time the job is read and has changed. */
export interface JobProgress {
  /** `pending`, `running`, `completed` or `failed`. */
  status: AgentJob['status'];
  /** 0 to 100; never decreases. */
  progressPct: number;
  /** Milliseconds since {@link waitForJob} started. */
  elapsedMs: number;
  /** The job as read. */
  job: AgentJob;
}

/**
 * Why a job failed, read from its `error` (services/market-intel/README.md, "Failed jobs and health"):
 * `"<code>: <message> (step <n>)"`.
 */
export interface JobFailure {
  /** Stable code, e.g. `llm_unavailable`, `stalled`; `unknown` when `error` does not have the documented shape. */
  code: string;
  /** The short message after the code. */
  message: string;
  /** The pipeline step that failed, when the error names one. */
  step: number | undefined;
  /** The job's `error` as the service wrote it. */
  raw: string;
}

/** How a job ended: its result, or why it failed and the refund of its payment when there is one. */
export type JobOutcome =
  | {
      /** The job completed. */
      status: 'completed';
      /** The job's `result` (for prove/debate, `result.verdict` and `result.report`). */
      result: Record<string, unknown>;
      /** The job as last read. */
      job: AgentJob;
    }
  | {
      /** The job failed. */
      status: 'failed';
      /** Why, parsed from `job.error`. */
      failure: JobFailure;
      /**
       * The refund of the payment (atomic USDC units in `amount`), or `null` when there is none: a free
       * job, a failure that is not refunded, or a service without a refund wallet.
       */
      refund: JobRefund | null;
      /** The job as last read. */
      job: AgentJob;
    };

/** Options of {@link waitForJob}. */
export interface WaitForJobOptions {
  /** market-intel's base URL, e.g. `http://127.0.0.1:3001`. */
  baseUrl: string;
  /** Called when the status or `progressPct` changes (and once on the first read). Errors it throws are ignored. */
  onProgress?: (progress: JobProgress) => void;
  /** Aborts the wait (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Gives up after this many milliseconds with {@link JobWaitTimeoutError}; default 2 hours (a debate takes about 60 minutes). */
  timeoutMs?: number;
  /** First delay between two reads, in milliseconds; default 1000. Progress resets the delay to it. */
  initialDelayMs?: number;
  /** Longest delay between two reads without a `Retry-After`, in milliseconds; default 15000. */
  maxDelayMs?: number;
  /**
   * When the job failed with a refund still `pending`, keep reading until the refund is confirmed or
   * held (within `timeoutMs`); default false.
   */
  waitForRefund?: boolean;
  /** The fetch implementation; default the global fetch. */
  fetch?: typeof fetch;
}

/** Base of the errors {@link waitForJob} throws; `code` is stable. */
export class JobWaitError extends Error {
  /** `job_not_found`, `job_wait_timeout` or `job_read_failed`. */
  readonly code: string;
  /** The job waited for. */
  readonly jobId: string;

  /**
   * @param code stable code
   * @param jobId the job
   * @param message explanation
   * @param cause underlying error
   */
  constructor(code: string, jobId: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'JobWaitError';
    this.code = code;
    this.jobId = jobId;
  }
}

/** The service does not know the job (404): a wrong id, or another service's. */
export class JobNotFoundError extends JobWaitError {
  /** @param jobId the job */
  constructor(jobId: string) {
    super('job_not_found', jobId, `market-intel knows no job ${jobId}`);
    this.name = 'JobNotFoundError';
  }
}

/** The job did not end within `timeoutMs`; `lastJob` is its last state read, if any. */
export class JobWaitTimeoutError extends JobWaitError {
  /** The job as last read, when it was read at all. */
  readonly lastJob: AgentJob | undefined;

  /**
   * @param jobId the job
   * @param timeoutMs the deadline, in milliseconds
   * @param lastJob last state read
   */
  constructor(jobId: string, timeoutMs: number, lastJob: AgentJob | undefined) {
    super(
      'job_wait_timeout',
      jobId,
      `job ${jobId} did not end within ${Math.round(timeoutMs / 1000)} s` +
        (lastJob ? ` (last seen ${lastJob.status}, ${lastJob.progressPct} %)` : ''),
    );
    this.name = 'JobWaitTimeoutError';
    this.lastJob = lastJob;
  }
}

/** The job endpoint answered something that is neither a job, a 404, nor a retryable status. */
export class JobReadError extends JobWaitError {
  /** HTTP status of the answer. */
  readonly status: number;

  /**
   * @param jobId the job
   * @param status HTTP status
   * @param message explanation
   */
  constructor(jobId: string, status: number, message: string) {
    super('job_read_failed', jobId, message);
    this.name = 'JobReadError';
    this.status = status;
  }
}

const FAILURE = /^([a-z0-9_]+): (.*?)(?: \(step (\d+)\))?$/s;

/**
 * Parses a failed job's `error` (services/market-intel/README.md, "Failed jobs and health").
 * @param error the job's `error`
 */
export function parseJobFailure(error: string | null): JobFailure {
  const raw = error ?? '';
  const match = FAILURE.exec(raw);
  if (!match) return { code: 'unknown', message: raw, step: undefined, raw };
  const [, code = 'unknown', message = '', step] = match;
  return { code, message, step: step === undefined ? undefined : Number(step), raw };
}

/** Statuses worth reading again after a pause: rate limited, or the service briefly unavailable. */
const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * Follows a compute job (spec "GET /api/v1/jobs/{jobId}"; README, "Waiting for a job") until it is
 * `completed` or `failed`. Reads with an exponential backoff from `initialDelayMs` to `maxDelayMs`
 * (cockatiel's decorrelated jitter), reset whenever the job progresses; a `Retry-After` header (seconds
 * or an HTTP date) on any answer sets the next delay instead. Network errors and 408/425/429/5xx
 * answers are read again the same way; `onProgress` hears every change.
 *
 * @param jobId the job's id (from the 202 answer of forge/ideate or prove/debate)
 * @returns the result, or the typed failure with its refund
 * @throws JobNotFoundError the service answers 404
 * @throws JobWaitTimeoutError the job did not end within `timeoutMs` (default 2 hours)
 * @throws JobReadError any other non-2xx answer (e.g. 400 for a malformed id)
 * @throws the signal's reason when `signal` aborts
 */
export async function waitForJob(jobId: string, options: WaitForJobOptions): Promise<JobOutcome> {
  const doFetch = options.fetch ?? fetch;
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 2 * 3_600_000;
  const deadline = started + timeoutMs;
  const url = new URL(`api/v1/jobs/${encodeURIComponent(jobId)}`, withSlash(options.baseUrl));
  const factory = new ExponentialBackoff({
    initialDelay: options.initialDelayMs ?? 1000,
    maxDelay: options.maxDelayMs ?? 15_000,
  });
  let backoff: IBackoff<unknown> | undefined;
  let last: AgentJob | undefined;

  for (;;) {
    options.signal?.throwIfAborted();
    let retryAfterMs: number | undefined;
    let progressed = false;
    let job: AgentJob | undefined;
    try {
      const response = await doFetch(url, {
        headers: { accept: 'application/json' },
        ...(options.signal ? { signal: options.signal } : {}),
      });
      retryAfterMs = retryAfterOf(response.headers.get('retry-after'));
      if (response.status === 404) throw new JobNotFoundError(jobId);
      if (response.ok) job = (await response.json()) as AgentJob;
      else if (!RETRYABLE.has(response.status))
        throw new JobReadError(jobId, response.status, await describe(response, jobId));
      else await response.body?.cancel();
    } catch (error) {
      if (error instanceof JobWaitError) throw error;
      options.signal?.throwIfAborted();
      // Anything else is the network: read again after the backoff.
    }

    if (job) {
      progressed = !last || last.status !== job.status || last.progressPct !== job.progressPct;
      if (progressed && options.onProgress) {
        try {
          options.onProgress({
            status: job.status,
            progressPct: job.progressPct,
            elapsedMs: Date.now() - started,
            job,
          });
        } catch {
          // A caller's display must not end the wait.
        }
      }
      last = job;
      const outcome = outcomeOf(job, options.waitForRefund === true);
      if (outcome) return outcome;
    }

    backoff = progressed || !backoff ? factory.next() : backoff.next(undefined);
    const delay = retryAfterMs ?? backoff.duration;
    if (Date.now() + delay > deadline) {
      // One last read at the deadline rather than giving up early.
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new JobWaitTimeoutError(jobId, timeoutMs, last);
      await sleep(remaining, options.signal);
      continue;
    }
    await sleep(delay, options.signal);
  }
}

function outcomeOf(job: AgentJob, waitForRefund: boolean): JobOutcome | undefined {
  if (job.status === 'completed') return { status: 'completed', result: job.result ?? {}, job };
  if (job.status !== 'failed') return undefined;
  if (waitForRefund && job.refund?.status === 'pending') return undefined;
  return { status: 'failed', failure: parseJobFailure(job.error), refund: job.refund ?? null, job };
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; `undefined` when absent or unreadable. */
export function retryAfterOf(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

async function describe(response: Response, jobId: string): Promise<string> {
  let detail = '';
  try {
    const body = (await response.json()) as { error?: unknown; code?: unknown };
    if (typeof body.error === 'string')
      detail = `: ${body.error}${typeof body.code === 'string' ? ` (${body.code})` : ''}`;
  } catch {
    // not the error envelope
  }
  return `reading job ${jobId} answered HTTP ${response.status}${detail}`;
}

function withSlash(baseUrl: string): string {
  return baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
