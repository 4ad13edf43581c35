/**
 * Why an upstream call failed, in the terms of market-intel's health contract: `upstream` (the
 * service is down, slow or rate-limiting; retry later), `config` (missing or rejected credentials, an
 * unknown model or a wrong base URL; an operator must fix it), `output` (the model answered, but not
 * with a valid document, even after the repair turn) and `request` (the server refused this request
 * as malformed or too large; retrying the same request cannot help).
 */
export type UpstreamErrorClass = 'upstream' | 'config' | 'output' | 'request';

/** Which upstream failed: the LLM endpoint or a search provider. */
export type Upstream = 'llm' | 'search';

/**
 * Whether the same call may succeed later, by {@link UpstreamErrorClass}: only an `upstream` failure
 * passes (requeue with backoff); credentials, a refused request or an invalid answer fail the same way
 * again.
 */
const TRANSIENT: Readonly<Record<UpstreamErrorClass, boolean>> = {
  upstream: true,
  config: false,
  output: false,
  request: false,
};

/** Options shared by the error constructors. */
interface UpstreamErrorOptions {
  /** The underlying error (SDK error, fetch error, zod error), kept for logs. */
  cause?: unknown;
  /** The HTTP status the upstream answered with, when it answered. */
  status?: number | undefined;
}

/**
 * Base class of every error this package throws on purpose. `transient` tells a job runner whether
 * the same call may succeed later (requeue with backoff) or never will (fail the job); it follows
 * from the error class.
 */
export abstract class UpstreamError extends Error {
  /** The error class, see {@link UpstreamErrorClass}. */
  readonly errorClass: UpstreamErrorClass;
  /** `true` when retrying the same call later can succeed. */
  readonly transient: boolean;
  /** Which upstream failed: `llm` or `search`. */
  readonly upstream: Upstream;
  /** The HTTP status the upstream answered with, or `undefined` when there was no answer. */
  readonly status: number | undefined;

  protected constructor(
    upstream: Upstream,
    errorClass: UpstreamErrorClass,
    message: string,
    options: UpstreamErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.upstream = upstream;
    this.status = options.status;
    this.errorClass = errorClass;
    this.transient = TRANSIENT[errorClass];
  }
}

/**
 * The base of the errors of one upstream and one error class: its constructor takes the message
 * (what failed, without secrets) and the options (cause and HTTP status).
 * @param upstream which upstream the errors are about
 * @param errorClass their class, which decides `transient`
 */
function upstreamErrorOf<C extends UpstreamErrorClass>(
  upstream: Upstream,
  errorClass: C,
): abstract new (
  message: string,
  options?: UpstreamErrorOptions,
) => UpstreamError & { readonly errorClass: C } {
  abstract class ClassifiedError extends UpstreamError {
    declare readonly errorClass: C;
    /** @param message what failed, without secrets @param options cause and HTTP status */
    constructor(message: string, options: UpstreamErrorOptions = {}) {
      super(upstream, errorClass, message, options);
    }
  }
  return ClassifiedError;
}

/**
 * The LLM endpoint could not be reached, timed out, rate-limited us (429) or failed (5xx) after the
 * SDK's own retries. Transient: retry the step later.
 */
export class LlmUnavailableError extends upstreamErrorOf('llm', 'upstream') {
  override readonly name = 'LlmUnavailableError';
}

/**
 * The LLM endpoint rejected our credentials (401/403) or does not know the model or path (404).
 * Permanent until an operator fixes `LLM_BASE_URL`, `LLM_API_KEY` or `LLM_MODEL`.
 */
export class LlmConfigError extends upstreamErrorOf('llm', 'config') {
  override readonly name = 'LlmConfigError';
}

/**
 * The LLM refused the request itself (400, 413, 422: context too long, unsupported parameter).
 * Permanent: the same request fails again.
 */
export class LlmRequestError extends upstreamErrorOf('llm', 'request') {
  override readonly name = 'LlmRequestError';
}

/**
 * The model's answer was not a JSON document valid against the task's schema, even after the bounded
 * repair turn(s). Permanent for this call. `task` names the call, `issues` are the last zod issues
 * (or the JSON parse error), `attempts` counts the completions requested.
 */
export class LlmOutputError extends upstreamErrorOf('llm', 'output') {
  override readonly name = 'LlmOutputError';
  /** The task name of the failed call, e.g. `prove_vote_analyst`. */
  readonly task: string;
  /** Human-readable problems with the last answer, one per issue. */
  readonly issues: string[];
  /** Completions requested for this call (1 + repair turns). */
  readonly attempts: number;
  /**
   * @param task the task name
   * @param issues problems with the last answer
   * @param attempts completions requested
   */
  constructor(task: string, issues: string[], attempts: number) {
    super(
      `${task}: the model's output stayed invalid after ${attempts} attempt(s): ${issues.slice(0, 5).join('; ')}`,
    );
    this.task = task;
    this.issues = issues;
    this.attempts = attempts;
  }
}

/** A search provider could not be reached, timed out, rate-limited us or failed (5xx). Transient. */
export class SearchUnavailableError extends upstreamErrorOf('search', 'upstream') {
  override readonly name = 'SearchUnavailableError';
}

/**
 * A search provider rejected our credentials or configuration (401/403, e.g. SearXNG without the
 * `json` output format enabled, or an invalid Tavily key). Permanent until an operator fixes it.
 */
export class SearchConfigError extends upstreamErrorOf('search', 'config') {
  override readonly name = 'SearchConfigError';
}

/**
 * Type guard for this package's errors, also across duplicated module instances.
 * @param error anything caught
 */
export function isUpstreamError(error: unknown): error is UpstreamError {
  return (
    error instanceof UpstreamError ||
    (error instanceof Error &&
      typeof (error as Partial<UpstreamError>).transient === 'boolean' &&
      typeof (error as Partial<UpstreamError>).errorClass === 'string')
  );
}

/**
 * `true` when the error is known to be temporary (LLM or search unreachable, timed out, 429, 5xx), so
 * the work that threw it should be retried later; `false` for every other error, including unknown
 * ones (bugs are not fixed by retrying).
 * @param error anything caught
 */
export function isTransient(error: unknown): boolean {
  return isUpstreamError(error) && error.transient;
}

/**
 * The {@link UpstreamErrorClass} of an error thrown by this package, or `null` for any other error.
 * @param error anything caught
 */
export function errorClassOf(error: unknown): UpstreamErrorClass | null {
  return isUpstreamError(error) ? error.errorClass : null;
}
