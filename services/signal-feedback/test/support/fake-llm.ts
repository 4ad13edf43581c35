import { createServer, type Server } from 'node:http';

/** A local OpenAI-compatible Chat Completions server answering from a script. */
export interface FakeLlm {
  /** Base URL to use as LLM_BASE_URL (ends in /v1). */
  baseUrl: string;
  /** Every request body received, oldest first. */
  requests: { model: string; messages: { role: string; content: string }[] }[];
  /** Answers to give, in order (`content` of the assistant message, or an HTTP status to fail with); the last one repeats. */
  script: ({ content: string } | { status: number })[];
  /** Replaces the script, restarts it and forgets the recorded requests. */
  reset(script: FakeLlm['script']): void;
  close(): Promise<void>;
}

/** Starts the fake on 127.0.0.1, port 0. It speaks POST /v1/chat/completions only. */
export async function startFakeLlm(script: FakeLlm['script'] = []): Promise<FakeLlm> {
  let served = 0;
  const fake: Omit<FakeLlm, 'baseUrl' | 'close'> = {
    requests: [],
    script,
    reset(next) {
      fake.script = next;
      fake.requests.length = 0;
      served = 0;
    },
  };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      const body = JSON.parse(raw) as FakeLlm['requests'][number];
      fake.requests.push(body);
      const step = fake.script[Math.min(served++, fake.script.length - 1)] ?? { status: 500 };
      if ('status' in step) {
        res
          .writeHead(step.status, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'scripted failure', type: 'server_error' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${served}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [
            { index: 0, message: { role: 'assistant', content: step.content }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return Object.assign(fake, {
    baseUrl: `http://127.0.0.1:${address.port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

/** A valid LLM answer. */
export function llmAnswer(overrides: Record<string, string> = {}): { content: string } {
  return {
    content: JSON.stringify({
      diagnosis: 'Card payments fail for declined cards.',
      current_state: 'Checkout shows a generic error.\nUsers abandon.',
      proposed_change: 'Offer another payment method after a decline.',
      predicted_impact: 'About 30% fewer abandoned checkouts.',
      ...overrides,
    }),
  };
}
