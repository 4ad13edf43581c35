import { createServer } from 'node:net';
import { z } from 'zod';
import {
  LlmConfigError,
  LlmOutputError,
  LlmRequestError,
  LlmUnavailableError,
  createLlmClient,
  errorClassOf,
  isTransient,
  type LlmClient,
} from '../src';
import { startScriptedLlm, type ScriptedLlm, type ScriptedRespond } from '../src/testing';

const Verdict = z.strictObject({
  vote: z.enum(['APPROVE', 'CONDITIONAL', 'REJECT']),
  rationale: z.string().min(5),
  conditions: z.array(z.string()).max(3),
});

const request = {
  task: 'prove_vote_analyst',
  system: 'You are the Analyst.',
  user: 'Vote on the idea.',
  schema: Verdict,
};

let llm: ScriptedLlm | undefined;
async function start(
  respond?: ScriptedRespond,
  extra: { apiKey?: string; models?: string[] } = {},
): Promise<{ server: ScriptedLlm; client: LlmClient }> {
  llm = await startScriptedLlm({ ...(respond ? { respond } : {}), ...extra });
  const client = createLlmClient({
    baseUrl: llm.baseUrl,
    model: 'scripted-model',
    maxRetries: 0,
    timeoutMs: 2000,
    ...(extra.apiKey ? { apiKey: extra.apiKey } : {}),
  });
  return { server: llm, client };
}

afterEach(async () => {
  await llm?.close();
  llm = undefined;
});

describe('LlmClient.complete', () => {
  it('When the model answers valid JSON, then the validated value is returned after one attempt with usage', async () => {
    const { server, client } = await start(() => ({
      vote: 'REJECT',
      rationale: 'No clear buyer.',
      conditions: [],
    }));
    const result = await client.complete(request);
    expect(result).toEqual({
      value: { vote: 'REJECT', rationale: 'No clear buyer.', conditions: [] },
      attempts: 1,
      usage: expect.objectContaining({ totalTokens: expect.any(Number) }),
    });
    expect(server.calls).toHaveLength(1);
    const call = server.calls[0]!;
    expect(call.task).toBe('prove_vote_analyst');
    expect(call.model).toBe('scripted-model');
    expect(call.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'prove_vote_analyst',
        schema: expect.objectContaining({ type: 'object' }),
        strict: false,
      },
    });
    // The schema is also described in the system prompt for servers that ignore response_format.
    expect(call.messages[0]!.role).toBe('system');
    expect(call.messages[0]!.content).toContain('"CONDITIONAL"');
    expect(call.messages[1]).toEqual({ role: 'user', content: 'Vote on the idea.' });
  });

  it('When the answer is wrapped in a ```json fence, then it is still accepted', async () => {
    const { client } = await start(
      () => '```json\n{"vote":"APPROVE","rationale":"Strong pull.","conditions":[]}\n```',
    );
    await expect(client.complete(request)).resolves.toMatchObject({
      value: { vote: 'APPROVE' },
      attempts: 1,
    });
  });

  it('When the task name has characters outside [a-zA-Z0-9_-], then the schema name is sanitised', async () => {
    const { server, client } = await start(() => ({
      vote: 'APPROVE',
      rationale: 'Strong pull.',
      conditions: [],
    }));
    await client.complete({ ...request, task: 'prove vote/analyst' });
    expect(server.calls[0]!.task).toBe('prove_vote_analyst');
  });

  it('When the first answer is invalid and the repair answer valid, then the value comes after two attempts and the repair turn quotes the issues', async () => {
    const { server, client } = await start(({ taskCallIndex }) =>
      taskCallIndex === 0
        ? { vote: 'MAYBE', rationale: 'Unsure.' }
        : { vote: 'CONDITIONAL', rationale: 'Only with a pilot.', conditions: ['pilot'] },
    );
    const result = await client.complete(request);
    expect(result.value.vote).toBe('CONDITIONAL');
    expect(result.attempts).toBe(2);
    expect(server.calls).toHaveLength(2);
    const repair = server.calls[1]!.messages;
    expect(repair).toHaveLength(4);
    expect(repair[2]).toEqual({ role: 'assistant', content: '{"vote":"MAYBE","rationale":"Unsure."}' });
    expect(repair[3]!.role).toBe('user');
    expect(repair[3]!.content).toContain('vote:');
    expect(repair[3]!.content).toContain('conditions:');
  });

  it('When the answer is not JSON at all and the repair is valid, then the repair turn names the parse error', async () => {
    const { server, client } = await start(({ taskCallIndex }) =>
      taskCallIndex === 0
        ? 'I think we should approve it.'
        : { vote: 'APPROVE', rationale: 'Strong pull.', conditions: [] },
    );
    await expect(client.complete(request)).resolves.toMatchObject({ attempts: 2 });
    expect(server.calls[1]!.messages[3]!.content).toContain('not JSON');
  });

  it('When the answer stays invalid after the repair turn, then LlmOutputError (permanent) is thrown with the issues', async () => {
    const { server, client } = await start(() => ({ vote: 'MAYBE' }));
    const error = await client.complete(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmOutputError);
    expect(error).toMatchObject({
      task: 'prove_vote_analyst',
      attempts: 2,
      transient: false,
      errorClass: 'output',
    });
    expect((error as LlmOutputError).issues.join(' ')).toContain('vote');
    expect(isTransient(error)).toBe(false);
    expect(server.calls).toHaveLength(2);
  });

  it('When repairAttempts is 0, then the first invalid answer fails the call', async () => {
    llm = await startScriptedLlm({ respond: () => 'nope' });
    const client = createLlmClient({ baseUrl: llm.baseUrl, model: 'm', maxRetries: 0, repairAttempts: 0 });
    await expect(client.complete(request)).rejects.toMatchObject({ name: 'LlmOutputError', attempts: 1 });
    expect(llm.calls).toHaveLength(1);
  });

  it('When the API key is rejected (401), then LlmConfigError is thrown and it is not transient', async () => {
    llm = await startScriptedLlm({ apiKey: 'sk-right' });
    const client = createLlmClient({ baseUrl: llm.baseUrl, apiKey: 'sk-wrong', model: 'm', maxRetries: 0 });
    const error = await client.complete(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmConfigError);
    expect(error).toMatchObject({ status: 401, errorClass: 'config' });
    expect(isTransient(error)).toBe(false);
    expect((error as Error).message).not.toContain('sk-wrong');
  });

  it('When the right API key is sent, then the call succeeds', async () => {
    llm = await startScriptedLlm({ apiKey: 'sk-right' });
    const client = createLlmClient({ baseUrl: llm.baseUrl, apiKey: 'sk-right', model: 'm', maxRetries: 0 });
    await expect(client.complete(request)).resolves.toMatchObject({ attempts: 1 });
  });

  it('When the server answers 500, then LlmUnavailableError (transient) is thrown', async () => {
    const { server, client } = await start();
    server.fail({ status: 500, times: 5 });
    const error = await client.complete(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect(error).toMatchObject({ status: 500, errorClass: 'upstream' });
    expect(isTransient(error)).toBe(true);
    expect(errorClassOf(error)).toBe('upstream');
  });

  it('When the server answers 429 once and the SDK may retry, then the call succeeds on the retry', async () => {
    llm = await startScriptedLlm();
    const client = createLlmClient({ baseUrl: llm.baseUrl, model: 'm', maxRetries: 1 });
    llm.fail({ status: 429, times: 1 });
    await expect(client.complete(request)).resolves.toMatchObject({ attempts: 1 });
    expect(llm.calls.map((c) => c.status)).toEqual([429, 200]);
  });

  it('When the responder scripts a 404 (unknown model), then LlmConfigError is thrown', async () => {
    const { client } = await start(() => ({ status: 404 }));
    await expect(client.complete(request)).rejects.toBeInstanceOf(LlmConfigError);
  });

  it('When the responder scripts a 400 (context too long), then LlmRequestError (permanent) is thrown', async () => {
    const { client } = await start(() => {
      throw {
        status: 400,
        body: { error: { message: 'context_length_exceeded', type: 'invalid_request_error' } },
      };
    });
    const error = await client.complete(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect(isTransient(error)).toBe(false);
  });

  it('When nothing listens at the base URL (ECONNREFUSED), then LlmUnavailableError is thrown', async () => {
    const port = await freePort();
    const client = createLlmClient({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', maxRetries: 0 });
    const error = await client.complete(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect((error as Error).message).toContain('ECONNREFUSED');
  });

  it('When the server answers slower than the timeout, then LlmUnavailableError is thrown', async () => {
    llm = await startScriptedLlm();
    llm.setDelay(500);
    const client = createLlmClient({ baseUrl: llm.baseUrl, model: 'm', maxRetries: 0, timeoutMs: 100 });
    const error = await client.complete(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect((error as Error).message).toContain('timed out');
  });

  it('When no answer is scripted, then the scripted server answers a schema-valid default', async () => {
    const { client } = await start();
    const result = await client.complete(request);
    expect(Verdict.safeParse(result.value).success).toBe(true);
    expect(result.value.vote).toBe('APPROVE');
  });
});

describe('LlmClient.probe', () => {
  it('When the endpoint lists the model, then probe is ok with a latency', async () => {
    const { client } = await start(undefined, { models: ['other', 'scripted-model'] });
    const probe = await client.probe();
    expect(probe).toEqual({ ok: true, latency_ms: expect.any(Number), error: null, errorClass: null });
    expect(Number.isInteger(probe.latency_ms)).toBe(true);
  });

  it('When the endpoint serves several models but not ours, then probe reports config', async () => {
    const { client } = await start(undefined, { models: ['a', 'b'] });
    await expect(client.probe()).resolves.toMatchObject({
      ok: false,
      errorClass: 'config',
      error: expect.stringContaining('scripted-model'),
    });
  });

  it('When Ollama lists the model with its :latest tag, then probe is ok', async () => {
    llm = await startScriptedLlm({ models: ['llama3.1:latest', 'qwen2.5:7b'] });
    const client = createLlmClient({ baseUrl: llm.baseUrl, model: 'llama3.1', maxRetries: 0 });
    await expect(client.probe()).resolves.toMatchObject({ ok: true });
  });

  it('When the key is rejected, then probe reports config', async () => {
    llm = await startScriptedLlm({ apiKey: 'sk-right' });
    const client = createLlmClient({ baseUrl: llm.baseUrl, apiKey: 'sk-wrong', model: 'scripted-model' });
    await expect(client.probe()).resolves.toMatchObject({
      ok: false,
      errorClass: 'config',
      error: expect.stringContaining('401'),
    });
  });

  it('When the endpoint fails with 503, then probe reports upstream without retrying', async () => {
    const { server, client } = await start();
    server.fail({ status: 503, times: 1 });
    await expect(client.probe()).resolves.toMatchObject({ ok: false, errorClass: 'upstream' });
  });

  it('When nothing listens, then probe reports upstream', async () => {
    const port = await freePort();
    const client = createLlmClient({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' });
    await expect(client.probe()).resolves.toMatchObject({
      ok: false,
      errorClass: 'upstream',
      error: expect.stringContaining('ECONNREFUSED'),
    });
  });
});

/** A port that was free a moment ago (bound then released). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

describe('servers without structured outputs', () => {
  it('When the server refuses response_format with a 400, then the client retries without it and stops sending it', async () => {
    llm = await startScriptedLlm({
      respond: ({ task }) =>
        task === 'unknown'
          ? { vote: 'APPROVE', rationale: 'Strong pull.', conditions: [] }
          : {
              status: 400,
              body: {
                error: {
                  message:
                    "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
                  type: 'invalid_request_error',
                },
              },
            },
    });
    const client = createLlmClient({ baseUrl: llm.baseUrl, model: 'm', maxRetries: 0 });
    await expect(client.complete(request)).resolves.toMatchObject({
      value: { vote: 'APPROVE' },
      attempts: 1,
    });
    await expect(client.complete(request)).resolves.toMatchObject({ attempts: 1 });
    expect(llm.calls.map((c) => [c.task, c.status])).toEqual([
      ['prove_vote_analyst', 400],
      ['unknown', 200],
      ['unknown', 200],
    ]);
    // The schema still reaches the model through the system prompt.
    expect(llm.calls[2]!.messages[0]!.content).toContain('JSON Schema');
  });

  it('When a 400 does not mention response_format, then it is not retried', async () => {
    llm = await startScriptedLlm({
      respond: () => ({
        status: 400,
        body: { error: { message: 'maximum context length exceeded', type: 'invalid_request_error' } },
      }),
    });
    const client = createLlmClient({ baseUrl: llm.baseUrl, model: 'm', maxRetries: 0 });
    await expect(client.complete(request)).rejects.toBeInstanceOf(LlmRequestError);
    expect(llm.calls).toHaveLength(1);
  });
});

describe('reasoning models', () => {
  it('When the server refuses the temperature with a 400, then the client retries without it and stops sending it', async () => {
    llm = await startScriptedLlm({
      respond: ({ callIndex }) =>
        callIndex === 0
          ? {
              status: 400,
              body: {
                error: {
                  message:
                    "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.",
                  type: 'invalid_request_error',
                },
              },
            }
          : { vote: 'APPROVE', rationale: 'Strong pull.', conditions: [] },
    });
    const reasoning = createLlmClient({ baseUrl: llm.baseUrl, model: 'o-model', maxRetries: 0 });
    await expect(reasoning.complete({ ...request, temperature: 0.2 })).resolves.toMatchObject({
      attempts: 1,
    });
    await expect(reasoning.complete({ ...request, temperature: 0.2 })).resolves.toMatchObject({
      attempts: 1,
    });
    expect(llm.calls.map((c) => [c.status, 'temperature' in c.body])).toEqual([
      [400, true],
      [200, false],
      [200, false],
    ]);
    // A fresh client (another model) sends it again.
    const other = createLlmClient({ baseUrl: llm.baseUrl, model: 'm', maxRetries: 0 });
    await other.complete({ ...request, temperature: 0.2 });
    expect(llm.calls[3]!.body.temperature).toBe(0.2);
  });
});
