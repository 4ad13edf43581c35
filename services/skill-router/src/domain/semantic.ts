/**
 * Search by meaning (README, "Search by meaning"): the embeddings port, the text a skill is embedded
 * from, the similarity both rankers compute, and the task embeddings a route asks for once per
 * distinct task.
 */

import { LRUCache } from 'lru-cache';
import type { UnembeddedSkill } from '../data/skill-embeddings';

/** An OpenAI-compatible embeddings endpoint (adapters/embeddings.ts). */
export interface Embedder {
  /** The model named in every request (stored beside each skill's embedding). */
  readonly model: string;
  /**
   * One unit-length vector per text, in order.
   * @param retries retries of a retryable failure (timeout, network, 429, 5xx); 0 by default
   * @throws EmbeddingsError (adapters/embeddings.ts) when the endpoint fails
   */
  embed(texts: string[], retries?: number): Promise<Float32Array[]>;
}

/**
 * The share of `capability_match` that meaning takes when a route has the task's embedding and the
 * skill has one: `capability_match = 0.6 · max(0, similarity) + 0.4 · lexical` (README, "Search by
 * meaning"). Skills without an embedding keep the lexical value alone.
 */
export const SEMANTIC_SHARE = 0.6;

/** Longest text embedded for a skill, in UTF-16 code units (name, capabilities and description fit). */
const SKILL_TEXT_MAX = 6000;

/** What a skill is embedded from: its name, capabilities and description, one per line. */
export function skillText(skill: { name: string; capabilities: string[]; description: string }): string {
  return `${skill.name}\n${skill.capabilities.join(', ')}\n${skill.description}`.slice(0, SKILL_TEXT_MAX);
}

/**
 * The cosine similarity of two unit vectors: their dot product, summed in index order in double
 * precision (the SQL ranking sums the same products in the same order, so both agree to the bit).
 * @returns `NaN` when the lengths differ (another model's vector: no similarity)
 */
export function similarity(skill: Float32Array | readonly number[], task: Float64Array): number {
  if (skill.length !== task.length) return NaN;
  let sum = 0;
  for (let i = 0; i < task.length; i++) sum += (skill[i] as number) * (task[i] as number);
  return sum;
}

/** How a route uses meaning: the task's embedding and the threshold of a match by meaning alone. */
export interface SemanticQuery {
  /** The task's unit embedding, in double precision. */
  vector: Float64Array;
  /** The task text (it identifies the vector in the routing index's answer cache). */
  key: string;
  /** Cosine similarity (0..1) from which a skill that shares no lexeme with the task matches it. */
  minSimilarity: number;
}

/** Settings of {@link TaskEmbeddings}. */
export interface TaskEmbeddingsOptions {
  /** Distinct task texts remembered (0: none). */
  cacheEntries: number;
  minSimilarity: number;
  /** A route's embedding request failed (or was skipped after a failure): the route is ranked by words alone. */
  onFallback?(err: unknown): void;
  /** After a failed request, how long routes skip the endpoint, in ms (default 5,000). */
  coolDownMs?: number;
}

/**
 * The task embeddings of routes: one embeddings request per distinct task text (no retry: a route
 * waits for one attempt at most `EMBEDDINGS_TIMEOUT_MS`), remembered in an LRU of
 * `cacheEntries` texts. A failed request yields `undefined`, so the route is ranked by words alone
 * (counted in `skill_route_embedding_fallbacks_total`), and is not remembered; for `coolDownMs`
 * after it, routes of tasks not remembered skip the endpoint (so an endpoint that hangs costs one
 * route its timeout, not every route).
 */
export class TaskEmbeddings {
  private readonly cache: LRUCache<string, Float64Array> | undefined;
  /** Requests in flight by task, so that concurrent routes of one task send one request. */
  private readonly inFlight = new Map<string, Promise<Float64Array | undefined>>();
  /** Until when (epoch ms) routes skip the endpoint after a failure. */
  private skipUntil = 0;

  constructor(
    private readonly embedder: Embedder,
    private readonly options: TaskEmbeddingsOptions,
  ) {
    this.cache =
      options.cacheEntries > 0
        ? new LRUCache({
            max: options.cacheEntries,
            // A vector of 1,536 doubles is 12 KiB: bound the bytes too (64 MiB at most).
            maxSize: 64 * 2 ** 20,
            sizeCalculation: (v, k) => v.byteLength + 2 * k.length + 100,
          })
        : undefined;
  }

  /** The semantic part of a route for `task`, or `undefined` when the endpoint failed. */
  async query(task: string): Promise<SemanticQuery | undefined> {
    const vector = await this.vector(task);
    return vector && { vector, key: task, minSimilarity: this.options.minSimilarity };
  }

  private vector(task: string): Promise<Float64Array | undefined> {
    const known = this.cache?.get(task);
    if (known) return Promise.resolve(known);
    const pending = this.inFlight.get(task);
    if (pending) return pending;
    if (Date.now() < this.skipUntil) {
      this.options.onFallback?.(new Error('embeddings endpoint failed recently'));
      return Promise.resolve(undefined);
    }
    const request = this.embedder
      .embed([task])
      .then(([v]) => {
        if (!v) return undefined;
        const vector = Float64Array.from(v);
        this.cache?.set(task, vector);
        return vector;
      })
      .catch((err: unknown) => {
        this.skipUntil = Date.now() + (this.options.coolDownMs ?? 5000);
        this.options.onFallback?.(err);
        return undefined;
      })
      .finally(() => this.inFlight.delete(task));
    this.inFlight.set(task, request);
    return request;
  }
}

/** What {@link embedVerifiedSkills} reads and writes (data/skill-embeddings.ts). */
export interface EmbeddingStore {
  unembedded(model: string, limit: number): Promise<UnembeddedSkill[]>;
  store(skillId: string, revision: number, model: string, vector: Float32Array): Promise<boolean>;
}

/**
 * One round of the embeddings worker (README, "Search by meaning"): embeds up to `batch` verified
 * skills whose current revision has no embedding of the configured model, in one request (retried
 * twice on timeouts, network errors, 429 and 5xx), and stores each vector bound to its revision (an
 * update meanwhile discards it).
 * @returns how many skills were read (a full batch means more may wait)
 * @throws EmbeddingsError when the endpoint fails (the loop backs off), whatever PostgreSQL throws
 */
export async function embedVerifiedSkills(
  store: EmbeddingStore,
  embedder: Embedder,
  batch = 32,
): Promise<number> {
  const skills = await store.unembedded(embedder.model, batch);
  if (skills.length === 0) return 0;
  const vectors = await embedder.embed(skills.map(skillText), 2);
  for (const [i, skill] of skills.entries()) {
    const vector = vectors[i];
    if (vector) await store.store(skill.skillId, skill.revision, embedder.model, vector);
  }
  return skills.length;
}
