import { z } from 'zod';

/** The pipelines the runner executes. */
export const PipelineKind = z.enum(['forge', 'prove', 'scout']);
export type PipelineKind = z.infer<typeof PipelineKind>;

const JobId = z.string().min(16).max(64);

/**
 * A step command (market-intel -> runner): run step `stepIndex` of job `jobId` from `state`. The
 * message carries everything the step needs, so any runner replica can execute it and a redelivery
 * re-runs it from the same state. `messageId` is `<jobId>:<stepIndex>`.
 */
export const StepCommand = z.object({
  v: z.literal(1),
  jobId: JobId,
  kind: PipelineKind,
  stepIndex: z.number().int().min(0),
  /** The job input (validated again by the pipeline's own schema). */
  input: z.unknown(),
  /** The pipeline state before this step (`null` for step 0: the pipeline initialises it). */
  state: z.unknown(),
});
export type StepCommand = z.infer<typeof StepCommand>;

/** What one step produced: the next state and progress, or the job's result. */
export const StepOutcome = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('continue'),
    state: z.unknown(),
    progressPct: z.number().int().min(0).max(99),
    label: z.string(),
  }),
  z.object({ kind: z.literal('done'), result: z.unknown(), label: z.string() }),
]);
export type StepOutcome = z.infer<typeof StepOutcome>;

const EventBase = {
  jobId: JobId,
  stepIndex: z.number().int().min(0),
  runnerId: z.string(),
  at: z.iso.datetime(),
};

/**
 * Why a job step failed, as a stable code (what an agent sees in the job; the upstream's own text
 * stays in the logs): the LLM or the search provider unreachable or failing (`llm_unavailable`,
 * `search_unavailable`), refusing our configuration (`llm_config`, `search_config`) or the request
 * (`llm_request`), an LLM answer that stayed invalid after repair (`llm_output`), a step command that
 * cannot be run (`invalid_step`), anything else (`internal`). market-intel adds `delivery_limit` (the
 * step was dead-lettered) and `stalled` (the job made no progress in time).
 */
export const JobErrorCode = z.enum([
  'llm_unavailable',
  'llm_config',
  'llm_request',
  'llm_output',
  'search_unavailable',
  'search_config',
  'invalid_step',
  'internal',
  'delivery_limit',
  'stalled',
]);
export type JobErrorCode = z.infer<typeof JobErrorCode>;

/** The short message shown with each {@link JobErrorCode} (never an upstream's own text). */
export const JOB_ERROR_MESSAGES: Readonly<Record<JobErrorCode, string>> = {
  llm_unavailable: 'the language model was unreachable or failing',
  llm_config: 'the language model refused our configuration',
  llm_request: 'the language model refused a request of this job',
  llm_output: 'the language model kept giving answers that could not be used',
  search_unavailable: 'the search provider was unreachable or failing',
  search_config: 'the search provider refused our configuration',
  invalid_step: 'a step of this job could not be run',
  internal: 'an internal error stopped this job',
  delivery_limit: 'a step kept failing until its retries ran out',
  stalled: 'the job made no progress in time',
};

/**
 * The error an agent sees for a failed job: `"<code>: <message>"`, with the step when known.
 * @param code the failure's code
 * @param stepIndex the step that failed, when known
 */
export function publicJobError(code: JobErrorCode, stepIndex?: number): string {
  return `${code}: ${JOB_ERROR_MESSAGES[code]}${stepIndex === undefined ? '' : ` (step ${stepIndex})`}`;
}

/**
 * Job events (runner -> market-intel), routing key = `type`:
 * - `job.step-started`: a runner began a step (moves a pending job to running);
 * - `job.step-completed`: the step's outcome, applied once per `stepIndex`;
 * - `job.step-failed`: a step attempt failed (`retryable`: it will be retried until the delivery
 *   limit; otherwise the job fails now).
 */
export const JobEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('job.step-started'), ...EventBase }),
  z.object({ type: z.literal('job.step-completed'), ...EventBase, outcome: StepOutcome }),
  z.object({
    type: z.literal('job.step-failed'),
    ...EventBase,
    attempt: z.number().int().min(1),
    retryable: z.boolean(),
    /** The failure's stable code (absent from older runners: `internal`). */
    code: JobErrorCode.optional(),
    /** The failure's full text, for logs; never shown to agents. */
    error: z.string().max(2000),
  }),
]);
export type JobEvent = z.infer<typeof JobEvent>;

/**
 * Health of one upstream as the runner sees it; `errorClass` is the class market-intel's
 * `/api/v1/health` reports (README, "Messages").
 */
export const UpstreamHealth = z.object({
  ok: z.boolean(),
  latency_ms: z.number().int().min(0).nullable(),
  error: z.string().nullable(),
  errorClass: z.enum(['upstream', 'config']).nullable(),
});
export type UpstreamHealth = z.infer<typeof UpstreamHealth>;

/** The runner's heartbeat (transient, every few seconds): LLM and search health as it last probed them. */
export const RunnerHeartbeat = z.object({
  v: z.literal(1),
  runnerId: z.string(),
  at: z.iso.datetime(),
  /** Heartbeat period in milliseconds: consumers treat a runner as gone after a few missed beats. */
  intervalMs: z.number().int().positive(),
  llm: UpstreamHealth,
  /** `null` when no search provider is configured. */
  search: UpstreamHealth.nullable(),
  inFlightSteps: z.number().int().min(0),
});
export type RunnerHeartbeat = z.infer<typeof RunnerHeartbeat>;
