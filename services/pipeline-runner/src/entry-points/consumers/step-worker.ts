import { setTimeout as delay } from 'node:timers/promises';
import { errorClassOf, isTransient, isUpstreamError } from '@repo/llm';
import type { Broker, Delivery, QueueLogger, Settlement } from '@repo/queue';
import { backoffDelay } from '@repo/service-kit';
import {
  COMPUTE_TOPOLOGY,
  StepCommand,
  type JobEvent,
  type PipelineKind,
  type StepOutcome,
  type JobErrorCode,
} from '@repo/compute';
import type { Pipeline, PipelineDeps } from '../../domain/pipelines';

/** A pipeline of any input, state and result (the worker only moves them between messages). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the worker is generic over every pipeline's types; each pipeline validates its own with zod
export type AnyPipeline = Pipeline<any, any, any>;

/** What the step worker needs. */
export interface StepWorkerDeps {
  broker: Broker;
  pipelines: Record<PipelineKind, AnyPipeline>;
  pipelineDeps: PipelineDeps;
  runnerId: string;
  logger: QueueLogger;
  /** Backoff before requeueing a failed step, in milliseconds; doubles per attempt, capped at 30 s. */
  retryBaseMs: number;
  now?: () => Date;
  /** Step outcomes and failures (metrics). */
  onStep?: (kind: string, outcome: 'completed' | 'retry' | 'poison', seconds: number) => void;
}

/** The longest wait before a failed step is requeued, in milliseconds. */
const STEP_RETRY_MAX_MS = 30_000;

/** A step that cannot be run whatever the number of attempts (bad message, bad input or state). */
class PoisonStepError extends Error {}

/**
 * Executes step commands (README, "Messaging (RabbitMQ)"): one delivery = one step of one job (first steps come from `compute.starts`, the others from `compute.steps`).
 * The worker validates the command, input and state, runs the pipeline's step, publishes the outcome
 * as `job.step-completed` with a publisher confirm and only then acks; a crash before the ack makes
 * RabbitMQ redeliver the same step, which market-intel applies at most once (by step index).
 *
 * A failed attempt publishes `job.step-failed` and requeues after a backoff; the quorum queue
 * dead-letters the command after `COMPUTE_DELIVERY_LIMIT` returns, and market-intel fails the
 * job. A poison command (unparseable, or input/state its pipeline rejects) is failed and rejected at
 * once, straight to the dead-letter queue.
 */
export class StepWorker {
  private inFlight = 0;
  private readonly now: () => Date;

  constructor(private readonly deps: StepWorkerDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Steps being executed right now (reported in heartbeats). */
  inFlightSteps(): number {
    return this.inFlight;
  }

  /**
   * Starts consuming `compute.starts` (first steps) and `compute.steps` (the others), each with
   * `prefetch` deliveries at a time, so a new job never waits behind running ones.
   */
  async start(prefetch: number): Promise<void> {
    for (const queue of [COMPUTE_TOPOLOGY.queues.starts, COMPUTE_TOPOLOGY.queues.steps]) {
      await this.deps.broker.consume(queue, (delivery) => this.handle(delivery), {
        prefetch,
        onError: (err, delivery) =>
          this.deps.logger.error({ err: String(err), messageId: delivery.messageId }, 'step handler crashed'),
      });
    }
  }

  /** Handles one delivery and says how to settle it (exposed for tests). */
  async handle(delivery: Delivery): Promise<Settlement> {
    const parsed = StepCommand.safeParse(delivery.body);
    if (!parsed.success) {
      this.deps.logger.error({ messageId: delivery.messageId }, 'unparseable step command dead-lettered');
      this.deps.onStep?.('unknown', 'poison', 0);
      return 'reject';
    }
    const command = parsed.data;
    const attempt = delivery.deliveryCount + 1;
    const started = Date.now();
    this.inFlight++;
    try {
      const pipeline = this.deps.pipelines[command.kind];
      const { input, state } = this.decode(pipeline, command);
      if (command.stepIndex === 0) await this.emit({ type: 'job.step-started', ...this.base(command) });
      const outcome = await pipeline.step(input, state, this.deps.pipelineDeps);
      await this.emit(
        { type: 'job.step-completed', ...this.base(command), outcome: this.encode(pipeline, outcome) },
        `${command.jobId}:${command.stepIndex}:completed`,
      );
      this.deps.onStep?.(command.kind, 'completed', (Date.now() - started) / 1000);
      return 'ack';
    } catch (err) {
      // A request the LLM refuses as malformed (400/413/422) fails the same way on every attempt.
      const poison = err instanceof PoisonStepError || errorClassOf(err) === 'request';
      const message = err instanceof Error ? err.message : String(err);
      this.deps.logger.warn(
        { jobId: command.jobId, stepIndex: command.stepIndex, attempt, poison, err: message },
        'step failed',
      );
      this.deps.onStep?.(command.kind, poison ? 'poison' : 'retry', (Date.now() - started) / 1000);
      await this.emit({
        type: 'job.step-failed',
        ...this.base(command),
        attempt,
        retryable: !poison,
        code: failureCode(err, err instanceof PoisonStepError),
        error: message.slice(0, 2000),
      }).catch((publishErr: unknown) =>
        this.deps.logger.warn({ err: String(publishErr) }, 'could not report the step failure'),
      );
      if (poison) return 'reject';
      // Transient upstream trouble waits longer; either way the queue's delivery limit bounds the attempts.
      const base = isTransient(err) ? this.deps.retryBaseMs * 2 : this.deps.retryBaseMs;
      await delay(backoffDelay({ initialDelayMs: base, maxDelayMs: STEP_RETRY_MAX_MS }, attempt - 1));
      return 'requeue';
    } finally {
      this.inFlight--;
    }
  }

  private decode(pipeline: AnyPipeline, command: StepCommand): { input: unknown; state: unknown } {
    const input = pipeline.input.safeParse(command.input);
    if (!input.success)
      throw new PoisonStepError(
        `invalid ${command.kind} job input: ${input.error.issues[0]?.message ?? 'rejected'}`,
      );
    if (command.state === null) {
      if (command.stepIndex !== 0)
        throw new PoisonStepError(`step ${command.stepIndex} arrived without state`);
      return { input: input.data, state: pipeline.init(input.data) };
    }
    const state = pipeline.state.safeParse(command.state);
    if (!state.success)
      throw new PoisonStepError(
        `invalid ${command.kind} state at step ${command.stepIndex}: ${state.error.issues[0]?.message ?? 'rejected'}`,
      );
    return { input: input.data, state: state.data };
  }

  private encode(
    pipeline: AnyPipeline,
    outcome:
      | { kind: 'continue'; state: unknown; progressPct: number; label: string }
      | { kind: 'done'; result: unknown; label: string },
  ): StepOutcome {
    if (outcome.kind === 'done') {
      const result = pipeline.result.safeParse(outcome.result);
      if (!result.success)
        throw new Error(
          `the ${pipeline.kind} result does not match its schema: ${result.error.issues[0]?.message ?? ''}`,
        );
      return { kind: 'done', result: result.data, label: outcome.label };
    }
    return {
      kind: 'continue',
      state: outcome.state,
      progressPct: Math.min(99, Math.max(0, Math.round(outcome.progressPct))),
      label: outcome.label,
    };
  }

  private base(command: StepCommand): { jobId: string; stepIndex: number; runnerId: string; at: string } {
    return {
      jobId: command.jobId,
      stepIndex: command.stepIndex,
      runnerId: this.deps.runnerId,
      at: this.now().toISOString(),
    };
  }

  private async emit(event: JobEvent, messageId?: string): Promise<void> {
    await this.deps.broker.publish(COMPUTE_TOPOLOGY.exchanges.events, event.type, event, {
      type: event.type,
      messageId: messageId ?? `${event.jobId}:${event.stepIndex}:${event.type}:${Date.now()}`,
    });
  }
}

/**
 * The stable code of a step failure (shown to agents in the job; the text stays in the logs).
 * @param err what the step threw
 * @param invalidStep the step command itself could not be run (bad input or state)
 */
export function failureCode(err: unknown, invalidStep: boolean): JobErrorCode {
  if (invalidStep) return 'invalid_step';
  if (!isUpstreamError(err)) return 'internal';
  if (err.upstream === 'search') return err.errorClass === 'config' ? 'search_config' : 'search_unavailable';
  switch (err.errorClass) {
    case 'config':
      return 'llm_config';
    case 'request':
      return 'llm_request';
    case 'output':
      return 'llm_output';
    default:
      return 'llm_unavailable';
  }
}
