/**
 * Pipeline step throughput without the broker: JOBS prove and forge jobs (half each) run concurrently
 * (CONCURRENCY at a time) against the scripted OpenAI-compatible server and a fake SearXNG, each
 * step's state passed through JSON and its schema as in production. Prints steps per second, LLM
 * calls per second and the step latency percentiles, i.e. the runner's own cost per step (prompt
 * building, JSON schema, HTTP to the LLM, validation) with an instant LLM.
 *
 *   pnpm --filter @repo/pipeline-runner bench            # JOBS=200 CONCURRENCY=16
 *   JOBS=1000 CONCURRENCY=64 pnpm --filter @repo/pipeline-runner bench
 */
import { createLlmClient, createSearxngProvider } from '@repo/llm';
import { startFakeSearxng, startScriptedLlm } from '@repo/llm/testing';
import { createLogger } from '@repo/service-kit';
import { pipelines, type Pipeline, type PipelineDeps } from '../src/domain/pipelines';
import {
  forgeJobInput,
  proveJobInput,
  scenarioMarker,
  scriptedPipelineResponder,
} from '@repo/compute/testing';

const JOBS = Number(process.env.JOBS ?? 200);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const SCENARIOS = ['approved', 'conditional', 'rejected', 'pivot_out'] as const;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  // One scripted server for every job: a prove job's outcome is named by the marker in its idea.
  const llm = await startScriptedLlm({ respond: scriptedPipelineResponder() });
  const searx = await startFakeSearxng();
  const deps: PipelineDeps = {
    llm: createLlmClient({ baseUrl: llm.baseUrl, model: 'scripted-model', maxRetries: 0 }),
    search: createSearxngProvider({ baseUrl: searx.baseUrl }),
    logger: createLogger({ name: 'bench', level: 'silent' }),
    now: () => new Date(),
  };
  const latencies: number[] = [];
  let steps = 0;

  async function runJob<I, S, R>(pipeline: Pipeline<I, S, R>, input: I): Promise<void> {
    let state = pipeline.init(input);
    for (;;) {
      const started = performance.now();
      const outcome = await pipeline.step(input, state, deps);
      latencies.push(performance.now() - started);
      steps += 1;
      if (outcome.kind === 'done') {
        pipeline.result.parse(outcome.result);
        return;
      }
      state = pipeline.state.parse(JSON.parse(JSON.stringify(outcome.state)));
    }
  }

  const queue = Array.from({ length: JOBS }, (_, i) => i);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, JOBS) }, async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        if (i % 2 === 0) await runJob(pipelines.forge, forgeJobInput());
        else {
          const scenario = SCENARIOS[(i >> 1) % SCENARIOS.length]!;
          await runJob(
            pipelines.prove,
            proveJobInput({
              idea: `A clinic scheduling assistant (${scenarioMarker(scenario)}) for dentists.`,
            }),
          );
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const rss = process.memoryUsage().rss / 1024 / 1024;
  console.log(
    JSON.stringify(
      {
        jobs: JOBS,
        concurrency: CONCURRENCY,
        seconds: Number(seconds.toFixed(2)),
        steps,
        stepsPerSecond: Number((steps / seconds).toFixed(1)),
        llmCallsPerSecond: Number((llm.calls.length / seconds).toFixed(1)),
        searches: searx.queries.length,
        stepLatencyMs: {
          p50: Number(percentile(latencies, 50).toFixed(2)),
          p99: Number(percentile(latencies, 99).toFixed(2)),
          max: Number((latencies.at(-1) ?? 0).toFixed(2)),
        },
        rssMiB: Math.round(rss),
      },
      null,
      2,
    ),
  );
  await llm.close();
  await searx.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
