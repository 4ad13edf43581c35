import { createServer, type Server } from 'node:http';

/**
 * Words that mean the same thing to the scripted model: each group is one dimension, so texts that
 * share no word but use words of one group are near in meaning.
 */
const CONCEPTS: readonly (readonly string[])[] = [
  [
    'translate',
    'translates',
    'translation',
    'translator',
    'language',
    'languages',
    'interpret',
    'tongue',
    'french',
    'spanish',
    'german',
    'multilingual',
  ],
  ['swap', 'swaps', 'exchange', 'trade', 'convert', 'token', 'tokens', 'liquidity', 'dex'],
  ['chart', 'charts', 'graph', 'plot', 'visualize', 'visualise', 'diagram'],
  ['weather', 'forecast', 'rain', 'temperature', 'climate'],
  ['summarize', 'summarise', 'summary', 'digest', 'condense', 'tldr'],
];

/** Options of {@link startScriptedEmbeddings}. */
export interface ScriptedEmbeddingsOptions {
  /** Dimensions of every vector (at least the concept count plus one; default 64). */
  dims?: number;
}

/** A running scripted embeddings server. */
export interface ScriptedEmbeddings {
  /** Base URL of the OpenAI-compatible API: `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  /** Inputs embedded so far (one per text). */
  readonly inputs: string[];
  /** Requests received (each may carry several inputs). */
  readonly requests: number;
  /** `status`: every request answers this HTTP status with an OpenAI error body; `null`: answers normally. */
  failWith(status: number | null): void;
  /** The vector the server gives a text (not scaled to unit length). */
  vector(text: string): number[];
  close(): Promise<void>;
}

/**
 * A stand-in for an OpenAI-compatible embeddings endpoint, for tests, the bench and demos (never a
 * production default): `POST /v1/embeddings` with `{ model, input: string | string[] }` answers
 * `{ object: "list", data: [{ object: "embedding", index, embedding }], model, usage }` with
 * deterministic vectors: one dimension per concept of {@link CONCEPTS} (its words count there), every
 * other word hashed onto the remaining dimensions. Listens on 127.0.0.1 and a free port.
 */
export async function startScriptedEmbeddings(
  options: ScriptedEmbeddingsOptions = {},
): Promise<ScriptedEmbeddings> {
  const dims = options.dims ?? 64;
  if (dims <= CONCEPTS.length) throw new RangeError(`dims must be above ${CONCEPTS.length}`);
  const concept = new Map<string, number>();
  CONCEPTS.forEach((words, i) => words.forEach((w) => concept.set(w, i)));
  const inputs: string[] = [];
  let requests = 0;
  let failStatus: number | null = null;

  const vector = (text: string): number[] => {
    const v = new Array<number>(dims).fill(0);
    const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    for (const word of words) {
      const c = concept.get(word);
      if (c !== undefined) {
        v[c] = (v[c] as number) + 1;
        continue;
      }
      let h = 2166136261;
      for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619);
      const at = CONCEPTS.length + ((h >>> 0) % (dims - CONCEPTS.length));
      v[at] = (v[at] as number) + 0.5;
    }
    if (words.length === 0) v[dims - 1] = 1;
    return v;
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || req.url !== '/v1/embeddings')
        return send(404, { error: { message: 'not found', type: 'invalid_request_error' } });
      if (failStatus !== null)
        return send(failStatus, { error: { message: 'scripted failure', type: 'server_error' } });
      let body: { model?: unknown; input?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        return send(400, { error: { message: 'invalid JSON', type: 'invalid_request_error' } });
      }
      const texts = typeof body.input === 'string' ? [body.input] : body.input;
      if (!Array.isArray(texts) || texts.some((t) => typeof t !== 'string') || typeof body.model !== 'string')
        return send(400, {
          error: { message: "'input' and 'model' are required", type: 'invalid_request_error' },
        });
      inputs.push(...(texts as string[]));
      send(200, {
        object: 'list',
        data: (texts as string[]).map((t, index) => ({ object: 'embedding', index, embedding: vector(t) })),
        model: body.model,
        usage: { prompt_tokens: texts.length, total_tokens: texts.length },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // A bench that fails must still exit: the server alone keeps no process alive.
  server.unref();
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the scripted embeddings server has no port');
  return {
    baseUrl: `http://127.0.0.1:${address.port}/v1`,
    inputs,
    get requests() {
      return requests;
    },
    failWith(status) {
      failStatus = status;
    },
    vector,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
