import type { JobStatus } from '@repo/schemas';
import {
  conditionalTransition,
  jobTransition,
  type JobErrorCode,
  type JobEvent,
  type JobInput,
  type PipelineKind,
} from '@repo/compute';
import type { PrismaRefundLedger } from '@repo/x402-ledger';
import type { ApplyResult, JobKindHooks, JobRepository, LockedJob, Tx } from '../data/jobs';
import { REFUNDED_JOB_FAILURES, refundReason } from './refunds';

/** Where a settled result came from: a runner event, a dead letter or the job watchdog (metrics). */
export type JobInputSource = JobEvent['type'] | 'dead-letter' | 'watchdog';

/** A background loop that can be told that work just arrived. */
interface Kickable {
  kick(): unknown;
}

/** What the job lifecycle needs, given once by the composition root. */
export interface JobLifecycleDeps {
  jobs: JobRepository;
  /** Per job kind, what applying its inputs also does, inside the transaction. */
  hooks: Partial<Record<PipelineKind, JobKindHooks>>;
  /** The refunds table; absent when no refund wallet is configured (nothing is refunded then). */
  refunds?: Pick<PrismaRefundLedger, 'queue'>;
  /** Publishes outbox rows right after the commit. */
  publishNow(outboxIds: readonly bigint[]): Promise<void>;
  /** Told of every settled result (`compute_job_events_total`) and of each refund queued. */
  metrics: {
    onJobEvent(type: string, applied: boolean): void;
    onRefund(network: string, outcome: 'queued'): void;
  };
  /** The webhook loop, kicked when a delivery was queued; null when webhooks are off. */
  webhookLoop: Kickable | null;
  /** The refund loop, kicked when a refund was queued; null without a refund wallet. */
  refundLoop: Kickable | null;
  /** Told when a job completed: a scan stored its report in the job's transaction. */
  onJobCompleted(): void;
}

/**
 * The job lifecycle of market-intel (docs/architecture.md, "How a compute job flows (market-intel ->
 * RabbitMQ -> pipeline-runner)"; README, "Refunds"): what an event from a runner or a failure market-intel
 * decides does to a job, as the job state machine of `@repo/compute` decides it, and what goes with it.
 */
export interface JobLifecycle {
  /**
   * Applies one runner event (idempotent: duplicates and stale events change nothing).
   * - `job.step-started`: pending -> running (a conditional update);
   * - `job.step-completed` for the current step: records the step, stores the new state (through the
   *   kind's `beforeNextStep`) and progress (never lower), and queues the next step command; or, for
   *   the last step, completes the job, runs the kind's `onCompleted` and queues its webhook;
   * - `job.step-failed`: keeps the error while retries remain (a conditional update); a non-retryable
   *   failure fails the job ({@link JobLifecycle.fail}).
   */
  applyEvent(event: JobEvent): Promise<ApplyResult>;
  /**
   * Fails a job that is not terminal yet (a dead-lettered step, a stalled job), keeping its progress,
   * in one transaction with the kind's `onFailed`, the refund of a paid job whose failure `code` is
   * refunded, and the webhook. The job and its webhook show only the failure's stable code and short
   * message (`publicJobError`); `detail` (upstream text included) goes to `last_error`, never served.
   * @param stepIndex when given, only if the job is still at that step (a late dead letter for a step
   *   that another delivery completed changes nothing)
   */
  fail(
    jobId: string,
    failure: { code: JobErrorCode; detail: string },
    stepIndex?: number,
  ): Promise<ApplyResult>;
  /**
   * Paid jobs no runner has started (README, "Failed jobs and health (market-intel)"): those pending
   * longer than `failAfterMs` are failed (`stalled`); those pending longer than `republishAfterMs`
   * whose first step command is no longer in the outbox get it queued again. Times in milliseconds.
   * @returns the outbox ids to publish, and the results of the failures
   */
  reviveUnstarted(
    republishAfterMs: number,
    failAfterMs: number,
  ): Promise<{ outboxIds: bigint[]; failed: ApplyResult[] }>;
  /**
   * What follows the commit of an applied input: counts it, publishes the outbox rows it wrote, and
   * kicks the webhook and refund loops when it queued a delivery or a refund.
   */
  settle(source: JobInputSource, result: ApplyResult): Promise<void>;
}

/**
 * Builds the job lifecycle ({@link JobLifecycle}) once, with every dependency: nothing is added to
 * it afterwards.
 */
export function createJobLifecycle(deps: JobLifecycleDeps): JobLifecycle {
  const { jobs, hooks } = deps;

  /** Queues the refund of a failed paid job in its transaction, when its failure is refunded. */
  const refundIfDue = async (tx: Tx, job: LockedJob, code: JobErrorCode): Promise<string | null> => {
    if (job.txSignature === null || !deps.refunds || !REFUNDED_JOB_FAILURES[code]) return null;
    return deps.refunds.queue(job.txSignature, { reason: refundReason(code), jobId: job.id }, tx);
  };

  /** Applies an input that depends on the job (a step's outcome, a failure) to its locked row. */
  const applyToLockedJob = (jobId: string, input: JobInput): Promise<ApplyResult> =>
    jobs.withLockedJob(jobId, async (tx, job) => {
      if (!job) return unchanged(null);
      const transition = jobTransition(job, input);
      const kindHooks = hooks[job.kind as PipelineKind];
      switch (transition.type) {
        case 'unchanged':
          return unchanged(job.status);
        case 'started':
        case 'retrying':
          // applyEvent applies these as a conditional update, never here.
          throw new Error(`${transition.type} is applied without locking the job`);
        case 'advanced': {
          await jobs.recordStep(tx, job.id, transition.step);
          const state = kindHooks?.beforeNextStep
            ? await kindHooks.beforeNextStep(tx, job, transition.step.stepIndex, transition.state)
            : transition.state;
          const outboxId = await jobs.saveAdvanced(tx, job, { ...transition, state });
          return { applied: true, outboxIds: [outboxId], status: transition.status, webhookQueued: false };
        }
        case 'completed': {
          await jobs.recordStep(tx, job.id, transition.step);
          await jobs.saveCompleted(tx, job.id, transition);
          await kindHooks?.onCompleted?.(tx, job, transition.result);
          const webhookQueued = await jobs.queueWebhook(tx, job.id, job.webhookUrl, {
            jobId: job.id,
            status: 'completed',
            result: transition.result,
          });
          return { applied: true, outboxIds: [], status: transition.status, webhookQueued };
        }
        case 'failed': {
          const { error } = transition;
          await jobs.saveFailed(tx, jobId, transition);
          await kindHooks?.onFailed?.(tx, job, error);
          const refundQueued = await refundIfDue(tx, job, transition.code);
          const webhookQueued = await jobs.queueWebhook(tx, jobId, job.webhookUrl, {
            jobId,
            status: 'failed',
            result: null,
            error,
          });
          return { applied: true, outboxIds: [], status: transition.status, webhookQueued, refundQueued };
        }
      }
    });

  const fail: JobLifecycle['fail'] = (jobId, failure, stepIndex) =>
    applyToLockedJob(jobId, { type: 'job.failed', ...failure, stepIndex });

  return {
    async applyEvent(event) {
      // A start or a retryable failure does not depend on the job beyond its guard: one conditional update.
      const conditional = conditionalTransition(event);
      if (!conditional) return applyToLockedJob(event.jobId, event);
      const { guard, transition } = conditional;
      const applied = await jobs.updateGuarded(
        event.jobId,
        guard,
        transition.type === 'started'
          ? { status: transition.status, startedAt: transition.startedAt }
          : { lastError: transition.lastError },
      );
      return {
        applied,
        outboxIds: [],
        status: applied && transition.type === 'started' ? transition.status : null,
        webhookQueued: false,
      };
    },
    fail,
    async reviveUnstarted(republishAfterMs, failAfterMs) {
      const failed: ApplyResult[] = [];
      for (const id of await jobs.stalledPaidJobIds(failAfterMs)) {
        failed.push(
          await fail(id, {
            code: 'stalled',
            detail: `no runner started the job within ${Math.round(failAfterMs / 60_000)} minutes`,
          }),
        );
      }
      return { outboxIds: await jobs.requeueUnstarted(republishAfterMs), failed };
    },
    async settle(source, result) {
      deps.metrics.onJobEvent(source, result.applied);
      if (result.applied && result.status === 'completed') deps.onJobCompleted();
      if (result.refundQueued) {
        deps.metrics.onRefund(result.refundQueued, 'queued');
        void deps.refundLoop?.kick();
      }
      if (result.outboxIds.length > 0) await deps.publishNow(result.outboxIds);
      if (result.webhookQueued) void deps.webhookLoop?.kick();
    },
  };
}

/** The result of an input that changed nothing (unknown job, terminal job, other step). */
function unchanged(status: JobStatus | null): ApplyResult {
  return { applied: false, outboxIds: [], status, webhookQueued: false };
}
