import type { z } from 'zod';
import type { LlmClient, SearchProvider } from '@repo/llm';
import type { Logger } from '@repo/service-kit';
import type { ScoutFetchSettings } from '../scout/settings';

/** What a pipeline step may use: the LLM, the search port (or `null` when none is configured), a logger and the clock. */
export interface PipelineDeps {
  llm: LlmClient;
  search: SearchProvider | null;
  logger: Logger;
  /** The current time (prompts mention today's date). */
  now(): Date;
  /** Fetch settings of the scout pipeline (unset fields take `DEFAULT_SCOUT_FETCH_SETTINGS`); tests shorten delays and limits. */
  scout?: Partial<ScoutFetchSettings>;
}

/**
 * The outcome of one step: `continue` with the next state (JSON-serialisable), the progress to report
 * (integer 1–99, strictly above the previous step's) and a human label of the step just done; or
 * `done` with the job's result.
 */
export type StepOutcome<S, R> =
  | { kind: 'continue'; state: S; progressPct: number; label: string }
  | { kind: 'done'; result: R; label: string };

/**
 * A compute pipeline as a pure step function over JSON state (README, "Pipelines"): the
 * runner validates the job input and state of a step command with `input` and `state`, calls `step`
 * once and publishes the outcome; market-intel keeps the state between steps. A step does one unit
 * of LLM work, uses nothing but its arguments (so a redelivered step can be run again from the same
 * state) and never mutates `state`.
 *
 * `step` throws what the LLM client and search providers throw (`LlmUnavailableError` — transient —,
 * `LlmConfigError`, `LlmOutputError`, `LlmRequestError`; see `@repo/llm`); search failures inside a
 * debate turn are logged and the turn goes on without sources.
 */
export interface Pipeline<I, S, R> {
  readonly kind: 'forge' | 'prove' | 'scout';
  /** Validates the job input carried in step messages. */
  readonly input: z.ZodType<I>;
  /** Validates the state carried in step messages. */
  readonly state: z.ZodType<S>;
  /** Validates the final result. */
  readonly result: z.ZodType<R>;
  /** Typical duration of a job, in minutes (the 202's `etaMinutes`). */
  readonly etaMinutes: number;
  /** The state before step 0. */
  init(input: I): S;
  /** Runs one step from `state`. */
  step(input: I, state: S, deps: PipelineDeps): Promise<StepOutcome<S, R>>;
}
