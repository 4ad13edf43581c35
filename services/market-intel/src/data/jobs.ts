import { randomBytes } from 'node:crypto';
import { AppError } from '@repo/errors';
import type { AgentJob, JobRefund, JobStatus } from '@repo/schemas';
import {
  COMPUTE_TOPOLOGY,
  conditionalTransition,
  jobTransition,
  stepRoutingKey,
  type JobErrorCode,
  type JobEvent,
  type JobGuard,
  type JobInput,
  type PipelineKind,
  type StepCommand,
} from '@repo/compute';
import type { PaymentClaim, PaymentLedger } from '@repo/x402-ledger';
import { Prisma } from '../generated/prisma/client';
import type { Db } from './prisma';

/**
 * A new job id: `job_` + 128 random bits, base64url. The id acts as a capability: it is all
 * GET /api/v1/jobs/{jobId} asks.
 */
export function newJobId(): string {
  return `job_${randomBytes(16).toString('base64url')}`;
}

/** What the compute route knows about a job when it is paid. */
export interface NewJob {
  id: string;
  kind: PipelineKind;
  /** `METHOD /path` of the compute endpoint. */
  endpoint: string;
  input: unknown;
  txSignature: string;
  network: string;
  payer: string;
  /** Price paid, in atomic USDC units. */
  amountAtomic: bigint;
  webhookUrl: string | null;
  proveSessionId: string | null;
}

/** The webhook body of a terminal job (README, "Webhooks (market-intel)"; `error` for failed jobs). */
export interface WebhookBody {
  jobId: string;
  status: 'completed' | 'failed';
  result: unknown;
  error?: string;
}

/** What applying one event changed, for the caller to act on after the commit. */
export interface ApplyResult {
  /** Whether the event changed the job (false: duplicate, stale or for a terminal job). */
  applied: boolean;
  /** Outbox rows written in the same transaction, to publish now. */
  outboxIds: bigint[];
  /** The job's status after the event, or null when the job is unknown. */
  status: JobStatus | null;
  /** Whether a webhook delivery was queued. */
  webhookQueued: boolean;
  /** The network of the refund this failure queued (a paid job failed; see {@link PaidJobFailureHook}). */
  refundQueued?: string | null;
}

/**
 * Called inside the transaction that fails a paid job, before it commits (README, "Refunds"): queues
 * the refund of `job.txSignature` when the failure `code` is one that is refunded, so that the job's
 * failure and its refund commit together or not at all.
 * @returns the network of the refund queued, or null when none was
 */
export type PaidJobFailureHook = (
  tx: Tx,
  job: { id: string; txSignature: string },
  code: JobErrorCode,
) => Promise<string | null>;

/** A transaction client (what kind hooks write with, inside the event's transaction). */
export type Tx = Prisma.TransactionClient;

/** The job a kind hook is called for. */
export interface HookedJob {
  id: string;
  kind: string;
  input: unknown;
}

/**
 * What a job kind adds to the generic step chain, inside the transaction that applies an event (so the
 * effect and the job's new state commit together, or neither does). Scout scans use them to store
 * fetched items and the finished report; paid jobs have none.
 */
export interface JobKindHooks {
  /**
   * Rewrites the state a step produced before it is stored and sent to the next step.
   * @param stepIndex the step that produced `state`
   */
  beforeNextStep?(tx: Tx, job: HookedJob, stepIndex: number, state: unknown): Promise<unknown>;
  /** The job completed with `result`. */
  onCompleted?(tx: Tx, job: HookedJob, result: unknown): Promise<void>;
  /** The job failed with `error`. */
  onFailed?(tx: Tx, job: HookedJob, error: string): Promise<void>;
}

/** A new unpaid job that market-intel starts itself (a scout scan). */
export interface NewInternalJob {
  id: string;
  kind: PipelineKind;
  /** A label in place of the paid endpoint, e.g. `scan fintech`. */
  endpoint: string;
  input: unknown;
}

const json = (value: unknown): Prisma.InputJsonValue => value as Prisma.InputJsonValue;

function stepCommand(
  job: { id: string; kind: string; input: unknown },
  stepIndex: number,
  state: unknown,
): StepCommand {
  return {
    v: 1,
    jobId: job.id,
    kind: job.kind as PipelineKind,
    stepIndex,
    input: job.input,
    state: state ?? null,
  };
}

/**
 * Refuses a job when its payer already started `perDay` jobs on its network in the last 24 hours.
 * @throws AppError `rate_limited` with `Retry-After` = seconds until the oldest of them is a day old
 */
async function assertJobsLeft(tx: Tx, job: NewJob, perDay: number): Promise<void> {
  await tx.$executeRawUnsafe(
    'SELECT pg_advisory_xact_lock(hashtext($1))',
    `compute-jobs:${job.network}:${job.payer}`,
  );
  const rows = await tx.$queryRawUnsafe<{ n: number; oldest: Date | null }[]>(
    `SELECT count(*)::int AS n, min(created_at) AS oldest FROM agent_jobs
      WHERE payer = $1 AND network = $2 AND created_at > now() - interval '1 day'`,
    job.payer,
    job.network,
  );
  const used = rows[0]?.n ?? 0;
  if (used < perDay) return;
  const oldest = rows[0]?.oldest ?? new Date();
  const retryAfterSeconds = Math.max(1, Math.ceil((oldest.getTime() + 86_400_000 - Date.now()) / 1000));
  throw new AppError(
    'rate_limited',
    `This wallet has started ${used} compute jobs on ${job.network} in the last 24 hours, the most allowed`,
    { details: { limit: 'payer_per_day', perDay }, headers: { 'Retry-After': String(retryAfterSeconds) } },
  );
}

/**
 * Compute jobs in PostgreSQL (table `agent_jobs`) with their applied steps (`job_steps`), the
 * transactional outbox (`outbox_messages`) and webhook deliveries (`webhook_deliveries`).
 *
 * Invariants: a job row is only ever committed together with the outbox row of its first step
 * command; what an event or a failure does to a job is decided by the job state machine of
 * `@repo/compute` (`jobTransition`: a step outcome is applied only when its `stepIndex` is the job's
 * current one, so duplicates are dropped; terminal states are final; `progressPct` never decreases)
 * and applied here together with what goes with it (the next command, the webhook, the refund).
 */
export class JobRepository {
  /**
   * @param db the database
   * @param hooks per job kind, what applying its events also does (see {@link JobKindHooks})
   * @param options `onPaidJobFailed`: what failing a paid job also does (refunds)
   * @param options `refundOf`: the refund of a payment, shown with a failed job (`refund` in
   *   GET /api/v1/jobs/{jobId}); without it `refund` is always null
   */
  constructor(
    private readonly db: Db,
    private readonly hooks: Partial<Record<PipelineKind, JobKindHooks>> = {},
    private readonly options: {
      onPaidJobFailed?: PaidJobFailureHook;
      refundOf?: (paymentSignature: string) => Promise<JobRefund | null>;
    } = {},
  ) {}

  /**
   * Creates an unpaid job (pending) and the outbox row of its first step inside the caller's
   * transaction, so the caller commits it together with whatever claimed it.
   * @returns the outbox id to publish after the commit
   */
  async createInternalJob(tx: Tx, job: NewInternalJob): Promise<bigint> {
    await tx.agentJob.create({
      data: { id: job.id, kind: job.kind, endpoint: job.endpoint, status: 'pending', input: json(job.input) },
      select: { id: true },
    });
    return this.enqueueStep(tx, stepCommand(job, 0, null));
  }

  /**
   * Creates a paid job: in one transaction, the job row (pending), the outbox row of step 0 and the
   * payment claim's completion (`x402_payments.job_id`), so a job exists exactly when its payment is
   * consumed and its first message is due. With `perPayerPerDay`, the payer's jobs on the job's
   * network in the last 24 hours are counted first, under a lock per payer so that concurrent
   * requests cannot both take the last place.
   * @param perPayerPerDay most jobs one payer wallet may start on this network per 24 hours
   * @returns the outbox id to publish after the commit
   * @throws AppError `payment_conflict` when the claim was lost to another request, `rate_limited`
   *   (429, `Retry-After` in seconds) when the payer has used its jobs (nothing is written either way)
   */
  async createPaidJob(
    job: NewJob,
    ledger: PaymentLedger,
    claim: PaymentClaim,
    perPayerPerDay?: number,
  ): Promise<{ outboxId: bigint; createdAt: Date }> {
    return this.db.$transaction(async (tx) => {
      if (perPayerPerDay !== undefined) await assertJobsLeft(tx, job, perPayerPerDay);
      const row = await tx.agentJob.create({
        data: {
          id: job.id,
          kind: job.kind,
          endpoint: job.endpoint,
          status: 'pending',
          input: json(job.input),
          txSignature: job.txSignature,
          network: job.network,
          payer: job.payer,
          amountAtomic: new Prisma.Decimal(job.amountAtomic.toString()),
          webhookUrl: job.webhookUrl,
          proveSessionId: job.proveSessionId,
        },
        select: { createdAt: true },
      });
      const outboxId = await this.enqueueStep(tx, stepCommand(job, 0, null));
      await ledger.completeWithJob(claim, job.id, tx);
      return { outboxId, createdAt: row.createdAt };
    });
  }

  /**
   * The job as GET /api/v1/jobs/{jobId} returns it (services/market-intel/README.md, "Endpoints"), or
   * null; unpaid internal jobs (scans) are not served there and give null too.
   */
  async get(jobId: string): Promise<AgentJob | null> {
    const row = await this.db.agentJob.findUnique({
      where: { id: jobId },
      select: {
        id: true,
        endpoint: true,
        status: true,
        progressPct: true,
        result: true,
        error: true,
        createdAt: true,
        completedAt: true,
        txSignature: true,
      },
    });
    if (!row || row.txSignature === null) return null;
    const refund =
      row.status === 'failed' && this.options.refundOf ? await this.options.refundOf(row.txSignature) : null;
    return {
      jobId: row.id,
      endpoint: row.endpoint,
      status: row.status as JobStatus,
      progressPct: row.progressPct,
      result: (row.result ?? null) as AgentJob['result'],
      error: row.error,
      createdAt: row.createdAt.toISOString(),
      completedAt: row.completedAt ? row.completedAt.toISOString() : null,
      txHash: row.txSignature,
      refund,
    };
  }

  /**
   * Applies one runner event (idempotent: duplicates and stale events change nothing), as the job
   * state machine decides (`jobTransition` of `@repo/compute`).
   * - `job.step-started`: pending -> running.
   * - `job.step-completed` for the current step: records the step, stores the new state and progress
   *   (never lower), and queues the next step command; or, for the last step, completes the job and
   *   queues its webhook.
   * - `job.step-failed`: keeps the error while retries remain; a non-retryable failure fails the job.
   */
  async applyEvent(event: JobEvent): Promise<ApplyResult> {
    // A start or a retryable failure does not depend on the job beyond its guard: one conditional update.
    const conditional = conditionalTransition(event);
    if (conditional) {
      const { guard, transition } = conditional;
      const count = await this.db.agentJob.updateMany({
        where: { id: event.jobId, ...guardWhere(guard) },
        data:
          transition.type === 'started'
            ? { status: transition.status, startedAt: transition.startedAt }
            : { lastError: transition.lastError },
      });
      const applied = count.count > 0;
      return {
        applied,
        outboxIds: [],
        status: applied && transition.type === 'started' ? transition.status : null,
        webhookQueued: false,
      };
    }
    return this.applyToLockedJob(event.jobId, event);
  }

  /**
   * Fails a job that is not terminal yet (a dead-lettered step, a non-retryable error), keeping its
   * progress, and queues its webhook. The job and its webhook show only the failure's stable code and
   * short message (`publicJobError`); `detail` (upstream text included) goes to `last_error`, which
   * is never served.
   * @param failure the code, and the full text for operators
   * @param stepIndex when given, only if the job is still at that step (a late dead letter for a step
   *   that another delivery completed changes nothing)
   */
  async fail(
    jobId: string,
    failure: { code: JobErrorCode; detail: string },
    stepIndex?: number,
  ): Promise<ApplyResult> {
    return this.applyToLockedJob(jobId, { type: 'job.failed', ...failure, stepIndex });
  }

  /**
   * Applies an input that depends on the job (a step's outcome, a failure) to the job's row, locked,
   * with what goes with it in the same transaction.
   */
  private async applyToLockedJob(jobId: string, input: JobInput): Promise<ApplyResult> {
    return this.db.$transaction(async (tx) => {
      const job = await lockJob(tx, jobId);
      if (!job) return unchanged(job);
      const transition = jobTransition(
        {
          status: job.status as JobStatus,
          stepIndex: job.step_index,
          progressPct: job.progress_pct,
          startedAt: job.started_at,
          lastError: job.last_error,
        },
        input,
      );
      const hooks = this.hooks[job.kind as PipelineKind];
      switch (transition.type) {
        case 'unchanged':
          return unchanged(job);
        case 'started':
        case 'retrying':
          // applyEvent applies these as a conditional update, never here.
          throw new Error(`${transition.type} is applied without locking the job`);
        case 'advanced': {
          await tx.jobStep.create({ data: { jobId: job.id, ...transition.step } });
          const state = hooks?.beforeNextStep
            ? await hooks.beforeNextStep(tx, job, transition.step.stepIndex, transition.state)
            : transition.state;
          await tx.agentJob.update({
            where: { id: job.id },
            data: {
              status: transition.status,
              startedAt: transition.startedAt,
              state: json(state),
              stepIndex: transition.stepIndex,
              stepLabel: transition.stepLabel,
              progressPct: transition.progressPct,
              lastError: transition.lastError,
            },
          });
          const outboxId = await this.enqueueStep(tx, stepCommand(job, transition.stepIndex, state));
          return { applied: true, outboxIds: [outboxId], status: transition.status, webhookQueued: false };
        }
        case 'completed': {
          await tx.jobStep.create({ data: { jobId: job.id, ...transition.step } });
          await tx.agentJob.update({
            where: { id: job.id },
            data: {
              status: transition.status,
              startedAt: transition.startedAt,
              result: json(transition.result),
              stepIndex: transition.stepIndex,
              stepLabel: transition.stepLabel,
              progressPct: transition.progressPct,
              lastError: transition.lastError,
              completedAt: new Date(),
            },
          });
          await hooks?.onCompleted?.(tx, job, transition.result);
          const webhookQueued = await queueWebhook(tx, job.id, job.webhook_url, {
            jobId: job.id,
            status: 'completed',
            result: transition.result,
          });
          return { applied: true, outboxIds: [], status: transition.status, webhookQueued };
        }
        case 'failed': {
          const { error } = transition;
          await tx.agentJob.update({
            where: { id: jobId },
            data: {
              status: transition.status,
              error,
              lastError: transition.lastError,
              completedAt: new Date(),
            },
          });
          await hooks?.onFailed?.(tx, job, error);
          const refundQueued =
            job.tx_signature !== null && this.options.onPaidJobFailed
              ? await this.options.onPaidJobFailed(
                  tx,
                  { id: jobId, txSignature: job.tx_signature },
                  transition.code,
                )
              : null;
          const webhookQueued = await queueWebhook(tx, jobId, job.webhook_url, {
            jobId,
            status: 'failed',
            result: null,
            error,
          });
          return { applied: true, outboxIds: [], status: transition.status, webhookQueued, refundQueued };
        }
      }
    });
  }

  /** Steps applied to a job, in order (the audit trail). */
  async appliedSteps(jobId: string): Promise<{ stepIndex: number; label: string; progressPct: number }[]> {
    return this.db.jobStep.findMany({
      where: { jobId },
      orderBy: { stepIndex: 'asc' },
      select: { stepIndex: true, label: true, progressPct: true },
    });
  }

  /** Number of jobs per status (for the `/metrics` gauge). */
  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.db.agentJob.groupBy({ by: ['status'], _count: { _all: true } });
    return Object.fromEntries(rows.map((r) => [r.status, r._count._all]));
  }

  /**
   * Paid jobs no runner has started (README, "Failed jobs and health (market-intel)"): those pending
   * longer than `failAfterMs` are failed (`stalled`); those pending longer than `republishAfterMs`
   * whose first step command is no longer in the outbox get it queued again (once per
   * `republishAfterMs`, marked by `updated_at`), in case the message was lost on the broker's side.
   * Safe across replicas (rows are locked and skipped).
   * @returns the outbox ids to publish, and the results of the failures
   */
  async reviveUnstarted(
    republishAfterMs: number,
    failAfterMs: number,
  ): Promise<{ outboxIds: bigint[]; failed: ApplyResult[] }> {
    const stale = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM agent_jobs WHERE status = 'pending' AND tx_signature IS NOT NULL
         AND created_at < now() - make_interval(secs => $1::double precision)`,
      failAfterMs / 1000,
    );
    const failed: ApplyResult[] = [];
    for (const { id } of stale) {
      failed.push(
        await this.fail(id, {
          code: 'stalled',
          detail: `no runner started the job within ${Math.round(failAfterMs / 60_000)} minutes`,
        }),
      );
    }
    const outboxIds = await this.db.$transaction(async (tx) => {
      const rows = await tx.$queryRawUnsafe<{ id: string; kind: string; input: unknown }[]>(
        `SELECT id, kind, input FROM agent_jobs j
          WHERE status = 'pending' AND tx_signature IS NOT NULL AND step_index = 0
            AND updated_at < now() - make_interval(secs => $1::double precision)
            AND NOT EXISTS (SELECT 1 FROM outbox_messages o WHERE o.message_id = j.id || ':0')
          ORDER BY created_at LIMIT 100
          FOR UPDATE SKIP LOCKED`,
        republishAfterMs / 1000,
      );
      const ids: bigint[] = [];
      for (const job of rows) {
        await tx.agentJob.update({ where: { id: job.id }, data: { updatedAt: new Date() } });
        ids.push(await this.enqueueStep(tx, stepCommand(job, 0, null)));
      }
      return ids;
    });
    return { outboxIds, failed };
  }

  private async enqueueStep(tx: Tx, command: StepCommand): Promise<bigint> {
    const row = await tx.outboxMessage.create({
      data: {
        exchange: COMPUTE_TOPOLOGY.exchanges.steps,
        routingKey: stepRoutingKey(command.kind, command.stepIndex),
        messageId: `${command.jobId}:${command.stepIndex}`,
        type: 'step',
        body: json(command),
      },
      select: { id: true },
    });
    return row.id;
  }
}

interface LockedJob {
  id: string;
  kind: string;
  status: string;
  step_index: number;
  progress_pct: number;
  input: unknown;
  webhook_url: string | null;
  started_at: Date | null;
  last_error: string | null;
  tx_signature: string | null;
}

/** The condition of a conditional update for a job state machine guard. */
function guardWhere(guard: JobGuard): Prisma.AgentJobWhereInput {
  return {
    status: { in: [...guard.statuses] },
    ...(guard.stepIndex === undefined ? {} : { stepIndex: guard.stepIndex }),
  };
}

/** The result of an event that changed nothing (unknown job, terminal job, other step). */
function unchanged(job: LockedJob | undefined): ApplyResult {
  return {
    applied: false,
    outboxIds: [],
    status: (job?.status as JobStatus | undefined) ?? null,
    webhookQueued: false,
  };
}

async function lockJob(tx: Tx, jobId: string): Promise<LockedJob | undefined> {
  const rows = await tx.$queryRawUnsafe<LockedJob[]>(
    `SELECT id, kind, status, step_index, progress_pct, input, webhook_url, started_at, last_error, tx_signature
       FROM agent_jobs WHERE id = $1 FOR UPDATE`,
    jobId,
  );
  return rows[0];
}

async function queueWebhook(tx: Tx, jobId: string, url: string | null, body: WebhookBody): Promise<boolean> {
  if (!url) return false;
  await tx.webhookDelivery.create({ data: { jobId, url, body: JSON.stringify(body) } });
  return true;
}
