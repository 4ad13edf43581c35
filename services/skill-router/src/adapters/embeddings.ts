import { findSsrfBlockedError, type SsrfPolicy } from '@repo/ssrf-guard';
import { ExponentialBackoff, handleWhen, retry } from 'cockatiel';
import { request, type Dispatcher } from 'undici';
import { z } from 'zod';
import type { Embedder } from '../domain/semantic';
import { createSkillDispatcher } from './skill-http';

/** Options of {@link createEmbeddingsClient}. */
export interface EmbeddingsClientOptions {
  /** Base URL of the OpenAI-compatible API; requests go to `{baseUrl}/embeddings`. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer`; absent for endpoints that need none. */
  apiKey?: string;
  /** Deadline of one request (connect, headers and body), in ms. */
  timeoutMs: number;
  /**
   * The SSRF policy of the service's outbound calls; the configured endpoint's own host is added to
   * its allowlist (the operator chose it), so redirects and other hosts stay refused.
   */
  policy: SsrfPolicy;
  /** Largest answer read, in bytes (default 16 MiB). */
  maxResponseBytes?: number;
}

/** An {@link Embedder} that owns pooled connections. */
export interface EmbeddingsClient extends Embedder {
  close(): Promise<void>;
}

/** Why an embeddings request failed: `retryable` for timeouts, network errors, 429 and 5xx. */
export class EmbeddingsError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'EmbeddingsError';
  }
}

/** Most dimensions accepted in one embedding (the largest common models have 3,072). */
const MAX_DIMENSIONS = 8192;

const EmbeddingsAnswer = z.object({
  data: z
    .array(
      z.object({
        index: z.number().int().min(0),
        embedding: z.array(z.number()).min(1).max(MAX_DIMENSIONS),
      }),
    )
    .min(1),
});

/**
 * A client of an OpenAI-compatible embeddings endpoint (`POST {base}/embeddings` with `{ model,
 * input: string[] }`, answered `{ data: [{ index, embedding }] }`; services/skill-router/README.md,
 * "Search by meaning"), through `@repo/ssrf-guard`'s guarded undici dispatcher (no redirects
 * followed). Each request has `timeoutMs`; retryable failures (timeouts, network errors, 429, 5xx)
 * are retried with exponential backoff by cockatiel, `retries` times per call. Every vector is
 * returned scaled to unit length, so that cosine similarity is a dot product.
 */
export function createEmbeddingsClient(options: EmbeddingsClientOptions): EmbeddingsClient {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
  const host = new URL(url).hostname;
  const dispatcher: Dispatcher = createSkillDispatcher(
    { ...options.policy, allowlist: [...(options.policy.allowlist ?? []), host] },
    options.timeoutMs,
  );
  const maxBytes = options.maxResponseBytes ?? 16 * 2 ** 20;

  async function once(texts: string[]): Promise<Float32Array[]> {
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: 'POST',
        dispatcher,
        signal: AbortSignal.timeout(options.timeoutMs),
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: options.model, input: texts }),
      });
    } catch (err) {
      if (findSsrfBlockedError(err))
        throw new EmbeddingsError('embeddings endpoint refused by the SSRF policy', false);
      throw new EmbeddingsError(`embeddings endpoint unreachable: ${(err as Error).name}`, true);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes) {
          res.body.destroy();
          throw new EmbeddingsError(`embeddings answer larger than ${maxBytes} bytes`, false);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      if (err instanceof EmbeddingsError) throw err;
      throw new EmbeddingsError(`embeddings answer interrupted: ${(err as Error).name}`, true);
    }
    if (res.statusCode !== 200)
      throw new EmbeddingsError(
        `embeddings endpoint answered ${res.statusCode}`,
        res.statusCode === 429 || res.statusCode >= 500,
      );
    let parsed: z.infer<typeof EmbeddingsAnswer>;
    try {
      parsed = EmbeddingsAnswer.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    } catch {
      throw new EmbeddingsError('embeddings answer is not an embeddings list', false);
    }
    const vectors: (Float32Array | undefined)[] = new Array(texts.length);
    for (const item of parsed.data) {
      if (item.index >= texts.length)
        throw new EmbeddingsError('embeddings answer has an unknown index', false);
      vectors[item.index] = unitVector(item.embedding);
    }
    const out: Float32Array[] = [];
    for (const v of vectors) {
      if (!v) throw new EmbeddingsError('embeddings answer lacks an input', false);
      out.push(v);
    }
    return out;
  }

  return {
    model: options.model,
    async embed(texts, retries = 0) {
      if (texts.length === 0) return [];
      const policy = retry(
        handleWhen((err) => err instanceof EmbeddingsError && err.retryable),
        { maxAttempts: retries, backoff: new ExponentialBackoff({ initialDelay: 200, maxDelay: 5000 }) },
      );
      return policy.execute(() => once(texts));
    },
    close: () => dispatcher.close(),
  };
}

/**
 * A vector scaled to unit length, in single precision (as stored).
 * @throws EmbeddingsError for a zero or non-finite vector
 */
function unitVector(values: number[]): Float32Array {
  let norm = 0;
  for (const v of values) norm += v * v;
  norm = Math.sqrt(norm);
  if (!Number.isFinite(norm) || norm === 0)
    throw new EmbeddingsError('embeddings answer has a zero or non-finite vector', false);
  return Float32Array.from(values, (v) => v / norm);
}
