import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { LlmConfigError, LlmOutputError, LlmRequestError, LlmUnavailableError } from './errors';
import { describeIssues, parseModelJson, schemaNameFor } from './json';

/** Options of {@link createLlmClient}. */
export interface LlmClientOptions {
  /** Base URL of the OpenAI-compatible API including its version segment, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  baseUrl: string;
  /** Bearer API key; optional because local servers (Ollama, vLLM, llama.cpp) usually need none. */
  apiKey?: string;
  /** Model name sent with every completion, e.g. `gpt-4o-mini` or `llama3.1:8b`. */
  model: string;
  /** Timeout of one HTTP request in milliseconds (default 120000). */
  timeoutMs?: number;
  /** Retries of one HTTP request by the SDK on connection errors, 408, 409, 429 and 5xx, with backoff (default 2). */
  maxRetries?: number;
  /** Repair turns after an invalid answer before {@link LlmOutputError} (default 1). */
  repairAttempts?: number;
  /** Timeout of {@link LlmClient.probe} in milliseconds (default 10000). */
  probeTimeoutMs?: number;
}

/** One structured-output call. */
export interface CompletionRequest<T> {
  /** Stable task name, e.g. `prove_vote_analyst`; sent as the JSON schema's name (sanitised to `[a-zA-Z0-9_-]`, ≤ 64 chars). */
  task: string;
  /** The system prompt; the JSON schema of the answer is appended to it. */
  system: string;
  /** The user message. */
  user: string;
  /** The zod schema the answer must satisfy; its JSON Schema (input side) is sent to the model. */
  schema: z.ZodType<T>;
  /** Sampling temperature (server default when omitted). */
  temperature?: number;
  /** Maximum tokens of the answer (`max_tokens`; server default when omitted). */
  maxTokens?: number;
}

/** Token usage summed over the attempts of one call, as reported by the server. */
export interface CompletionUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** Outcome of {@link LlmClient.complete}. */
export interface CompletionResult<T> {
  /** The validated (and zod-transformed) answer. */
  value: T;
  /** Completions requested: 1, or more when repair turns were needed. */
  attempts: number;
  /** Token usage summed over the attempts, or `null` when the server reported none. */
  usage: CompletionUsage | null;
}

/** Outcome of {@link LlmClient.probe}, shaped for market-intel's health contract. */
export interface LlmProbeResult {
  /** `true` when the endpoint answered and serves the configured model. */
  ok: boolean;
  /** Round-trip time of the probe in milliseconds (integer). */
  latency_ms: number;
  /** What failed, without secrets, or `null`. */
  error: string | null;
  /** `upstream` (retry later) or `config` (operator must fix), `null` when ok. */
  errorClass: 'upstream' | 'config' | null;
}

/** A client of one OpenAI-compatible Chat Completions endpoint and model. */
export interface LlmClient {
  /** The model name in use. */
  readonly model: string;
  /**
   * Asks for a JSON answer valid against `request.schema`: Chat Completions with
   * `response_format: { type: 'json_schema', json_schema: { name, schema, strict: false } }` and the
   * same schema described in the system prompt (some compatible servers ignore `response_format`; a
   * server that refuses it with a 400 naming `response_format`/`json_schema` is asked again without it,
   * and this client stops sending it; likewise `temperature`, which reasoning models refuse).
   * The answer is parsed (code fences tolerated) and validated; an invalid answer gets up to
   * `repairAttempts` repair turns quoting the problems.
   * @throws {LlmOutputError} the answer stayed invalid (permanent)
   * @throws {LlmUnavailableError} network error, timeout, 429 or 5xx after the SDK's retries (transient)
   * @throws {LlmConfigError} 401, 403 or 404 (operator must fix)
   * @throws {LlmRequestError} 400, 413 or 422 (permanent)
   */
  complete<T>(request: CompletionRequest<T>): Promise<CompletionResult<T>>;
  /**
   * Checks the endpoint with `GET {baseUrl}/models`: the cheapest call that every common
   * OpenAI-compatible server implements (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server), costs no
   * tokens and is authenticated like completions. The model counts as served when the list is empty,
   * names it (Ollama's `:latest` suffix tolerated) or names a single model (llama.cpp serves one
   * model whatever the request says). Never throws.
   */
  probe(): Promise<LlmProbeResult>;
}

/**
 * Maps an error from the SDK to this package's errors (see {@link LlmClient.complete}).
 * @param error what the SDK threw
 * @param what the operation, for the message
 * @param timing how long the request ran against its timeout, in milliseconds (a connection error at
 * the deadline is reported as a timeout)
 */
export function classifyLlmError(
  error: unknown,
  what: string,
  timing?: { elapsedMs: number; timeoutMs: number },
): Error {
  const timedOut =
    error instanceof OpenAI.APIConnectionTimeoutError ||
    (timing !== undefined && timing.elapsedMs >= timing.timeoutMs);
  if (timedOut && error instanceof OpenAI.APIError)
    return new LlmUnavailableError(`${what}: the LLM request timed out`, { cause: error });
  if (error instanceof OpenAI.APIUserAbortError)
    return new LlmUnavailableError(`${what}: the LLM request was aborted`, { cause: error });
  if (error instanceof OpenAI.APIConnectionError) {
    return new LlmUnavailableError(`${what}: cannot reach the LLM endpoint (${networkCause(error)})`, {
      cause: error,
    });
  }
  if (error instanceof OpenAI.APIError) {
    const status = error.status ?? 0;
    const detail = `${what}: the LLM endpoint answered ${status} (${error.message.slice(0, 300)})`;
    if (status === 401 || status === 403 || status === 404)
      return new LlmConfigError(detail, { cause: error, status });
    if (status === 400 || status === 413 || status === 422)
      return new LlmRequestError(detail, { cause: error, status });
    return new LlmUnavailableError(detail, { cause: error, status });
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** The most specific reason in a fetch error's cause chain: an errno code such as `ECONNREFUSED`, or a message. */
function networkCause(error: Error): string {
  let node: unknown = error;
  let message = error.message;
  for (let depth = 0; depth < 5 && typeof node === 'object' && node !== null; depth += 1) {
    const { code, message: text, cause } = node as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === 'string') return code;
    if (typeof text === 'string' && text) message = text;
    node = cause;
  }
  return message;
}

function schemaPrompt(system: string, jsonSchema: Record<string, unknown>): string {
  return (
    `${system}\n\n` +
    'Answer with one JSON document only (no prose, no code fence) that is valid against this JSON Schema:\n' +
    JSON.stringify(jsonSchema)
  );
}

function repairPrompt(problems: string[]): string {
  return (
    'Your previous answer cannot be accepted:\n' +
    problems
      .slice(0, 20)
      .map((p) => `- ${p}`)
      .join('\n') +
    '\nAnswer again with the corrected JSON document only, valid against the JSON Schema given in the system message.'
  );
}

// Pipelines reuse a handful of schemas thousands of times: convert each once.
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

/** The JSON Schema of the model's answer: the input side of the zod schema (defaults make fields optional). */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  let converted = jsonSchemas.get(schema);
  if (!converted) {
    converted = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    jsonSchemas.set(schema, converted);
  }
  return converted;
}

function modelServed(model: string, ids: string[]): boolean {
  if (ids.length <= 1) return true;
  return ids.some((id) => id === model || id === `${model}:latest` || `${id}:latest` === model);
}

/**
 * Creates an {@link LlmClient} over the official `openai` SDK.
 * @param options endpoint, credentials, model, timeouts and retry bounds
 */
export function createLlmClient(options: LlmClientOptions): LlmClient {
  const repairAttempts = options.repairAttempts ?? 1;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const openai = new OpenAI({
    baseURL: options.baseUrl,
    // The SDK insists on a key; local servers ignore the Authorization header.
    apiKey: options.apiKey || 'no-key',
    timeout: timeoutMs,
    maxRetries: options.maxRetries ?? 2,
  });
  const probeTimeoutMs = options.probeTimeoutMs ?? 10_000;

  // Optional parameters a server refused with a 400 naming them (`response_format` on servers without
  // structured outputs, `temperature` on reasoning models): later calls leave them out. The schema in
  // the system prompt and the zod validation apply either way.
  const refused = { responseFormat: false, temperature: false };

  async function create<T>(
    request: CompletionRequest<T>,
    messages: ChatCompletionMessageParam[],
    jsonSchema: Record<string, unknown>,
  ): Promise<OpenAI.Chat.Completions.ChatCompletion> {
    for (;;) {
      const withFormat = !refused.responseFormat;
      const withTemperature = request.temperature !== undefined && !refused.temperature;
      const started = performance.now();
      try {
        return await openai.chat.completions.create({
          model: options.model,
          messages,
          ...(withFormat
            ? {
                response_format: {
                  type: 'json_schema' as const,
                  json_schema: { name: schemaNameFor(request.task), schema: jsonSchema, strict: false },
                },
              }
            : {}),
          ...(withTemperature ? { temperature: request.temperature } : {}),
          ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }),
        });
      } catch (error) {
        if (error instanceof OpenAI.APIError && error.status === 400) {
          if (withFormat && /response_format|json_schema/i.test(error.message)) {
            refused.responseFormat = true;
            continue;
          }
          if (withTemperature && /temperature/i.test(error.message)) {
            refused.temperature = true;
            continue;
          }
        }
        throw classifyLlmError(error, request.task, { elapsedMs: performance.now() - started, timeoutMs });
      }
    }
  }

  async function complete<T>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
    const jsonSchema = jsonSchemaOf(request.schema);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: schemaPrompt(request.system, jsonSchema) },
      { role: 'user', content: request.user },
    ];
    const total: CompletionUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
    let usageReported = false;
    const usage = (): CompletionUsage | null => (usageReported ? { ...total } : null);
    let problems: string[] = [];
    for (let attempt = 1; attempt <= repairAttempts + 1; attempt += 1) {
      const completion = await create(request, messages, jsonSchema);
      if (completion.usage) {
        usageReported = true;
        total.promptTokens += completion.usage.prompt_tokens ?? 0;
        total.completionTokens += completion.usage.completion_tokens ?? 0;
        total.totalTokens += completion.usage.total_tokens ?? 0;
      }
      const choice = completion.choices?.[0];
      const content = choice?.message?.content ?? '';
      const parsed = parseModelJson(content);
      if (parsed.ok) {
        const checked = request.schema.safeParse(parsed.value);
        if (checked.success) return { value: checked.data, attempts: attempt, usage: usage() };
        problems = describeIssues(checked.error);
      } else {
        problems = [
          choice?.finish_reason === 'length'
            ? 'the answer was cut off at the token limit; answer more briefly'
            : parsed.error,
        ];
      }
      messages.push(
        { role: 'assistant', content: content || '(empty)' },
        { role: 'user', content: repairPrompt(problems) },
      );
    }
    throw new LlmOutputError(request.task, problems, repairAttempts + 1);
  }

  async function probe(): Promise<LlmProbeResult> {
    const started = performance.now();
    const latency = () => Math.max(0, Math.round(performance.now() - started));
    try {
      const ids: string[] = [];
      // One page is enough to find the model on every server we know of.
      const page = await openai.models.list({ timeout: probeTimeoutMs, maxRetries: 0 });
      for (const model of page.data) ids.push(model.id);
      if (!modelServed(options.model, ids)) {
        return {
          ok: false,
          latency_ms: latency(),
          error: `model "${options.model}" is not served by the LLM endpoint`,
          errorClass: 'config',
        };
      }
      return { ok: true, latency_ms: latency(), error: null, errorClass: null };
    } catch (error) {
      const classified = classifyLlmError(error, 'probe', {
        elapsedMs: performance.now() - started,
        timeoutMs: probeTimeoutMs,
      });
      const errorClass = classified instanceof LlmConfigError ? 'config' : 'upstream';
      return { ok: false, latency_ms: latency(), error: classified.message, errorClass };
    }
  }

  return { model: options.model, complete, probe };
}
