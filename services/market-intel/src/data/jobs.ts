import { randomBytes } from 'node:crypto';
import { AppError } from '@repo/errors';
import type { AgentJob, JobRefund, JobStatus } from '@repo/schemas';
import {
  COMPUTE_TOPOLOGY,
  stepRoutingKey,
  type AppliedStep,
  type JobGuard,
  type JobTransition,
  type PipelineKind,
  type StepCommand,
} from '@repo/compute';
import { Prisma } from '../generated/prisma/client';
import type { Db } from './prisma';

/**
 * A new job id: `job_` + 128 random bits, base64url. The id acts as a capability: it is all
 * GET /api/v1/jobs/{jobId} asks.
 */
export function newJobId(): string {
  return `job_${randomBytes(16).toString('base64url')}`;
}

/**
 * The columns every read of a job's status selects, whoever asks (GET /api/v1/jobs/{jobId}, a scan's
 * progress): the id, the status and progress, and the outcome (the result, or the error of a failed job).
 */
export const JOB_STATUS_COLUMNS = {
  id: true,
  status: true,
  progressPct: true,
  result: true,
  error: true,
} as const satisfies Prisma.AgentJobSelect;

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

/** What applying one input (a runner event, a failure) changed, for what follows the commit. */
export interface ApplyResult {
  /** Whether the input changed the job (false: duplicate, stale or for a terminal job). */
  applied: boolean;
  /** Outbox rows written in the same transaction, to publish now. */
  outboxIds: bigint[];
  /** The job's status after the input, or null when the job is unknown. */
  status: JobStatus | null;
  /** Whether a webhook delivery was queued. */
  webhookQueued: boolean;
  /** The network of the refund a failure queued (a paid job failed with a refunded code). */
  refundQueued?: string | null;
}

/** A transaction client (what the job lifecycle and kind hooks write with, inside one transaction). */
export type Tx = Prisma.TransactionClient;

/** The job a kind hook is called for. */
export interface HookedJob {
  id: string;
  kind: string;
  input: unknown;
}

/**
 * What a job kind adds to the generic step chain, inside the transaction that applies an event (so the
 * effect and the job's new state commit together, or neither does): the job lifecycle
 * (`domain/job-lifecycle.ts`) calls them. Scout scans use them to store fetched items and the finished
 * report; paid jobs have none.
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
 * transactional outbox (`outbox_messages`) and webhook deliveries (`webhook_deliveries`): the row
 * operations. What an event or a failure does to a job is decided by the job lifecycle
 * (`domain/job-lifecycle.ts`), which writes with these operations inside one transaction.
 *
 * Invariant: a job row is only ever committed together with the outbox row of its first step command.
 */
export class JobRepository {
  /**
   * @param db the database
   * @param options `refundOf`: the refund of a payment, shown with a failed job (`refund` in
   *   GET /api/v1/jobs/{jobId}); without it `refund` is always null
   */
  constructor(
    private readonly db: Db,
    private readonly options: {
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
   * Creates a paid job: in one transaction, the job row (pending), the outbox row of step 0 and what
   * the caller adds (`inTransaction`: the payment claim's completion, `x402_payments.job_id`), so a job
   * exists exactly when its payment is consumed and its first message is due. With `perPayerPerDay`,
   * the payer's jobs on the job's network in the last 24 hours are counted first, under a lock per
   * payer so that concurrent requests cannot both take the last place.
   * @param options `perPayerPerDay`: most jobs one payer wallet may start on this network per 24 hours
   * @returns the outbox id to publish after the commit
   * @throws AppError `rate_limited` (429, `Retry-After` in seconds) when the payer has used its jobs;
   *   whatever `inTransaction` throws (nothing is written either way)
   */
  async createPaidJob(
    job: NewJob,
    options: { perPayerPerDay?: number; inTransaction(tx: Tx): Promise<void> },
  ): Promise<{ outboxId: bigint; createdAt: Date }> {
    return this.db.$transaction(async (tx) => {
      if (options.perPayerPerDay !== undefined) await assertJobsLeft(tx, job, options.perPayerPerDay);
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
      await options.inTransaction(tx);
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
        ...JOB_STATUS_COLUMNS,
        endpoint: true,
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
   * Updates a job only while it passes `guard` (one conditional statement, no lock): a start, or a
   * retryable failure's error text.
   * @returns whether the job was updated
   */
  async updateGuarded(
    jobId: string,
    guard: JobGuard,
    change: { status: 'running'; startedAt: Date } | { lastError: string },
  ): Promise<boolean> {
    const count = await this.db.agentJob.updateMany({
      where: {
        id: jobId,
        status: { in: [...guard.statuses] },
        ...(guard.stepIndex === undefined ? {} : { stepIndex: guard.stepIndex }),
      },
      data: change,
    });
    return count.count > 0;
  }

  /**
   * Runs `work` in one transaction with the job's row locked (`FOR UPDATE`), so concurrent events of
   * one job apply one after the other; `job` is undefined for an unknown id.
   */
  async withLockedJob<T>(
    jobId: string,
    work: (tx: Tx, job: LockedJob | undefined) => Promise<T>,
  ): Promise<T> {
    return this.db.$transaction(async (tx) => work(tx, await lockJob(tx, jobId)));
  }

  /** Records an applied step in the job's audit trail (`job_steps`). */
  async recordStep(tx: Tx, jobId: string, step: AppliedStep): Promise<void> {
    await tx.jobStep.create({ data: { jobId, ...step } });
  }

  /**
   * Stores a job that moved on to its next step, and queues that step's command in the outbox.
   * @returns the outbox id to publish after the commit
   */
  async saveAdvanced(tx: Tx, job: HookedJob, next: AdvancedJob): Promise<bigint> {
    await tx.agentJob.update({
      where: { id: job.id },
      data: {
        status: next.status,
        startedAt: next.startedAt,
        state: json(next.state),
        stepIndex: next.stepIndex,
        stepLabel: next.stepLabel,
        progressPct: next.progressPct,
        lastError: next.lastError,
      },
    });
    return this.enqueueStep(tx, stepCommand(job, next.stepIndex, next.state));
  }

  /** Stores a completed job with its result; `completed_at` is now. */
  async saveCompleted(tx: Tx, jobId: string, done: CompletedJob): Promise<void> {
    await tx.agentJob.update({
      where: { id: jobId },
      data: {
        status: done.status,
        startedAt: done.startedAt,
        result: json(done.result),
        stepIndex: done.stepIndex,
        stepLabel: done.stepLabel,
        progressPct: done.progressPct,
        lastError: done.lastError,
        completedAt: new Date(),
      },
    });
  }

  /** Stores a failed job (its progress kept); `completed_at` is now. */
  async saveFailed(
    tx: Tx,
    jobId: string,
    failed: { status: JobStatus; error: string; lastError: string },
  ): Promise<void> {
    await tx.agentJob.update({
      where: { id: jobId },
      data: {
        status: failed.status,
        error: failed.error,
        lastError: failed.lastError,
        completedAt: new Date(),
      },
    });
  }

  /**
   * Queues the webhook delivery of a terminal job (its loop signs and posts it).
   * @returns whether one was queued (false without a webhook address)
   */
  async queueWebhook(tx: Tx, jobId: string, url: string | null, body: WebhookBody): Promise<boolean> {
    if (!url) return false;
    await tx.webhookDelivery.create({ data: { jobId, url, body: JSON.stringify(body) } });
    return true;
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
   * Paid jobs still pending `failAfterMs` milliseconds after their creation (README, "Failed jobs and
   * health (market-intel)"): the ones the lifecycle fails as `stalled`.
   */
  async stalledPaidJobIds(failAfterMs: number): Promise<string[]> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM agent_jobs WHERE status = 'pending' AND tx_signature IS NOT NULL
         AND created_at < now() - make_interval(secs => $1::double precision)`,
      failAfterMs / 1000,
    );
    return rows.map((row) => row.id);
  }

  /**
   * Paid jobs pending longer than `republishAfterMs` whose first step command is no longer in the
   * outbox get it queued again (once per `republishAfterMs`, marked by `updated_at`), in case the
   * message was lost on the broker's side. Safe across replicas (rows are locked and skipped).
   * @returns the outbox ids to publish
   */
  async requeueUnstarted(republishAfterMs: number): Promise<bigint[]> {
    return this.db.$transaction(async (tx) => {
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

/** A job row locked for an update, as {@link JobRepository.withLockedJob} hands it over. */
export interface LockedJob extends HookedJob {
  status: JobStatus;
  /** The step the job waits for (0-based). */
  stepIndex: number;
  progressPct: number;
  webhookUrl: string | null;
  startedAt: Date | null;
  lastError: string | null;
  /** The payment's signature; null for an unpaid (internal) job. */
  txSignature: string | null;
}

/** A job moving on to its next step (the state machine's `advanced`, `state` after the kind's hook). */
export type AdvancedJob = Omit<Extract<JobTransition, { type: 'advanced' }>, 'type' | 'step'>;

/** A completed job (the state machine's `completed`). */
export type CompletedJob = Omit<Extract<JobTransition, { type: 'completed' }>, 'type' | 'step'>;

async function lockJob(tx: Tx, jobId: string): Promise<LockedJob | undefined> {
  const rows = await tx.$queryRawUnsafe<LockedJob[]>(
    `SELECT id, kind, status, step_index AS "stepIndex", progress_pct AS "progressPct", input,
            webhook_url AS "webhookUrl", started_at AS "startedAt", last_error AS "lastError",
            tx_signature AS "txSignature"
       FROM agent_jobs WHERE id = $1 FOR UPDATE`,
    jobId,
  );
  return rows[0];
}
