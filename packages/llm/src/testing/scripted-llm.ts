import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultInstance } from './json-default';

/** A chat message as received by the scripted server. */
export interface ScriptedMessage {
  role: string;
  content: string;
}

/** What a {@link ScriptedRespond} function is given for one completion request. */
export interface ScriptedRequest {
  /** The task: `response_format.json_schema.name`, or `unknown` when absent. */
  task: string;
  /** The request's messages (system, user, and for a repair turn the earlier answer and the complaint). */
  messages: ScriptedMessage[];
  /** `response_format.json_schema.schema`, or `null`. */
  schema: unknown;
  /** 0-based index of this request among all completion requests the server received. */
  callIndex: number;
  /** 0-based index of this request among those of the same task. */
  taskCallIndex: number;
  /** The model named in the request. */
  model: string;
}

/**
 * An HTTP error answer scripted by a test: return or throw `{ status, body }` (`body` optional;
 * default an OpenAI-style `{ error: { message, type, code } }`).
 */
export interface ScriptedErrorAnswer {
  status: number;
  body?: unknown;
}

/**
 * Produces the answer to one completion: an object or array (sent as its JSON), a string (sent
 * verbatim as the message content, e.g. broken JSON to exercise the repair turn), `undefined` (a
 * schema-valid default built from the request's JSON schema), or a {@link ScriptedErrorAnswer}
 * (returned or thrown; any other thrown error answers 500).
 */
export type ScriptedRespond = (request: ScriptedRequest) => unknown | Promise<unknown>;

/** One request recorded by the scripted server. */
export interface ScriptedCall {
  task: string;
  messages: ScriptedMessage[];
  schema: unknown;
  callIndex: number;
  model: string;
  /** The HTTP status answered. */
  status: number;
  /** The message content answered (for status 200), else `null`. */
  content: string | null;
  /** The raw request body. */
  body: Record<string, unknown>;
}

/** Options of {@link startScriptedLlm}. */
export interface ScriptedLlmOptions {
  /** Scripted answers; see {@link ScriptedRespond}. Without it every task gets its schema default. */
  respond?: ScriptedRespond;
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401 like OpenAI's. */
  apiKey?: string;
  /** Model ids listed by `GET /v1/models` (default `['scripted-model']`). */
  models?: string[];
  /** TCP port on 127.0.0.1 (default 0: a free port). */
  port?: number;
}

/** A running scripted OpenAI-compatible server. */
export interface ScriptedLlm {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:40123/v1`: pass it as the client's `baseUrl`. */
  baseUrl: string;
  /** Every completion request received, in order. */
  calls: ScriptedCall[];
  /** Makes the next `times` requests (completions and model listings) answer `status` with an OpenAI-style error body. */
  fail(next: { status: number; times: number }): void;
  /** Delays every following answer by `ms` milliseconds (0 to stop), e.g. to provoke client timeouts. */
  setDelay(ms: number): void;
  /** Stops the server (open connections are closed). */
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

function errorBody(status: number, message: string): unknown {
  const kind = ERROR_TYPES[status] ?? { type: 'server_error', code: null };
  return { error: { message, type: kind.type, param: null, code: kind.code } };
}

function isErrorAnswer(value: unknown): value is ScriptedErrorAnswer {
  if (typeof value !== 'object' || value === null) return false;
  const keys = Object.keys(value);
  return (
    typeof (value as { status?: unknown }).status === 'number' &&
    keys.every((k) => k === 'status' || k === 'body')
  );
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) =>
        typeof part === 'object' && part && 'text' in part ? String((part as { text: unknown }).text) : '',
      )
      .join('');
  return '';
}

/**
 * Starts a local HTTP server (127.0.0.1, free port) that speaks the OpenAI Chat Completions protocol
 * for tests: `POST /v1/chat/completions` answers from `options.respond` (see {@link ScriptedRespond})
 * with a `chat.completion` object (usage counted in characters/4), `GET /v1/models` lists
 * `options.models`. A stand-in for an external service in tests, never a production default.
 * @param options the script, an optional required API key and the model list
 */
export async function startScriptedLlm(options: ScriptedLlmOptions = {}): Promise<ScriptedLlm> {
  const calls: ScriptedCall[] = [];
  const taskCounts = new Map<string, number>();
  const models = options.models ?? ['scripted-model'];
  let failure: { status: number; times: number } | null = null;
  let delayMs = 0;

  const takeFailure = (): number | null => {
    if (!failure || failure.times <= 0) return null;
    failure.times -= 1;
    return failure.status;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      send(res, 401, errorBody(401, 'Incorrect API key provided.'));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      const failed = takeFailure();
      if (failed !== null) return send(res, failed, errorBody(failed, `scripted failure ${failed}`));
      send(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'scripted' })),
      });
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
      send(res, 404, errorBody(404, `Unknown request URL: ${req.method} ${url.pathname}`));
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      send(res, 400, errorBody(400, 'We could not parse the JSON body of your request.'));
      return;
    }
    const responseFormat = body.response_format as
      { json_schema?: { name?: unknown; schema?: unknown } } | undefined;
    const task =
      typeof responseFormat?.json_schema?.name === 'string' ? responseFormat.json_schema.name : 'unknown';
    const schema = responseFormat?.json_schema?.schema ?? null;
    const messages = (
      Array.isArray(body.messages) ? (body.messages as { role?: unknown; content?: unknown }[]) : []
    ).map((m) => ({
      role: String(m.role ?? ''),
      content: textOf(m.content),
    }));
    const model = typeof body.model === 'string' ? body.model : '';
    const callIndex = calls.length;
    const taskCallIndex = taskCounts.get(task) ?? 0;
    taskCounts.set(task, taskCallIndex + 1);
    const call: ScriptedCall = { task, messages, schema, callIndex, model, status: 200, content: null, body };
    calls.push(call);

    const failed = takeFailure();
    if (failed !== null) {
      call.status = failed;
      return send(res, failed, errorBody(failed, `scripted failure ${failed}`));
    }
    let answer: unknown;
    try {
      answer = options.respond
        ? await options.respond({ task, messages, schema, callIndex, taskCallIndex, model })
        : undefined;
    } catch (error) {
      answer = isErrorAnswer(error)
        ? error
        : { status: 500, body: errorBody(500, `scripted responder threw: ${(error as Error).message}`) };
    }
    if (isErrorAnswer(answer)) {
      call.status = answer.status;
      return send(
        res,
        answer.status,
        answer.body ?? errorBody(answer.status, `scripted error ${answer.status}`),
      );
    }
    const content =
      typeof answer === 'string'
        ? answer
        : JSON.stringify(answer === undefined ? defaultInstance(schema) : answer);
    call.content = content;
    const promptTokens = Math.ceil(raw.length / 4);
    const completionTokens = Math.ceil(content.length / 4);
    send(res, 200, {
      id: `chatcmpl-${randomUUID()}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: model || (models[0] ?? 'scripted-model'),
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, errorBody(500, (error as Error).message));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    calls,
    fail(next) {
      failure = { ...next };
    },
    setDelay(ms) {
      delayMs = ms;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
