import { createLlmClient, createSearxngProvider } from '@repo/llm';
import {
  startFakeSearxng,
  startScriptedLlm,
  type FakeSearxng,
  type ScriptedLlm,
  type ScriptedRespond,
} from '@repo/llm/testing';
import { createLogger } from '@repo/service-kit';
import type { PipelineDeps } from '../../src/domain/pipelines';

/** A scripted LLM, a fake SearXNG and the pipeline deps wired to them. */
export interface Upstreams {
  llm: ScriptedLlm;
  searx: FakeSearxng;
  deps: PipelineDeps;
  /** The same deps without a search provider. */
  depsWithoutSearch: PipelineDeps;
  close(): Promise<void>;
}

/** Starts the stand-ins for the outside services (each on its own free port). */
export async function startUpstreams(respond: ScriptedRespond): Promise<Upstreams> {
  const llm = await startScriptedLlm({ respond });
  const searx = await startFakeSearxng();
  const logger = createLogger({ name: 'pipeline-test', level: 'silent' });
  const client = createLlmClient({
    baseUrl: llm.baseUrl,
    model: 'scripted-model',
    maxRetries: 0,
    timeoutMs: 5000,
  });
  const now = () => new Date('2026-11-22T04:00:00.000Z');
  const deps: PipelineDeps = {
    llm: client,
    search: createSearxngProvider({ baseUrl: searx.baseUrl, timeoutMs: 2000 }),
    logger,
    now,
  };
  return {
    llm,
    searx,
    deps,
    depsWithoutSearch: { ...deps, search: null },
    close: async () => {
      await llm.close();
      await searx.close();
    },
  };
}
